"""Which channels and documents this computer keeps (docs/ARCHITECTURE.md "Sync": interests).

A laptop need not hold every channel of a big workspace. It keeps all (the default) or the
channels and documents named here; workspace-level objects (members, admins, policies,
nicknames), private channels and direct messages always sync. Sync asks peers only for the
streams kept and keeps serving whatever is held; a channel kept again later fetches its history.
The library (`kept`, `keep`, `keep_all`), the facade and `hearth keep` share these names.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from core import kinds
from storage import Kept

from .errors import WorkspaceError
from .workspace import Workspace


def kept(ws: Workspace) -> Kept:
    return ws.replica.kept.get()


def keep(ws: Workspace, channels: Iterable[str] = (), documents: Iterable[str] = (), *,
         drop: bool = False) -> Kept:
    """Keep these channels and documents (by name; documents by id, id prefix or title) on
    this computer, or with `drop` stop keeping them (from all: every other one stays)."""
    names, ids = _resolve(ws, channels, documents)
    now = ws.replica.kept.get()
    if now.all:
        if not drop:
            return now  # all are kept already
        now = Kept(False, tuple(_known_channels(ws)),
                   tuple(bytes.fromhex(s.id) for s in ws.documents.all()))
    if drop:
        chosen = Kept(False, tuple(set(now.channels) - names), tuple(set(now.documents) - ids))
    else:
        chosen = Kept(False, tuple(set(now.channels) | names), tuple(set(now.documents) | ids))
    return ws.replica.kept.set(chosen)


def _known_channels(ws: Workspace) -> set[str]:
    return {kinds.channel_key(info.name) for info in ws.channels()}


def _resolve(ws: Workspace, channels: Iterable[str], documents: Iterable[str]
             ) -> tuple[set[str], set[bytes]]:
    """Channel keys and document ids, or WorkspaceError naming the first unknown one."""
    names = {kinds.channel_key(c) for c in channels}
    if unknown := sorted(names - _known_channels(ws)):
        raise WorkspaceError(f"no channel named {unknown[0]!r} here; creating it "
                             f"(`hearth channel create {shlex.quote(unknown[0])}`) joins the "
                             "one others have, keeps it and fetches its history")
    docs = ws.documents
    return names, {docs.resolve(ref) for ref in documents}


def keep_all(ws: Workspace) -> Kept:
    """Keep every channel and document again (history not yet here is fetched)."""
    return ws.replica.kept.set(Kept())


def keep_only(ws: Workspace, channels: Iterable[str] = (), documents: Iterable[str] = ()
              ) -> Kept:
    """Keep these channels and documents and no other (workspace-level objects, private
    channels and direct messages still sync)."""
    names, ids = _resolve(ws, channels, documents)  # nothing changes when one is unknown
    return ws.replica.kept.set(Kept(False, tuple(names), tuple(ids)))


def streams(ws: Workspace) -> frozenset[bytes] | None:
    """The streams kept (None: all), for sync's interest."""
    return ws.replica.kept.streams()
