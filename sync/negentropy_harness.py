"""Line-protocol harness for negentropy cross-implementation tests (``python -m ...``).

Speaks the protocol of hoytech/negentropy's test harnesses (``test/cpp/harness.cpp``), so the
reference ``test/fuzz.pl`` can drive it. One command per input line:

- ``item,<timestamp>,<hex id>``: add an item (before ``seal``)
- ``seal``: seal the items and create the protocol instance
- ``initiate``: become the client; prints ``msg,<hex>``
- ``msg,<hex>``: process a peer message. As the server, prints ``msg,<hex>``; as the client,
  prints ``have,<hex id>`` and ``need,<hex id>`` lines, then ``msg,<hex>`` or ``done``.

The frame size limit comes from the environment variable ``FRAMESIZELIMIT`` (unset or 0:
none). A bad line ends the program with one line on stderr and exit status 1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TextIO

from sync.negentropy import (
    MAX_TIMESTAMP,
    MIN_FRAME_SIZE_LIMIT,
    Negentropy,
    NegentropyError,
    VectorStorage,
)

FRAME_SIZE_LIMIT_ENV = "FRAMESIZELIMIT"
EXIT_OK = 0
EXIT_ERROR = 1


class HarnessError(Exception):
    """A command the harness cannot carry out."""


class Harness:
    """The harness state machine: feed it lines, it returns output lines."""

    def __init__(self, frame_size_limit: int = 0) -> None:
        self._frame_size_limit = frame_size_limit
        self._storage = VectorStorage()
        self._negentropy: Negentropy | None = None

    def handle(self, line: str) -> list[str]:
        """Carry out one input line; returns the lines to print."""
        fields = line.split(",")
        command = fields[0]
        if command == "item":
            self._item(fields)
            return []
        if command == "seal":
            self._seal()
            return []
        if command == "initiate":
            message = self._require_sealed().initiate()
            return [self._render(message)]
        if command == "msg":
            return self._message(fields)
        raise HarnessError(f"unknown command: {command!r}")

    def _item(self, fields: list[str]) -> None:
        if len(fields) != 3:
            raise HarnessError("item needs 3 fields: item,<timestamp>,<hex id>")
        if self._negentropy is not None:
            raise HarnessError("item after seal")
        timestamp = _parse_int(fields[1], "timestamp")
        if timestamp >= MAX_TIMESTAMP:
            raise HarnessError(f"timestamp out of range: {timestamp}")
        self._storage.insert(timestamp, _parse_hex(fields[2], "id"))

    def _seal(self) -> None:
        if self._negentropy is not None:
            raise HarnessError("already sealed")
        self._storage.seal()
        self._negentropy = Negentropy(self._storage, self._frame_size_limit)

    def _message(self, fields: list[str]) -> list[str]:
        negentropy = self._require_sealed()
        data = _parse_hex(fields[1], "message") if len(fields) >= 2 else b""
        if not negentropy.is_initiator:
            return [self._render(negentropy.reconcile_server(data))]
        step = negentropy.reconcile_client(data)
        lines = [f"have,{item_id.hex()}" for item_id in step.have]
        lines += [f"need,{item_id.hex()}" for item_id in step.need]
        lines.append("done" if step.next_message is None else self._render(step.next_message))
        return lines

    def _render(self, message: bytes) -> str:
        if self._frame_size_limit and len(message) > self._frame_size_limit:
            raise HarnessError(
                f"frame size limit exceeded: {len(message)} > {self._frame_size_limit}"
            )
        return f"msg,{message.hex()}"

    def _require_sealed(self) -> Negentropy:
        if self._negentropy is None:
            raise HarnessError("not sealed")
        return self._negentropy


def _parse_int(text: str, what: str) -> int:
    if not text.strip().isdigit():
        raise HarnessError(f"bad {what}: {text!r}")
    return int(text)


def _parse_hex(text: str, what: str) -> bytes:
    try:
        return bytes.fromhex(text.strip())
    except ValueError:
        raise HarnessError(f"bad hex {what}: {text[:80]!r}") from None


def run(lines: Iterable[str], out: TextIO, frame_size_limit: int = 0) -> None:
    """Process input lines, writing (and flushing) the output of each."""
    harness = Harness(frame_size_limit)
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line:
            continue
        try:
            output = harness.handle(line)
        except (HarnessError, NegentropyError, ValueError, RuntimeError) as exc:
            raise HarnessError(f"line {number}: {exc}") from exc
        if output:
            out.write("\n".join(output) + "\n")
            out.flush()


def main() -> int:
    """Entry point: stdin to stdout; errors as one line on stderr."""
    try:
        limit = _parse_int(os.environ.get(FRAME_SIZE_LIMIT_ENV) or "0", FRAME_SIZE_LIMIT_ENV)
        if 0 < limit < MIN_FRAME_SIZE_LIMIT:
            raise HarnessError(
                f"{FRAME_SIZE_LIMIT_ENV} must be 0 or at least {MIN_FRAME_SIZE_LIMIT}"
            )
        run(sys.stdin, sys.stdout, limit)
    except (HarnessError, ValueError) as exc:
        print(f"negentropy_harness: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
