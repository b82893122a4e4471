"""Signature checks in a helper process, so a large batch's checks overlap its storage work.

Ed25519 verification is most of ingest's CPU time, and a thread pool does not help (the Python
around each check holds the GIL). A multiprocessing pool would re-import the caller's main
module in the child, so the helper is a plain subprocess (`python -m storage._verify_worker`) spoken
to over its stdin/stdout with length-prefixed CBOR: a request is a list of
[public key, signed bytes, signature], the answer one byte per item (1 = valid).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import struct
import subprocess
import sys
import threading
from concurrent.futures import Future

import cbor2

from core.identity import verify

log = logging.getLogger(__name__)

Triple = tuple[bytes, bytes, bytes]  # (public key, signed bytes, signature)
MAX_MESSAGE = 64 << 20
_LENGTH = struct.Struct(">I")
CLOSE_TIMEOUT_S = 5.0


def verify_all(triples: list[Triple]) -> list[bool]:
    return [verify(key, message, sig) for key, message, sig in triples]


def _read_message(stream) -> bytes | None:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    if size > MAX_MESSAGE:
        raise ValueError(f"message of {size} bytes is too large")
    data = stream.read(size)
    if len(data) < size:
        return None
    return data


def _write_message(stream, data: bytes) -> None:
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def worker_main() -> int:
    """The helper's loop: read requests from stdin until it closes, answer on stdout."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while (data := _read_message(stdin)) is not None:
        triples = cbor2.loads(data)
        _write_message(stdout, bytes(verify_all([tuple(t) for t in triples])))
    return 0


class _Helper:
    """One helper process; requests are answered in the order they were sent."""

    def __init__(self) -> None:
        if getattr(sys, "frozen", False):  # a packaged app runs itself in helper mode
            command = [sys.executable, "--verify-worker"]
        else:
            command = [sys.executable, "-m", "storage._verify_worker"]
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [root, *filter(None, [os.environ.get("PYTHONPATH")])])}
        self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      env=env, cwd=root)
        self._requests: queue.Queue[tuple[bytes, Future] | None] = queue.Queue()
        self._pending: queue.Queue[Future] = queue.Queue()
        self._writer = threading.Thread(target=self._write_loop, daemon=True,
                                        name="hearth-verify-writer")
        self._reader = threading.Thread(target=self._read_loop, daemon=True,
                                        name="hearth-verify-reader")
        self._writer.start()
        self._reader.start()

    def submit(self, triples: list[Triple]) -> Future[list[bool]]:
        future: Future[list[bool]] = Future()
        self._requests.put((cbor2.dumps([list(t) for t in triples]), future))
        return future

    def _write_loop(self) -> None:
        while (request := self._requests.get()) is not None:
            data, future = request
            self._pending.put(future)
            try:
                _write_message(self._proc.stdin, data)
            except (OSError, ValueError) as exc:
                self._fail(exc)
                return

    def _read_loop(self) -> None:
        try:
            while (answer := _read_message(self._proc.stdout)) is not None:
                self._pending.get().set_result([b == 1 for b in answer])
        except (OSError, ValueError) as exc:
            self._fail(exc)
            return
        self._fail(OSError("the signature helper exited"))

    def _fail(self, exc: BaseException) -> None:
        while True:
            try:
                future = self._pending.get_nowait()
            except queue.Empty:
                break
            if not future.done():
                future.set_exception(exc)

    def close(self) -> None:
        self._requests.put(None)
        with contextlib.suppress(OSError):
            self._proc.stdin.close()
        try:
            self._proc.wait(CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._writer.join(CLOSE_TIMEOUT_S)
        self._reader.join(CLOSE_TIMEOUT_S)


_helper: _Helper | None = None
_lock = threading.Lock()


def submit(triples: list[Triple]) -> Future[list[bool]] | None:
    """Verify `triples` in the helper process; None when there is no second core to use."""
    global _helper
    if (os.cpu_count() or 1) < 2 or os.environ.get("HEARTH_VERIFY_PROCESSES") == "0":
        return None
    with _lock:
        if _helper is None:
            try:
                _helper = _Helper()
            except OSError as exc:
                log.warning("cannot start the signature helper (%s); verifying here", exc)
                return None
            atexit.register(shutdown)
        return _helper.submit(triples)


def start_helper() -> None:
    """Start the helper now rather than at the first large batch (a long-running node)."""
    submit([])


def shutdown() -> None:
    """Stop the helper (idempotent); a later submit starts a new one."""
    global _helper
    with _lock:
        helper, _helper = _helper, None
    if helper is not None:
        helper.close()

