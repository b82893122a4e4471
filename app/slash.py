"""Slash commands typed in a composer (/join, /leave, /topic, /nick, /me, /delete), applied
to a Workspace. Qt-free, so the window and tests share one implementation."""

from __future__ import annotations

from .names import lookalike_channel
from .workspace import Workspace, WorkspaceError

COMMANDS = ("join", "leave", "topic", "nick", "me", "delete")


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
        ws.join(target)
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
    ws.delete(mine[-1].id)
    return channel, "message deleted"
