"""Kinds of history brought in from elsewhere (a Slack export, app/slack_import.py): where a
message came from, and a member's claim to be one of its authors (core.kinds lists them).

- post/origin   {channel: name, items: [item, 1..64]}, an item the list [target: id, user:
                 str 1..32 printable ASCII, name: str 1..80, ts: str 1..32 printable ASCII,
                 edited: int >= 0, subtype: str 0..32, reactions: [[emoji: str 1..64, count:
                 int >= 1, users: [str, 0..64]], 0..64]]  (in the channel's stream: the
                 importer's claims about its own messages `target`: who wrote each one there
                 (`name`, Slack's `user` id), its Slack `ts` (the export's key, so an import is
                 never made twice), when it was last edited (ms, 0: never), Slack's subtype,
                 and its reactions. An item counts only when the origin's author is `target`'s
                 author: storage/_origins.py. One origin for up to 64 messages keeps an import
                 near one object per message; items are lists, not maps, so a body is checked
                 once and encoded on the fast path, as a post's is)
- import/claim  {user: str 1..32 printable ASCII}  (in the workspace stream: its author says
                 they are that Slack user)
- import/confirm {key: key, user: str 1..32 printable ASCII}  (in the workspace stream: the
                 importer of messages of `user`, or an admin, confirms `key`'s claim)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .fields import bad, check_id, check_name, check_str, check_uint

MAX_ORIGIN_NAME = 80
MAX_SLACK_ID = 32
MAX_SUBTYPE = 32
MAX_REACTION_NAME = 64
MAX_REACTIONS = 64
MAX_REACTION_USERS = 64
MAX_ITEMS = 64
_SLACK_ID = re.compile(rf"[!-~]{{1,{MAX_SLACK_ID}}}")
ITEM = ("target", "user", "name", "ts", "edited", "subtype", "reactions")  # an item's places
REACTION = ("emoji", "count", "users")


def check_slack_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or _SLACK_ID.fullmatch(value) is None:
        raise bad(f"{what} must be 1 to {MAX_SLACK_ID} printable ASCII characters")
    return value


def _reactions(value: Any) -> None:
    if not isinstance(value, list) or len(value) > MAX_REACTIONS:
        raise bad(f"reactions must be a list of at most {MAX_REACTIONS}")
    for item in value:
        if not isinstance(item, list) or len(item) != len(REACTION):
            raise bad(f"a reaction is the list {list(REACTION)}")
        emoji, count, users = item
        check_name(emoji, "a reaction's emoji", MAX_REACTION_NAME)
        check_uint(count, "a reaction's count", 1)
        if not isinstance(users, list) or len(users) > MAX_REACTION_USERS:
            raise bad(f"a reaction's users are a list of at most {MAX_REACTION_USERS}")
        for user in users:
            check_slack_id(user, "a reaction's user")


def _item(item: Any) -> None:
    if not isinstance(item, list) or len(item) != len(ITEM):
        raise bad(f"an origin's item is the list {list(ITEM)}")
    target, user, name, ts, edited, subtype, reactions = item
    check_id(target, "target")
    check_slack_id(user, "user")
    check_name(name, "origin name", MAX_ORIGIN_NAME)
    check_slack_id(ts, "ts")
    check_uint(edited, "edited")
    check_str(subtype, "subtype", 0, MAX_SUBTYPE)
    _reactions(reactions)


def _origin(body: dict) -> None:
    check_name(body["channel"], "channel name", 64)
    items = body["items"]
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_ITEMS:
        raise bad(f"items must be a list of 1 to {MAX_ITEMS}")
    for item in items:
        _item(item)
    if len({item[0] for item in items}) != len(items):
        raise bad("items repeat a target")


def _claim(body: dict) -> None:
    check_slack_id(body["user"], "user")


def _confirm(body: dict) -> None:
    check_id(body["key"], "key")
    check_slack_id(body["user"], "user")


BODIES: dict[str, tuple[frozenset[str], Callable[[dict], None]]] = {
    "post/origin": (frozenset({"channel", "items"}), _origin),
    "import/claim": (frozenset({"user"}), _claim),
    "import/confirm": (frozenset({"key", "user"}), _confirm),
}
