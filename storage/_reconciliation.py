"""What sync's reconciliation reads from a replica: the item index, and objects by id."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ._sql import chunks, placeholders
from .items import ItemReader

if TYPE_CHECKING:
    from .replica import Replica


class Reconciliation:
    """`Replica.reconciliation`: reads through a connection of its own (Replica._sync_read),
    so a sync session reads and answers while a batch is being stored."""

    __slots__ = ("_replica",)

    def __init__(self, replica: Replica):
        self._replica = replica

    @contextmanager
    def reader(self) -> Iterator[ItemReader]:
        """The reconciliation index (storage.items), every stored id as (ts, id), read in one
        read transaction that lasts while the reader is used."""
        with self._replica._sync_read() as conn:
            yield ItemReader(conn)

    def missing(self, ids: Iterable[bytes]) -> list[bytes]:
        """For ids a peer asks for: the raw objects held, oldest first within each chunk."""
        ids = list(ids)
        raws: list[bytes] = []
        with self._replica._sync_read() as conn:
            for part in chunks(ids):
                raws.extend(row[0] for row in conn.execute(
                    f"SELECT raw FROM objects WHERE id IN ({placeholders(len(part))}) "
                    "ORDER BY ts, id", part))
        return raws
