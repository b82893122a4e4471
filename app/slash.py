"""Slash commands typed in a composer (/join, /create, /leave, /topic, /nick, /me, /delete),
applied to a Workspace. Qt-free, so the window and tests share one implementation.

/join takes a channel this computer knows, as `hearth join` does; a new channel is made with
/create (Workspace.create_channel, `hearth channel create`), so a typo or the name of a private
channel whose key has not arrived never becomes a public channel."""

from __future__ import annotations

from .errors import LookalikeChannel, MayBePrivate, UnknownChannel
from .names import lookalike_channel
from .workspace import Workspace, WorkspaceError

COMMANDS = ("join", "create", "leave", "topic", "nick", "me", "delete")


def _flags(arg: str, *names: str) -> tuple[set[str], str]:
    """The leading --flags of `arg` among `names`, and the rest."""
    found: set[str] = set()
    words = arg.split(" ")
    while words and words[0] in names:
        found.add(words.pop(0))
    return found, " ".join(words).strip()


def apply(ws: Workspace, channel: str, text: str) -> tuple[str, str | None]:
    """Post `text` in `channel`, or run it as a command.

    Returns (channel to show next, a note for the person or None)."""
    if not text.startswith("/") or text.startswith("//"):
        ws.post(channel, text[1:] if text.startswith("//") else text)
        return channel, None
    name, _, arg = text[1:].partition(" ")
    arg = arg.strip()
    if name not in COMMANDS:
        raise WorkspaceError(f"unknown command /{name}; try /{', /'.join(COMMANDS)}")
    if name == "me":
        if not arg:
            raise WorkspaceError("/me needs something to do, like /me waves")
        ws.post(channel, f"/me {arg}")
        return channel, None
    if name == "join":
        force, target = arg.startswith("--force "), arg or channel
        if force:
            target = arg.removeprefix("--force ").strip()
        existing = None if force else lookalike_channel((c.name for c in ws.channels()), target)
        if existing is not None:  # "gеneral" (a Cyrillic е) almost never means a new channel
            raise WorkspaceError(f"#{target} looks like #{existing}, another channel; to join "
                                 f"it anyway: /join --force {target}")
        try:
            ws.join(target)
        except UnknownChannel as exc:
            raise WorkspaceError(f"no channel #{exc.name} here; to make it: /create "
                                 f"{exc.name}") from None
        return target, None
    if name == "create":
        flags, target = _flags(arg, "--public", "--force")
        if not target:
            raise WorkspaceError("/create needs a channel name, like /create design")
        target = target.removeprefix("#")
        try:
            ws.create_channel(target, public="--public" in flags, force="--force" in flags)
        except MayBePrivate as exc:
            raise WorkspaceError(f"{exc}: /create --public {target}") from None
        except LookalikeChannel as exc:
            raise WorkspaceError(f"{exc}; to make it anyway: /create --force {target}") \
                from None
        return target, None
    if name == "leave":
        ws.leave(arg or channel)
        return ("general" if (arg or channel) != "general" else channel), None
    if name == "topic":
        ws.topic(channel, arg)
        return channel, None
    if name == "nick":
        if not arg:
            raise WorkspaceError("/nick needs a name, like /nick ada")
        ws.nick(arg)
        return channel, None
    # /delete [ID-PREFIX]: one of my messages here; without an id, my latest one
    mine = [m for m in ws.read(channel, limit=500) if m.author == ws.key]
    if arg:
        mine = [m for m in mine if m.id.hex().startswith(arg.lower())]
    if not mine:
        raise WorkspaceError("no message of yours to delete here" if not arg
                             else f"none of your messages here starts with {arg}")
    ws.conversation.delete(mine[-1].id)
    return channel, "message deleted"
