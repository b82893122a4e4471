"""Signature checks in a helper process, so a large batch's checks overlap its storage work.

Ed25519 verification is most of ingest's CPU time; a thread pool does not help (the Python
around each check holds the GIL), so a separate process verifies while this one parses and
writes SQLite.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import threading
from concurrent.futures import Future, ProcessPoolExecutor

from core.identity import verify

Triple = tuple[bytes, bytes, bytes]  # (public key, signed bytes, signature)
_pool: ProcessPoolExecutor | None = None
_lock = threading.Lock()


def verify_all(triples: list[Triple]) -> list[bool]:
    return [verify(key, message, sig) for key, message, sig in triples]


def _executor() -> ProcessPoolExecutor | None:
    global _pool
    if (os.cpu_count() or 1) < 2 or os.environ.get("HEARTH_VERIFY_PROCESSES") == "0":
        return None
    with _lock:
        if _pool is None:
            # spawn, not fork: the caller may be a Node with threads and an event loop.
            _pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
            atexit.register(shutdown)
        return _pool


def submit(triples: list[Triple]) -> Future[list[bool]] | None:
    """Verify `triples` in the helper process; None when there is no second core to use."""
    pool = _executor()
    return pool.submit(verify_all, triples) if pool is not None else None


def shutdown() -> None:
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)
