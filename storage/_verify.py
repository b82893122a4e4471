"""Object checks in helper processes, one per core, so a large batch's checks overlap each
other and its storage work.

Ed25519 verification is most of ingest's CPU time, and a thread pool does not help (the Python
around each check holds the GIL). A multiprocessing pool would re-import the caller's main
module in the child, so each helper is a plain subprocess (`python -m storage._verify_worker`)
spoken to over its stdin/stdout with length-prefixed CBOR. A request is a list of raw objects;
the helper runs every validity check on each (core.objects.signed_part, then the signature's)
and answers one byte per object, 1 when it is valid. Only that verdict crosses back: the caller
decodes a valid object again (a plain CBOR decode, the cheap part) and checks anything else
itself, so a helper's answer can only ever let through what it checked.
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
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass

import cbor2

from core.errors import InvalidObject
from core.identity import verify
from core.objects import Object, signed_part

log = logging.getLogger(__name__)

MAX_MESSAGE = 64 << 20
PARALLEL_MIN = 512  # below this, a helper process costs more than it saves
SUB_FIRST = 50  # objects in the first message to a helper: small, so storing starts soon
SUB_BATCH = 250  # at most this many objects per message to a helper (sizes double up to it)
_LENGTH = struct.Struct(">I")
CLOSE_TIMEOUT_S = 5.0
# The helpers run ahead of whoever stores their verdicts: on a busy machine, the CPU goes to
# the one thread that stores (and to the window) first, and the helpers take what is left.
HELPER_NICENESS = 10


def end_process(proc: subprocess.Popen) -> None:
    """Close a helper's stdin (its cue to end), and wait for it, killing it after
    CLOSE_TIMEOUT_S."""
    with contextlib.suppress(OSError):
        if proc.stdin is not None:
            proc.stdin.close()
    try:
        proc.wait(CLOSE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def check_all(raws: list[bytes]) -> bytes:
    """One byte per raw object: 1 when every check passes, the signature's too."""
    out = bytearray(len(raws))
    for n, raw in enumerate(raws):
        try:
            author, unsigned, sig = signed_part(raw)
        except InvalidObject:
            continue
        out[n] = verify(author, unsigned, sig)
    return bytes(out)


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
    with contextlib.suppress(AttributeError, OSError):  # no os.nice on Windows
        os.nice(HELPER_NICENESS)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while (data := _read_message(stdin)) is not None:
        _write_message(stdout, check_all(cbor2.loads(data)))
    return 0


class _Process:
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

    def submit(self, raws: list[bytes]) -> Future[bytes]:
        future: Future[bytes] = Future()
        self._requests.put((cbor2.dumps(raws), future))
        return future

    def _write_loop(self) -> None:
        failed: BaseException | None = None
        while (request := self._requests.get()) is not None:
            data, future = request
            if failed is not None:  # the helper is gone: later requests fail, never wait
                future.set_exception(failed)
                continue
            self._pending.put(future)
            try:
                _write_message(self._proc.stdin, data)
            except (OSError, ValueError) as exc:
                failed = exc
                self._fail(exc)

    def _read_loop(self) -> None:
        try:
            while (answer := _read_message(self._proc.stdout)) is not None:
                self._pending.get().set_result(answer)
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
        end_process(self._proc)
        self._writer.join(CLOSE_TIMEOUT_S)
        self._reader.join(CLOSE_TIMEOUT_S)


class _Helper:
    """The helper processes: requests go to each in turn, so consecutive ones run at once."""

    def __init__(self) -> None:
        self._processes: list[_Process] = []
        try:
            for _ in range(max(1, processes())):
                self._processes.append(_Process())
        except BaseException:
            self.close()
            raise
        self._next = 0

    def submit(self, raws: list[bytes]) -> Future[bytes]:
        process = self._processes[self._next]
        self._next = (self._next + 1) % len(self._processes)
        return process.submit(raws)

    def close(self) -> None:
        for process in self._processes:
            process.close()


_helper: _Helper | None = None
_lock = threading.Lock()


def processes() -> int:
    """How many helper processes to run: HEARTH_VERIFY_PROCESSES, or one per core; none on a
    single core (there the helpers would only take turns with the caller)."""
    cores = os.cpu_count() or 1
    setting = os.environ.get("HEARTH_VERIFY_PROCESSES", "")
    if setting.isdigit():
        return int(setting)
    return cores if cores >= 2 else 0


def submit(raws: list[bytes]) -> Future[bytes] | None:
    """Check `raws` in a helper process: a future of one byte per object, 1 when valid; None
    when there are no helpers to use (the caller checks them itself)."""
    global _helper
    if processes() == 0:
        return None
    with _lock:
        if _helper is None:
            try:
                _helper = _Helper()
            except OSError as exc:
                log.warning("cannot start the signature helpers (%s); verifying here", exc)
                return None
            atexit.register(shutdown)
        future = _helper.submit(raws)
        future.hearth_helpers = _helper  # type: ignore[attr-defined] # which ones: see shutdown
        return future


@dataclass(frozen=True)
class Checking:
    """Raw objects on their way through the helpers: consecutive sub-batches, each with the
    future of its verdicts, or None where the one who stores them checks them."""

    raws: list[bytes]
    subs: list[range]
    futures: list[Future[bytes] | None]
    # Objects this process just built and signed itself (Replica.ingest_own): taken as they
    # are, neither decoded nor verified again. Never set for anything that came from outside.
    own: Sequence[Object] | None = None


def _sub_batches(count: int, first: int) -> list[range]:
    """Consecutive ranges of `count` objects, `first` first, each twice the one before, at
    most SUB_BATCH: whoever stores them waits only for a small first answer, and the helpers
    stay ahead."""
    subs, start, size = [], 0, first
    while start < count:
        subs.append(range(start, min(start + size, count)))
        start, size = start + size, min(2 * size, SUB_BATCH)
    return subs


def start(raws: list[bytes], *, ahead: bool = False) -> Checking:
    """Begin checking `raws` in the helpers. Batches below PARALLEL_MIN are left to the one
    who stores them, unless they are checked `ahead` (received now, stored later: then every
    sub-batch is full size and goes to the helpers whatever the batch's size)."""
    subs = _sub_batches(len(raws), SUB_BATCH if ahead else SUB_FIRST)
    futures: list[Future[bytes] | None] = [None] * len(subs)
    if ahead or len(raws) >= PARALLEL_MIN:
        for k, sub in enumerate(subs):
            futures[k] = submit(raws[sub.start:sub.stop])
            if futures[k] is None:  # no helpers here
                futures = [None] * len(subs)
                break
    return Checking(raws, subs, futures)


def own(objects: Sequence[Object]) -> Checking:
    """Objects built and signed here (core.objects.build) a moment ago, as a Checking that
    needs no helper: storage takes them as valid (Replica.ingest_own)."""
    subs = _sub_batches(len(objects), SUB_BATCH)
    return Checking([obj.raw for obj in objects], subs, [None] * len(subs), objects)


def start_helper() -> None:
    """Start the helpers now rather than at the first large batch (a long-running node)."""
    submit([])


def shutdown(failed: Future | None = None) -> None:
    """Stop the helpers (idempotent); a later submit starts new ones. With `failed`, a future
    whose helper failed: only if the helpers that took it are still the ones running (a late
    failure from helpers already replaced must not stop their successors)."""
    global _helper
    with _lock:
        if failed is not None and getattr(failed, "hearth_helpers", None) is not _helper:
            return
        helper, _helper = _helper, None
    if helper is not None:
        helper.close()
