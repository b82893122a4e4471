"""Reading one upload for the collector: bounded gzip inflation and line-by-line checks, no I/O."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, date, datetime

from .events import SCHEMA_VERSIONS, EventError, is_pid, is_token, pid_of_token, validate

__all__ = ["DELETION_FORMAT", "Accepted", "BatchError", "Inflater", "Plain", "is_day", "is_pid",
           "parse_batch", "parse_deletion"]

_GZIP_WBITS = 16 + zlib.MAX_WBITS
# How much one zlib call may produce: keeps the peak memory near the limit, whatever the input.
_INFLATE_STEP = 64 * 1024
_MAX_REASON = 300
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TS_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
DELETION_FORMAT = '{"tokens": [{"day": "YYYY-MM-DD", "token": "<64 hex digits>"}, ...]}'


class BatchError(ValueError):
    """A request the collector refuses; `status` is the HTTP status to answer with."""

    def __init__(self, reason: str, status: int = 400, *, retry_after: int | None = None):
        reason = " ".join(reason.split())[:_MAX_REASON]
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retry_after = retry_after  # seconds, for a Retry-After header


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

    @property
    def size(self) -> int:
        return len(self._out)

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

    @property
    def size(self) -> int:
        return len(self._out)

    def finish(self) -> bytes:
        if not self._z.eof:
            raise BatchError("the gzip body is truncated")
        return bytes(self._out)


def canonical(event: dict) -> str:
    return json.dumps(event, sort_keys=True, separators=(",", ":"))


def parse_batch(data: bytes, max_lines: int, max_line_bytes: int, *, earliest: datetime,
                latest: datetime, max_days: int,
                versions: Collection[int] = SCHEMA_VERSIONS) -> list[Accepted]:
    """Every line of an inflated batch, checked; raises BatchError naming the first bad line.

    An event's time must lie in [earliest, latest] (aware UTC datetimes), its schema one of
    `versions`, and the batch may span at most `max_days` UTC days (one file each): more is
    413, so a shipper sends fewer.
    """
    if data.endswith(b"\n"):
        data = data[:-1]
    if not data.strip():
        raise BatchError("the batch is empty")
    lines = data.split(b"\n", max_lines)  # at most max_lines + 1 pieces, however many there are
    if len(lines) > max_lines:
        raise BatchError(f"the batch has more than {max_lines} lines")
    window = f"{earliest:{_TS_FORMAT}} to {latest:{_TS_FORMAT}}"
    events, days = [], set()
    for n, raw in enumerate(lines, 1):
        event, ts = _parse_line(n, raw, max_line_bytes, versions)
        if not earliest <= ts <= latest:
            raise BatchError(f"line {n}: ts {event['ts']} is outside the accepted window "
                             f"({window})")
        day = ts.date().isoformat()
        if day not in days:
            days.add(day)
            if len(days) > max_days:
                raise BatchError(f"line {n}: the batch spans more than {max_days} days;"
                                 " send fewer events at a time", 413)
        events.append(Accepted(day, event["pid"], canonical(event)))
    return events


def _parse_line(n: int, raw: bytes, max_line_bytes: int,
                versions: Collection[int]) -> tuple[dict, datetime]:
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
        validate(event, versions)
    except EventError as exc:
        raise BatchError(f"line {n}: {exc}") from None
    try:
        ts = datetime.strptime(event["ts"], _TS_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise BatchError(f"line {n}: ts: {event['ts']!r} is not a real hour") from None
    return event, ts


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    event = dict(pairs)
    if len(event) != len(pairs):
        raise ValueError("a key appears twice")
    return event


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def parse_deletion(data: bytes, max_tokens: int) -> dict[str, set[str]]:
    """The pids to forget, by UTC day, of a deletion request (DELETION_FORMAT): each token is
    hashed to its pid, so only the install that made a pid can name it. Raises BatchError."""
    try:
        request = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BatchError(f"the body must be JSON: {DELETION_FORMAT}") from None
    if not isinstance(request, dict) or set(request) != {"tokens"}:
        raise BatchError('the body must be an object with exactly one field, "tokens" '
                         "(deletion by pid is not accepted: send the install's tokens)")
    tokens = request["tokens"]
    if not isinstance(tokens, list) or not tokens:
        raise BatchError("tokens must be a non-empty list")
    if len(tokens) > max_tokens:
        raise BatchError(f"at most {max_tokens} tokens per request")
    by_day: dict[str, set[str]] = {}
    for i, item in enumerate(tokens):
        if not isinstance(item, dict) or set(item) != {"day", "token"}:
            raise BatchError(f'tokens[{i}] must be an object with exactly "day" and "token"')
        day, token = item["day"], item["token"]
        if not is_day(day):
            raise BatchError(f"tokens[{i}].day is not a YYYY-MM-DD date")
        if not is_token(token):
            raise BatchError(f"tokens[{i}].token is not 64 lowercase hex digits")
        by_day.setdefault(day, set()).add(pid_of_token(token))
    return by_day


def is_day(value: object) -> bool:
    if not isinstance(value, str) or _DAY.fullmatch(value) is None:
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True
