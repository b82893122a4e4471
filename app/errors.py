"""The app's errors, a leaf every layer above may import. The library's, for what a person
asked that cannot be done, are each a WorkspaceError (one line for the person); the subclasses
let the window tell which question to ask. The Node's (NodeError and its subclasses) say it
cannot start or run what was asked."""

from __future__ import annotations


class WorkspaceError(Exception):
    """Something the person asked for that cannot be done, said in one line."""


class UnknownChannel(WorkspaceError):
    """A post, topic or join (or leave, attach) names a channel this computer does not know:
    nothing was written, since writing would make a public channel of that name (a typo, or
    a private channel whose key has not reached this computer). `name` is the name asked for;
    `Workspace.create_channel(name)` makes it, after asking. `private`: the name is a private
    channel of mine (posting takes it; a topic or a join does not), so there is nothing to make."""

    def __init__(self, message: str, name: str, *, private: bool = False):
        super().__init__(message)
        self.name = name
        self.private = private


class PrivateName(WorkspaceError):
    """A public channel was asked for under the name of a private channel of this workspace
    that this computer can open: it would show the name to everyone, so it is never made."""


class MayBePrivate(WorkspaceError):
    """A new public channel was asked for while this computer cannot tell whether its name is
    a private channel's: it holds a private channel I am in whose name it cannot open yet (the
    key has not arrived), or nothing has arrived from the workspace yet. Made only when the
    person confirms (`create_channel(name, public=True)`, `hearth channel create --public`)."""


class LookalikeChannel(WorkspaceError):
    """A channel name that looks like an existing, different channel's (a Cyrillic е in
    "gеneral"); `existing` is that channel's name. Made only with `force`."""

    def __init__(self, message: str, existing: str):
        super().__init__(message)
        self.existing = existing


class RemovedMember(WorkspaceError):
    """This computer's own key is removed from the workspace (the membership view): what it
    would write counts nowhere, so nothing is written. `removal` is the RemovalRecord."""

    def __init__(self, message: str, removal: object):
        super().__init__(message)
        self.removal = removal


class NodeError(Exception):
    """The Node cannot start or do what was asked; the message is for a person."""


class NodeLocked(NodeError):
    """Another Node runs on this data folder: `pid` of its process and the `workspace` it
    holds ("" when the lock does not say)."""

    def __init__(self, message: str, *, pid: str = "?", workspace: str = ""):
        super().__init__(message)
        self.pid = pid
        self.workspace = workspace


class NodeStopped(NodeError):
    """The Node is not running (not started yet, stopped, or stopping): what the facade's
    futures fail with then. The window takes it as "nothing to do" (it is closing or switching
    workspaces)."""
