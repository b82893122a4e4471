"""What a batch of stored objects changed, as the Node's events (app/events.py): read from their
kinds and streams (storage.arrivals), on the Node's thread. A public channel is named from
its stream (core.kinds.channel_stream of the channels held); a private channel's stream is its
id; a document is its doc/root's id, the stream of its own objects, and a branch's stream is
its doc/branch object's id, in the document's stream."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from core import kinds
from storage import NotFound
from storage.arrivals import kinds_and_streams

from .events import (
    Changed,
    ChannelChanged,
    DocumentChanged,
    MembershipChanged,
    MessagesArrived,
    NicknamesChanged,
)

if TYPE_CHECKING:
    from .workspace import Workspace

# Kinds that change what a channel's message list shows, and those that change its state.
SHOWN_KINDS = frozenset({"post/text", "post/reply", "post/file", "post/edit", "post/react",
                         "post/delete", "mod/hide", "post/sealed"})
STATE_KINDS = frozenset({"post/topic", "post/join", "post/leave", "channel/members",
                         "channel/key", "channel/name"})
MAX_BRANCHES = 4096  # branch streams remembered (their document and name never change)


class Arrivals:
    def __init__(self, ws: Workspace):
        self._ws = ws
        self._channels: dict[bytes, str] = {}  # public channel stream -> its name
        self._branches: dict[bytes, tuple[bytes, str | None]] = {}  # stream -> doc, branch

    def changes(self, ids: Sequence[bytes]) -> list[Changed]:
        """What storing `ids` changed: per channel, document and the workspace, in order."""
        order = {object_id: n for n, object_id in enumerate(ids)}
        rows = sorted(kinds_and_streams(self._ws.replica, ids), key=lambda row: order[row[0]])
        shown: dict[str | bytes, list[bytes]] = {}
        states: dict[str | bytes, None] = {}
        documents: dict[tuple[bytes, str | None], None] = {}
        membership = nicknames = False
        if any(stream not in self._channels and (kind in SHOWN_KINDS or kind in STATE_KINDS)
               for _, kind, stream in rows):
            self._name_channels()  # once a batch: a channel may be new here
        for object_id, kind, stream in rows:
            if kind in SHOWN_KINDS:
                shown.setdefault(self._channel(stream), []).append(object_id)
            elif kind in STATE_KINDS:
                states[self._channel(stream)] = None
            elif kind == "doc/root":  # in the workspace's stream: the document is its id
                documents[(object_id, None)] = None
            elif kind.startswith("doc/"):
                document = self._document(stream)
                if document is not None:
                    documents[document] = None
            elif kind == "post/info":
                nicknames = True
            else:
                membership = True
        out: list[Changed] = [MessagesArrived(channel, tuple(found))
                              for channel, found in shown.items()]
        out += [ChannelChanged(channel) for channel in states]
        out += [DocumentChanged(doc, branch) for doc, branch in documents]
        if membership:
            out.append(MembershipChanged())
        if nicknames:
            out.append(NicknamesChanged())
        return out

    def _name_channels(self) -> None:
        workspace = self._ws.id
        self._channels = {kinds.channel_stream(workspace, info.name): info.name
                          for info in self._ws.channels()}

    def _channel(self, stream: bytes) -> str | bytes:
        """A public channel's name, else the stream: a private channel's id."""
        return self._channels.get(stream, stream)

    def _document(self, stream: bytes) -> tuple[bytes, str | None] | None:
        """The document and branch of a doc/ object's stream; None for a branch whose doc/branch
        object has not arrived (its arrival, in the document's stream, says the document
        changed). Only what was found is remembered: a branch seen before its doc/branch
        object would otherwise be taken for a document of its own for good."""
        found = self._branches.get(stream)
        if found is None:
            try:
                obj = self._ws.replica.object(stream)
            except NotFound:
                return None
            if obj.type == "doc/branch":
                found = (obj.stream, str(obj.body["name"]))
            else:
                found = (stream, None)
            if len(self._branches) >= MAX_BRANCHES:
                self._branches.clear()
            self._branches[stream] = found
        return found
