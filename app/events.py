"""What a Node tells its subscribers (`Node.subscribe`, `NodeFacade.subscribe`), on the Node's
thread: one frozen dataclass per kind of event, dispatched by isinstance or match (aioquic's
quic/events.py). The window's bridge (ui/bridge.py) hands them to the GUI thread; `hearth serve`
prints some (app/sync_commands.py).

Sync's events come as they are (sync/events.py): PeerConnected and PeerDisconnected (both
PeersChanged), Synced, ObjectsStored (every batch of new objects, whoever made them), Delivered
(my objects reached a peer: Node.pending() shrank), SessionEnded, ObjectRejected,
PeerUnreachable, and PeerTyping, PeerPrivateTyping, PeerPresence, PeerPresenceLeft (a connected
peer's person typing, or in a document: never stored; gone once `expires`, a time.monotonic(),
passes; a PeerPrivateTyping only when its sender and I are both current members of the channel).

The Node's own say what changed, read from the objects stored: after each ObjectsStored come
MessagesArrived, ChannelChanged, DocumentChanged, MembershipChanged and NicknamesChanged for
what it held; and FileProgressed, HistoryProgressed, KeptChanged and Removed."""

from __future__ import annotations

from dataclasses import dataclass

from core.kinds import channel_key
from sync.events import Delivered as Delivered
from sync.events import ObjectRejected as ObjectRejected
from sync.events import ObjectsStored as ObjectsStored
from sync.events import PeerConnected as PeerConnected
from sync.events import PeerDisconnected as PeerDisconnected
from sync.events import PeerPresence as PeerPresence
from sync.events import PeerPresenceLeft as PeerPresenceLeft
from sync.events import PeerPrivateTyping as PeerPrivateTyping
from sync.events import PeersChanged as PeersChanged
from sync.events import PeerTyping as PeerTyping
from sync.events import PeerUnreachable as PeerUnreachable
from sync.events import SessionEnded as SessionEnded
from sync.events import Synced as Synced

from .records import FileProgress, HistoryProgress, Kept


@dataclass(frozen=True)
class MessagesArrived:
    """Objects that change what a channel's messages show were stored (messages, edits,
    reactions, deletions, hides): `channel` is a public channel's name, or a private
    channel's id; `ids` are theirs, in the order stored."""

    channel: str | bytes
    ids: tuple[bytes, ...]

    def names(self, channel: str | bytes | None) -> bool:
        """Whether this is about `channel` (a public one's name in any case, or an id)."""
        if isinstance(self.channel, str) and isinstance(channel, str):
            return channel_key(self.channel) == channel_key(channel)
        return self.channel == channel


@dataclass(frozen=True)
class ChannelChanged:
    """A channel's state changed: its topic, who joined or left; a private channel's members,
    keys or name. `channel` as in MessagesArrived."""

    channel: str | bytes

    def names(self, channel: str | bytes | None) -> bool:
        return MessagesArrived(self.channel, ()).names(channel)


@dataclass(frozen=True)
class DocumentChanged:
    """Objects of document `doc` (its root's id) were stored: of branch `branch` (its name), or
    of the document's own stream (None: title, editors, branches, main, tags)."""

    doc: bytes
    branch: str | None


@dataclass(frozen=True)
class MembershipChanged:
    """Workspace-wide objects were stored: members admitted or removed, admins, moderators'
    roles, invites, channel policies, private channels made, the workspace's name."""


@dataclass(frozen=True)
class NicknamesChanged:
    """Someone's nickname changed."""


@dataclass(frozen=True)
class FileProgressed:
    """An attached file is being fetched: at most a few a second per file, and always one at
    the end, done or with an error."""

    progress: FileProgress


@dataclass(frozen=True)
class HistoryProgressed:
    """Objects of the channels and documents kept here are arriving from peers: at most four a
    second, and one with done True when none are."""

    progress: HistoryProgress


@dataclass(frozen=True)
class KeptChanged:
    """What this computer keeps changed (here, or by `hearth keep` beside the Node)."""

    kept: Kept


@dataclass(frozen=True)
class Removed:
    """This computer's own replica says its key was removed, by the signed removal it holds:
    by whom (`nick`: their nickname, or None), when and why. The Node then dials no one; the
    replica stays readable."""

    by: bytes
    at_ms: int
    reason: str
    nick: str | None


Changed = MessagesArrived | ChannelChanged | DocumentChanged | MembershipChanged \
    | NicknamesChanged
NodeEvent = (PeersChanged | Synced | ObjectsStored | Delivered | SessionEnded | ObjectRejected
             | PeerUnreachable | PeerTyping | PeerPrivateTyping | PeerPresence | PeerPresenceLeft
             | Changed
             | FileProgressed | HistoryProgressed | KeptChanged | Removed)
