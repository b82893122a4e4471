"""Reading one upload for the collector: bounded gzip inflation and line-by-line checks, no I/O."""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from datetime import datetime

from .events import EventError, validate

_GZIP_WBITS = 16 + zlib.MAX_WBITS
# How much one zlib call may produce: keeps the peak memory near the limit, whatever the input.
_INFLATE_STEP = 64 * 1024
_MAX_REASON = 300
_PID = re.compile(r"[0-9a-f]{32}")


class BatchError(ValueError):
    """A request the collector refuses; `status` is the HTTP status to answer with."""

    def __init__(self, reason: str, status: int = 400):
        reason = " ".join(reason.split())[:_MAX_REASON]
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass(frozen=True, slots=True)
class Accepted:
    """One valid event: its UTC day (the partition), its pid and its canonical JSON line."""

    day: str
    pid: str
    line: str


class Plain:
    """Collects an uncompressed body of at most `limit` bytes."""

    def __init__(self, limit: int):
        self._limit = limit
        self._out = bytearray()

    def feed(self, data: bytes) -> None:
        self._out += data
        if len(self._out) > self._limit:
            raise BatchError(f"the body is larger than {self._limit} bytes", 413)

    def finish(self) -> bytes:
        return bytes(self._out)


class Inflater:
    """Inflates a gzip body fed in pieces, refusing to produce more than `limit` bytes."""

    def __init__(self, limit: int):
        self._limit = limit
        self._out = bytearray()
        self._z = zlib.decompressobj(_GZIP_WBITS)

    def feed(self, data: bytes) -> None:
        while True:
            if self._z.eof and data:  # RFC 1952 allows several members one after another
                self._z = zlib.decompressobj(_GZIP_WBITS)
            room = min(self._limit - len(self._out) + 1, _INFLATE_STEP)
            try:
                piece = self._z.decompress(data, room)
            except zlib.error as exc:
                raise BatchError(f"the body is not valid gzip ({exc})") from None
            self._out += piece
            if len(self._out) > self._limit:
                raise BatchError(f"the batch inflates to more than {self._limit} bytes", 413)
            data = self._z.unused_data if self._z.eof else self._z.unconsumed_tail
            if not data and len(piece) < room:
                return

    def finish(self) -> bytes:
        if not self._z.eof:
            raise BatchError("the gzip body is truncated")
        return bytes(self._out)


def canonical(event: dict) -> str:
    return json.dumps(event, sort_keys=True, separators=(",", ":"))


def parse_batch(data: bytes, max_lines: int, max_line_bytes: int) -> list[Accepted]:
    """Every line of an inflated batch, checked; raises BatchError naming the first bad line."""
    if data.endswith(b"\n"):
        data = data[:-1]
    if not data.strip():
        raise BatchError("the batch is empty")
    lines = data.split(b"\n", max_lines)  # at most max_lines + 1 pieces, however many there are
    if len(lines) > max_lines:
        raise BatchError(f"the batch has more than {max_lines} lines")
    return [_parse_line(n, raw, max_line_bytes) for n, raw in enumerate(lines, 1)]


def _parse_line(n: int, raw: bytes, max_line_bytes: int) -> Accepted:
    raw = raw.removesuffix(b"\r")
    if not raw.strip():
        raise BatchError(f"line {n} is blank")
    if len(raw) > max_line_bytes:
        raise BatchError(f"line {n} is longer than {max_line_bytes} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BatchError(f"line {n} is not UTF-8") from None
    try:
        event = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except ValueError as exc:
        raise BatchError(f"line {n} is not JSON: {exc}") from None
    try:
        validate(event)
    except EventError as exc:
        raise BatchError(f"line {n}: {exc}") from None
    try:
        day = datetime.strptime(event["ts"], "%Y-%m-%dT%H:%M:%SZ").date().isoformat()
    except ValueError:
        raise BatchError(f"line {n}: ts: {event['ts']!r} is not a real hour") from None
    return Accepted(day, event["pid"], canonical(event))


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    event = dict(pairs)
    if len(event) != len(pairs):
        raise ValueError("a key appears twice")
    return event


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def parse_deletion(data: bytes, max_pids: int) -> set[str]:
    """The pids of a `{"pids": [...]}` deletion request; raises BatchError with the reason."""
    try:
        request = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BatchError('the body must be JSON: {"pids": ["<32 hex digits>", ...]}') from None
    if not isinstance(request, dict) or set(request) != {"pids"}:
        raise BatchError('the body must be an object with exactly one field, "pids"')
    pids = request["pids"]
    if not isinstance(pids, list) or not pids:
        raise BatchError("pids must be a non-empty list")
    if len(pids) > max_pids:
        raise BatchError(f"at most {max_pids} pids per request")
    for i, pid in enumerate(pids):
        if not is_pid(pid):
            raise BatchError(f"pids[{i}] is not 32 lowercase hex digits")
    return set(pids)


def is_pid(value: object) -> bool:
    return isinstance(value, str) and _PID.fullmatch(value) is not None
