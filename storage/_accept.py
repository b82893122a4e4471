"""Accepting a batch (Replica.ingest): the signature helpers' verdicts taken or checked here,
invalid objects rejected, duplicates and tombstoned ids answered, a blocked author's objects
refused (their ids kept in the reconciliation set), and the rest stored by the one ingest
path (storage._ingest.Batch), in groups of at most GROUP_MAX."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from collections.abc import Sequence
from concurrent.futures import Future

from core.errors import InvalidObject
from core.identity import verify
from core.objects import Object, bad_signature, decode_trusted, parse

from . import _verify
from ._ingest import Batch, WorkspaceIdentity
from ._moderation import blocked_keys, refuse
from ._sql import chunks, placeholders
from ._verify import Checking
from .records import IngestResult, Status

log = logging.getLogger(__name__)

# Objects answered already that are stored together, at most: each group's full-text rows
# go in rowid order, and a catch-up's next group (older messages) starts a new FTS5 segment.
GROUP_MAX = 2048
VERIFY_TIMEOUT_S = 120.0


def accept(conn: sqlite3.Connection, workspace: WorkspaceIdentity, now_ms: int,
           parts: Sequence[Checking]) -> tuple[list[IngestResult], set[bytes]]:
    """Store the batches `parts` (their checks begun as they arrived: storage._verify.start)
    in the caller's write transaction: the answers of all, in order, and the list ids of the
    files whose messages the batch purged."""
    steps: list[tuple[Checking, range, Future | None, int]] = []
    total = 0
    for part in parts:
        steps.extend((part, sub, future, total)
                     for sub, future in zip(part.subs, part.futures, strict=True))
        total += len(part.raws)
    results: list[IngestResult | None] = [None] * total
    seen: set[bytes] = set()
    blocked = blocked_keys(conn)
    batch = Batch(conn, workspace, now_ms)
    batch.mature()
    k = 0
    while k < len(steps):
        # The next sub-batch, and those after it the helpers have answered already (or
        # all, checked here): stored together, as storing costs less per object in
        # larger groups, up to GROUP_MAX objects (memory).
        fresh: list[tuple[int, Object, bool]] = []
        while True:
            part, sub, future, base = steps[k]
            checked = ([(part.own[n], True) for n in sub] if part.own is not None
                       else _checked(future, part.raws, sub))
            for n, found in zip(sub, checked, strict=True):
                if isinstance(found, InvalidObject):
                    results[base + n] = _rejected(part.raws[n], found)
                elif found[0].id in seen:
                    results[base + n] = IngestResult(found[0].id, Status.DUPLICATE)
                else:
                    seen.add(found[0].id)
                    fresh.append((base + n, *found))
            k += 1
            if k == len(steps) or len(fresh) + len(steps[k][1]) > GROUP_MAX:
                break
            waiting = steps[k][2]
            if waiting is not None and not waiting.done():
                break
        held = _held(conn, [obj.id for _, obj, _ in fresh])
        new, refused = [], []
        for n, obj, ok in fresh:
            if obj.id in held:
                results[n] = IngestResult(obj.id, Status.DUPLICATE)
            elif not ok:
                results[n] = _rejected(obj.raw, bad_signature())
            elif obj.author in blocked:
                refused.append(obj)
                results[n] = IngestResult(obj.id, Status.REFUSED, "blocked",
                                          "its author is blocked on this computer")
            else:
                new.append(obj)
                results[n] = IngestResult(obj.id, Status.ADDED)
        batch.add(new)
        refuse(conn, refused, workspace.id)
    return results, batch.unnamed  # type: ignore[return-value]


def _checked(future: Future | None, raws: list[bytes],
             sub: range) -> list[tuple[Object, bool] | InvalidObject]:
    """Per object of `sub`: (the object, whether its signature verifies), or why it is
    invalid. A helper's "valid" is taken as checked; everything else is checked here."""
    verdicts = None
    if future is not None:
        try:
            verdicts = future.result(VERIFY_TIMEOUT_S)
        except (TimeoutError, OSError, ValueError) as exc:
            log.warning("signature helper failed (%s); verifying here", exc)
            _verify.shutdown(future)
    if verdicts is None or len(verdicts) != len(sub):
        verdicts = bytes(len(sub))
    out: list[tuple[Object, bool] | InvalidObject] = []
    for n, valid in zip(sub, verdicts, strict=True):
        if valid == 1:
            out.append((decode_trusted(raws[n]), True))
            continue
        try:
            obj, unsigned = parse(raws[n])
        except InvalidObject as exc:
            out.append(exc)
            continue
        out.append((obj, verify(obj.author, unsigned, obj.sig)))
    return out

def _rejected(raw: bytes, exc: InvalidObject) -> IngestResult:
    return IngestResult(hashlib.blake2b(raw, digest_size=32).digest(), Status.REJECTED,
                        exc.reason.value, str(exc))

def _held(conn: sqlite3.Connection, ids: list[bytes]) -> set[bytes]:
    held: set[bytes] = set()
    for part in chunks(ids):
        marks = placeholders(len(part))
        held.update(row[0] for row in conn.execute(
            f"SELECT id FROM objects WHERE id IN ({marks}) UNION ALL "
            f"SELECT id FROM tombstones WHERE id IN ({marks})", (*part, *part)))
    return held
