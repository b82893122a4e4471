"""`hearth` chat commands. Each one calls the Workspace method of its name; no logic here
beyond parsing arguments and printing results."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.policy import Policy
from storage import Message, StateEvent

from . import _text, joining
from ._command import (
    PASSPHRASE_ENV,
    PERSON_HELP,
    CLIError,
    channel_arg,
    command,
    hinted,
    open_workspace,
    passphrase,
    paths_of,
    print_json,
    when,
    whole_number,
)
from .channel_list import channel_list
from .errors import LookalikeChannel
from .names import NickBook, channel_names
from .records import UNREAD_CAP
from .search import HINT, SearchError, summary
from .units import size_label
from .workspace import (
    MIN_PREFIX,
    SHORT_KEY,
    Workspace,
    WorkspaceError,
    export_identity,
    import_identity,
)

MAX_LIMIT = 100_000  # messages or results one command prints
CHANNEL_HELP = "the channel's name (a leading # is optional)"
LIMIT = whole_number(1, MAX_LIMIT)


def _short(key: bytes) -> str:
    return key.hex()[:SHORT_KEY]


SYNC_HINT = "run `hearth serve` to sync with your workspace"


def _unsynced(ws: Workspace) -> bool:
    """Workspace.nothing_arrived: a workspace joined and not synced yet."""
    return ws.nothing_arrived()


def _channel(ws: Workspace, name: str) -> str:
    """An existing channel (Workspace.resolve_channel); where nothing has arrived by sync
    yet, the refusal says that syncing is what brings it."""
    try:
        return ws.resolve_channel(name)
    except WorkspaceError:
        if _unsynced(ws):
            raise CLIError(f"no channel #{name.strip()} here yet: nothing has arrived from "
                           f"your workspace; {SYNC_HINT}") from None
        raise


def _message_json(m: Message) -> dict:
    """A message as `read --json` gives it: `text` is the latest edit's; `reply_to` the
    thread's first message for a reply; `replies` counts its thread; `reactions` maps each
    emoji to how many members reacted with it; `hidden`: a moderator hid it (only the
    channel's moderators read it); `attachments`: its files (name, size in bytes, media_type,
    list: the file's id on the wire, complete: every chunk is here, pinned: kept here whatever
    the storage quota, index: what `hearth download --index` takes)."""
    return {"id": m.id.hex(), "channel": m.channel, "author": m.author.hex(), "nick": m.nick,
            "ts": m.ts, "text": m.text, "cursor": m.cursor, "edited": m.edited,
            "reply_to": m.reply_to.hex() if m.reply_to else None, "replies": m.replies,
            "reactions": {r.emoji: r.count for r in m.reactions}, "hidden": m.hidden,
            "attachments": [{"index": n, "name": f.name, "size": f.size,
                             "media_type": f.media_type, "list": f.list.hex(),
                             "complete": f.complete, "pinned": f.pinned, "width": f.width,
                             "height": f.height}
                            for n, f in enumerate(m.files)]}


def _extras(m: Message) -> str:
    """What a message line adds after the text: (edited), its replies and reactions, and
    whether a moderator hid it."""
    parts = ["(edited)"] if m.edited else []
    if m.hidden:
        parts.append("(hidden by a moderator: only moderators see it)")
    if m.reply_to is not None:
        parts.append(f"(in the thread of {m.reply_to.hex()[:12]})")
    if m.replies:
        parts.append(f"[{m.replies} {'reply' if m.replies == 1 else 'replies'}]")
    if m.reactions:
        parts.append(" ".join(f"{_text.line(r.emoji)} {r.count}" for r in m.reactions))
    for n, f in enumerate(m.files):
        state = "" if f.complete else ", not here yet: `hearth download`"
        parts.append(f"[file {n}: {_text.line(f.name)}, {size_label(f.size)}{state}]")
    return "".join(" " + part for part in parts)


def _print_messages(ws: Workspace, messages: list[Message], as_json: bool, *,
                    channel: bool = False) -> None:
    """Each message as a header line (time, channel, author and key, first line of text),
    its further lines indented, then its id. Nothing a peer wrote starts a line or moves the
    cursor (app._text); an author whose nickname looks like another key's is marked."""
    if as_json:
        print_json([_message_json(m) for m in messages])
        return
    book = NickBook(ws.replica.nicknames())
    channels = channel_names(ws.id, [c.name for c in ws.channels()]) if channel else {}
    for m in messages:
        where = ""
        if channel:
            shown = channels.get(m.channel)
            where = f"#{shown.label if shown else _text.line(m.channel)} "
        warning = book.warning(m.author, m.nick)
        key = _short(m.author) + (f", {warning}" if warning else "")
        print(f"{when(m.ts)}  {where}{book.nick(m.author, m.nick)} ({key}): "
              f"{_text.block(m.text)}{_extras(m)}")
        print(f"    id {m.id.hex()}")


