"""Which channels and documents this computer keeps (`Replica.kept`; local, never synced).

Sync reconciles only the streams kept (sync._interest), and every workspace-level stream.
Private channels and direct messages are always kept: they hold what was written to this
member, and few objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core import kinds
from core.encoding import dumps, loads

from ._sql import chunks, placeholders
from .records import Kept

if TYPE_CHECKING:
    from .replica import Replica


class KeptStreams:
    __slots__ = ("_replica",)

    def __init__(self, replica: Replica):
        self._replica = replica

    def get(self) -> Kept:
        with self._replica._read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'kept'").fetchone()
        if row is None:
            return Kept()
        stored = loads(row[0])
        return Kept(stored["all"], tuple(stored["channels"]), tuple(stored["documents"]))

    def set(self, kept: Kept) -> Kept:
        """Keep these from now on; answers what is stored (channel names as channel keys,
        sorted, without repeats)."""
        kept = Kept(kept.all, tuple(sorted({kinds.channel_key(c) for c in kept.channels})),
                    tuple(sorted(set(kept.documents))))
        value = dumps({"all": kept.all, "channels": list(kept.channels),
                       "documents": list(kept.documents)})
        with self._replica._write() as conn:
            conn.execute("INSERT INTO meta (key, value) VALUES ('kept', ?) "
                         "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (value,))
        return kept

    def streams(self, kept: Kept | None = None) -> frozenset[bytes] | None:
        """The channel and document streams kept (None: all): each channel's, every private
        channel's, and each document's root and branch streams."""
        kept = kept or self.get()
        if kept.all:
            return None
        workspace = self._replica.workspace.id
        streams = {kinds.channel_stream(workspace, name) for name in kept.channels}
        with self._replica._read() as conn:
            streams.update(row[0] for row in conn.execute("SELECT DISTINCT channel FROM private"))
            docs = list(kept.documents)
            streams.update(docs)
            for part in chunks(docs):
                streams.update(row[0] for row in conn.execute(
                    f"SELECT o.id FROM items i JOIN objects o ON o.id = i.id WHERE i.stream IN "
                    f"({placeholders(len(part))}) AND o.type = 'doc/branch'", part))
        return frozenset(streams)