# Handlers -----------------------------------------------------------------------------------

def cmd_init(args: argparse.Namespace) -> None:
    with Workspace.init(paths_of(args), args.nick, name=args.name) as ws:
        print(ws.id.hex())


def _writer(method: str, *fields: str,
            in_channel: bool = False) -> Callable[[argparse.Namespace], None]:
    """A command that writes one object. `in_channel`: it writes in args.channel, a channel
    this computer knows (the library refuses any other: writing never makes a channel), and
    a name that looks like another channel's needs --force."""
    def handler(args: argparse.Namespace) -> None:
        with open_workspace(args) as ws:
            private = ws.private.resolve(args.channel) if method == "post" else None
            if private is not None:  # a private channel of mine: the message goes boxed
                print(ws.private.post(private.id, args.text).id.hex())
                return
            if in_channel and not args.force:
                _refuse_lookalike(ws, args.channel)
            obj = getattr(ws, method)(*(getattr(args, f) for f in fields))
            print(obj.id.hex())
    return handler


def _refuse_lookalike(ws: Workspace, name: str) -> None:
    """Workspace.check_lookalike, with the flag that overrides it."""
    try:
        ws.check_lookalike(name)
    except LookalikeChannel as exc:
        raise CLIError(f"{exc}; add --force if you mean it") from None


def cmd_delete(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        print(ws.conversation.delete(ws.resolve_id(args.id, "post")).id.hex())


def cmd_read(args: argparse.Namespace) -> None:
    """A channel's messages; a channel the replica does not know is refused. An empty read of
    a workspace where nothing from others has arrived yet says, on stderr, how to sync."""
    with open_workspace(args) as ws:
        private = ws.private.resolve(args.channel)
        if private is not None:  # a private channel of mine, opened as it is shown
            _print_messages(ws, ws.private.read(private.id, limit=args.limit), args.json)
            return
        channel = _channel(ws, args.channel)
        messages = ws.read(channel, limit=args.limit, before=args.before, hidden=True)
        _print_messages(ws, messages, args.json)
        waiting = not messages and args.before is None and not args.json and _unsynced(ws)
    if waiting:
        print(hinted(f"nothing yet: {SYNC_HINT}", args), file=sys.stderr)


def cmd_channels(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        listed = channel_list(ws)
        private = ws.private.channels()
    rows, names = listed.channels, listed.names

    def unread(key: str | bytes) -> dict:
        count, mention = (listed.unread.get(key) if isinstance(key, str)
                          else listed.private_unread.get(key)) or (0, False)
        return {"unread": count, "mention": mention, "muted": key in listed.muted}

    if args.json:
        print_json([{"name": c.name, "topic": c.topic, "members": c.members,
                     "messages": c.messages, **unread(c.name)} for c in rows]
                   + [{"name": p.name, "private": True, "dm": p.dm, "id": p.hex,
                       "members": len(p.members), **unread(p.id)} for p in private])
        return
    for c in rows:
        shown = names[c.name]
        warning = f"  ({shown.warning})" if shown.warning else ""
        topic = f"  {_text.line(c.topic)}" if c.topic else ""
        print(f"#{shown.label}{warning}  {c.members} members, {c.messages} messages"
              f"{_unread_text(unread(c.name))}{topic}")
    for p in private:
        print((f"@{_text.line(p.name)}  direct messages" if p.dm else
               f"#{_text.line(p.name)}  private, {len(p.members)} members")
              + _unread_text(unread(p.id)))


def _unread_text(unread: dict) -> str:
    """", 3 unread, mentions you, muted": the counts the window's sidebar and title show."""
    return ((f", {'999+' if unread['unread'] >= UNREAD_CAP else unread['unread']} unread"
             if unread["unread"] else "")
            + (", mentions you" if unread["mention"] else "")
            + (", muted" if unread["muted"] else ""))


def _members_json(members: Any) -> list[dict]:
    return [{"key": m.key.hex(), "nick": m.nick} for m in members]


def _member_line(book: NickBook, key: bytes, nick: str | None) -> str:
    warning = book.warning(key, nick)
    return f"{book.nick(key, nick)}  {key.hex()}" + (f"  ({warning})" if warning else "")


def cmd_members(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        members = ws.channel_members(_channel(ws, args.channel))
        book = NickBook(ws.replica.nicknames())
    if args.json:
        print_json(_members_json(members))
        return
    for m in members:
        print(_member_line(book, m.key, m.nick))


def cmd_search(args: argparse.Namespace) -> None:
    """Matching messages grouped by channel (a "#name  (count)" line over each group, then
    each message as `read` prints it), then matching channels and documents, then the count
    line; an empty result says so and how to search. --json: query, total, capped, messages
    (as `read --json` gives them, newest first), channels (name, topic) and documents (id,
    title, creator, ts)."""
    with open_workspace(args) as ws:
        try:
            results = ws.search(args.query, limit=args.limit)
        except SearchError as exc:
            raise CLIError(str(exc)) from None
        book = NickBook(ws.replica.nicknames())
    if args.json:
        print_json({
            "query": args.query, "total": results.total, "capped": results.capped,
            "messages": [_message_json(m) for m in results.messages],
            "channels": [{"name": c.name, "topic": c.topic} for c in results.channels],
            "documents": [{"id": d.id, "title": d.title, "creator": d.creator.hex(),
                           "ts": d.ts} for d in results.documents],
        })
        return
    for group in results.groups:
        print(f"#{group.label}  ({len(group.messages)})")
        for m in group.messages:
            warning = book.warning(m.author, m.nick)
            key = _short(m.author) + (f", {warning}" if warning else "")
            print(f"{when(m.ts)}  {book.nick(m.author, m.nick)} ({key}): "
                  f"{_text.block(m.text)}")
            print(f"    id {m.id.hex()}")
        print()
    if results.channels:
        print("channels:")
        for c in results.channels:
            print(f"  #{c.label}" + (f"  {_text.line(c.topic)}" if c.topic else ""))
    if results.documents:
        print("documents:")
        for d in results.documents:
            print(f"  {_text.line(d.title)}  {d.id}")
    print(_text.line(summary(results)))
    if results.empty:
        print(HINT)


def cmd_state(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        state = ws.state(_channel(ws, args.channel))
        book = NickBook(ws.replica.nicknames())
        shown = channel_names(ws.id, [c.name for c in ws.channels()]).get(state.channel)
    if args.json:
        print_json({
            "channel": state.channel, "topic": state.topic,
            "members": _members_json(state.members),
            "nicknames": {m.key.hex(): m.nick for m in state.members if m.nick},
            "history": [{"id": e.id.hex(), "kind": e.kind, "author": e.author.hex(),
                         "ts": e.ts, "value": e.value} for e in state.history],
        })
        return
    warning = f"  ({shown.warning})" if shown and shown.warning else ""
    print(f"#{shown.label if shown else _text.line(state.channel)}{warning}")
    print(f"topic: {_text.line(state.topic) if state.topic else '(none)'}")
    print(f"members ({len(state.members)}):")
    for m in state.members:
        print("  " + _member_line(book, m.key, m.nick))
    print(f"history ({len(state.history)}):")
    # Who did what, by the nickname they had then: the history holds the nickname changes of
    # the current members; for anyone else, the one they have now.
    renamed = {e.author for e in state.history if e.kind == "nick"}
    named: dict[bytes, str] = {}
    for e in state.history:
        nick = named.get(e.author) if e.author in renamed else book.nicks.get(e.author)
        print(f"  {when(e.ts)}  {_who(book, e.author, nick)} {_change(book, e)}")
        if e.kind == "nick" and e.value is not None:
            named[e.author] = e.value


def _who(book: NickBook, key: bytes, nick: str | None) -> str:
    """Who did something: "nick (short key)", marked when the nickname looks like another
    member's; the short key alone before they had a nickname."""
    if not nick:
        return _short(key)
    warning = book.warning(key, nick)
    return f"{book.nick(key, nick)} ({_short(key)}{f', {warning}' if warning else ''})"


def _change(book: NickBook, e: StateEvent) -> str:
    """What one event of a channel's history did, after who did it."""
    value = _text.line(e.value)
    if e.kind == "topic":
        return f"set the topic: {value}" if value else "cleared the topic"
    if e.kind == "nick":
        warning = book.warning(e.author, e.value)
        return f"took the nickname {value}" + (f" ({warning})" if warning else "")
    return {"join": "joined", "leave": "left"}.get(e.kind, _text.line(e.kind))


def cmd_policy(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        subjects = [ws.resolve_person(s).hex() for s in args.subject]
        try:
            policy = Policy("allow" if args.allow else "deny", frozenset(subjects),
                            frozenset(args.resource), frozenset(["append"]))
        except (TypeError, ValueError) as exc:
            raise CLIError(str(exc)) from None
        print(ws.add_policy(args.channel, policy).id.hex())


def cmd_policies(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        policies = ws.policies(args.channel)
    if args.json:
        print_json([p.to_dict() for p in policies])
        return
    if not policies:
        print("no policies: everyone may post everything")
    for n, p in enumerate(policies, 1):
        who = ", ".join(_text.line(s[:16]) for s in sorted(p.subjects)) or "anyone"
        what = ", ".join(_text.line(r) for r in sorted(p.resources)) or "any kind"
        print(f"{n}. {_text.line(p.effect)} {who} to post {what}")


def cmd_admin_grant(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        print(ws.members.grant_admin(ws.resolve_person(args.key)).id.hex())


def cmd_admin_revoke(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        print(ws.members.revoke_admin(ws.resolve_person(args.key)).id.hex())


def cmd_identity_export(args: argparse.Namespace) -> None:
    paths = paths_of(args)
    from core.identity import Identity

    identity = Identity.load(paths.identity)
    export_identity(identity, Path(args.file), passphrase(confirm=True))
    print(identity.public_key.hex())


def cmd_identity_import(args: argparse.Namespace) -> None:
    identity = import_identity(paths_of(args), Path(args.file), passphrase(confirm=False))
    print(identity.public_key.hex())


def cmd_identity_show(args: argparse.Namespace) -> None:
    """My identity key (made now if this data folder has none): what a personal invite
    (`hearth invite --for KEY`) is made for, before I have any workspace."""
    print(joining.identity_key(paths_of(args)).hex())


def cmd_whoami(args: argparse.Namespace) -> None:
    """Who I am here, and in which workspace: the name its creator gave it (`init --name`)."""
    with open_workspace(args) as ws:
        if args.json:
            print_json({"key": ws.key.hex(), "nick": ws.nickname(), "workspace": ws.id.hex(),
                         "name": ws.name, "admin": ws.replica.is_admin(ws.key)})
            return
        print(f"{_text.line(ws.nickname()) or 'anonymous'}  {ws.key.hex()}")
        folder = "" if ws.name == ws.paths.workspace else f" (--workspace {ws.paths.workspace})"
        print(f"workspace {_text.line(ws.name)}{folder}  {ws.id.hex()}")


# Registration -------------------------------------------------------------------------------

def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    def add(name: str, handler: Callable, help: str, *, json_flag: bool = False,
            parent: argparse._SubParsersAction | None = None) -> argparse.ArgumentParser:
        return command(parent or sub, common, name, handler, help, json_flag=json_flag)

    p = add("init", cmd_init, "create your identity (if needed) and a new workspace")
    p.add_argument("--nick", required=True, help="your nickname")
    p.add_argument("--name", help="the workspace's display name")
    force = ("post even if CHANNEL looks like another channel's name "
             "(a lookalike is refused without it)")
    known = (" (one this computer knows: a name it does not know is refused, and `hearth "
             "channel create NAME` makes a channel)")
    p = add("post", _writer("post", "channel", "text", in_channel=True),
            "post a message to a channel" + known)
    p.add_argument("channel", type=channel_arg, help=CHANNEL_HELP)
    p.add_argument("text")
    p.add_argument("--force", action="store_true", help=force)
    p = add("topic", _writer("topic", "channel", "text", in_channel=True),
            "set a channel's topic" + known)
    p.add_argument("channel", type=channel_arg, help=CHANNEL_HELP)
    p.add_argument("text")
    p.add_argument("--force", action="store_true", help=force.replace("post", "set it", 1))
    p = add("nick", _writer("nick", "name"), "set your nickname")
    p.add_argument("name")
    p = add("join", _writer("join", "channel", in_channel=True), "join a channel" + known)
    p.add_argument("channel", type=channel_arg, help=CHANNEL_HELP)
    p.add_argument("--force", action="store_true", help=force.replace("post", "join", 1))
    p = add("leave", _writer("leave", "channel"), "leave a channel")
    p.add_argument("channel", type=channel_arg, help=CHANNEL_HELP)
    p = add("delete", cmd_delete, "delete one of your posts (admins: anyone's)")
    p.add_argument("id", help=f"the post's id (64 hex characters, or a unique prefix of at "
                   f"least {MIN_PREFIX})")
    p = add("read", cmd_read, "read a channel, newest last", json_flag=True)
    p.add_argument("channel", type=channel_arg, help=CHANNEL_HELP)
    p.add_argument("--limit", type=LIMIT, default=50,
                   help=f"how many messages, 1 to {MAX_LIMIT} (default 50)")
    p.add_argument("--before", metavar="CURSOR", help="page: messages before this cursor")
    add("channels", cmd_channels, "list channels", json_flag=True)
    p = add("members", cmd_members, "list a channel's members", json_flag=True)
    p.add_argument("channel", type=channel_arg, help=CHANNEL_HELP)
    p = add("search", cmd_search, "search messages, channel topics and document titles",
            json_flag=True)
    p.add_argument("query", help='words, "exact phrases" and filters: in:#channel, from:nick, '
                   "before:YYYY-MM-DD, after:YYYY-MM-DD (local days, each day itself left out)")
    p.add_argument("--limit", type=LIMIT, default=50,
                   help=f"how many messages (and channels, documents), 1 to {MAX_LIMIT} "
                   "(default 50)")
    p = add("state", cmd_state, "a channel's topic, members and history of changes",
          json_flag=True)
    p.add_argument("channel", type=channel_arg, help=CHANNEL_HELP)
    p = add("policy", cmd_policy, "add an access policy to a channel (admins)")
    p.add_argument("channel", type=channel_arg, help=CHANNEL_HELP)
    effect = p.add_mutually_exclusive_group(required=True)
    effect.add_argument("--allow", action="store_true", help="allow what the policy matches")
    effect.add_argument("--deny", action="store_true", help="deny what the policy matches")
    p.add_argument("--subject", action="append", default=[], metavar="KEY",
                   help=f"a person the policy applies to: {PERSON_HELP} (repeatable; "
                   "none = everyone)")
    p.add_argument("--resource", action="append", default=[], metavar="KIND",
                   help="a post kind, e.g. post/text (repeatable; none = every kind)")
    p = add("policies", cmd_policies, "list a channel's access policies", json_flag=True)
    p.add_argument("channel", type=channel_arg, help=CHANNEL_HELP)
    add("whoami", cmd_whoami, "your key and nickname, and the workspace's name", json_flag=True)

    admin = sub.add_parser("admin", help="workspace administration",
                           description="workspace administration")
    admin_sub = admin.add_subparsers(dest="admin_command", metavar="COMMAND", required=True)
    p = add("grant", cmd_admin_grant, "make someone an admin (root admin only)", parent=admin_sub)
    p.add_argument("key", metavar="KEY", help=f"the person: {PERSON_HELP}")
    p = add("revoke", cmd_admin_revoke, "take someone's admin grant back (root admin only): "
            "what they did as an admin before stays, nothing after counts", parent=admin_sub)
    p.add_argument("key", metavar="KEY", help=f"the person: {PERSON_HELP}")

    identity = sub.add_parser("identity", help="show, export or import your identity",
                              description="show, export or import your identity "
                              f"(passphrase from ${PASSPHRASE_ENV} or the terminal)")
    id_sub = identity.add_subparsers(dest="identity_command", metavar="COMMAND", required=True)
    add("show", cmd_identity_show, "print your identity key (made now if there is none): "
        "what a member makes a personal invite for", parent=id_sub)
    p = add("export", cmd_identity_export, "write your identity, passphrase-protected",
            parent=id_sub)
    p.add_argument("file")
    p = add("import", cmd_identity_import, "use an exported identity in this data folder",
            parent=id_sub)
    p.add_argument("file")


