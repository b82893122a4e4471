"""Workspace kinds: the workspace's genesis and admins, invites, members and their removal,
the workspace secret, the relays members sync through, and private channels and direct messages (core.membership and
core.private give them meaning; core.kinds lists them)."""

from __future__ import annotations

from collections.abc import Callable

from .fields import (
    BOX_NONCE_SIZE,
    MAX_NAME,
    MAX_SEALED,
    NONCE_SIZE,
    bad,
    check_id,
    check_ids,
    check_name,
    check_reason,
    check_uint,
    id_field,
)

INVITE_TAG_SIZE = 16
MAX_KEPT = 1024


def _genesis(body: dict) -> None:
    check_name(body["name"], "workspace name", MAX_NAME)
    check_id(body["nonce"], "nonce", NONCE_SIZE)


def _invite_create(body: dict) -> None:
    check_id(body["tag"], "tag", INVITE_TAG_SIZE)
    check_uint(body["uses"], "uses")
    check_uint(body["expires"], "expires")
    check_id(body["nonce"], "nonce", BOX_NONCE_SIZE)
    if not isinstance(body["box"], bytes) or len(body["box"]) > MAX_SEALED:
        raise bad(f"box must be at most {MAX_SEALED} bytes")


def _member_admit(body: dict) -> None:
    check_id(body["key"], "key")
    if body["invite"] is not None:
        check_id(body["invite"], "invite")


def _member_remove(body: dict) -> None:
    check_id(body["key"], "key")
    check_reason(body["reason"])


def _member_kept(body: dict) -> None:
    check_id(body["removal"], "removal")
    check_ids(body["ids"], "ids", 1, MAX_KEPT)


def _workspace_key(body: dict) -> None:
    check_uint(body["epoch"], "epoch")
    check_id(body["check"], "check", INVITE_TAG_SIZE)
    check_id(body["recipient"], "recipient")
    if not isinstance(body["sealed"], bytes) or len(body["sealed"]) > MAX_SEALED:
        raise bad(f"sealed must be at most {MAX_SEALED} bytes")


MAX_HOST = 253  # a DNS name's longest; an IPv6 address is shorter
RELAY_KEY_SIZE = 32  # a relay's static Noise key (X25519)


def _workspace_relay(body: dict) -> None:
    """workspace/relay {host: str 1..253 printable ASCII, no spaces; port: 1..65535; key:
    bytes 32 (the relay's static key, which members pin); active: bool} in the workspace
    stream: an admin names a relay members sync through (relay/), or, active false, takes it
    back; per key the latest by a current admin counts (app/relays.py)."""
    host = body["host"]
    if not isinstance(host, str) or not 1 <= len(host) <= MAX_HOST or not host.isascii() \
            or not host.isprintable() or " " in host or "/" in host:
        raise bad(f"host must be 1 to {MAX_HOST} printable ASCII characters, no spaces")
    if type(body["port"]) is not int or not 1 <= body["port"] <= 65535:
        raise bad("port must be a whole number from 1 to 65535")
    check_id(body["key"], "key", RELAY_KEY_SIZE)
    if type(body["active"]) is not bool:
        raise bad("active must be true or false")


def _channel_private(body: dict) -> None:
    check_id(body["nonce"], "nonce", NONCE_SIZE)
    if type(body["dm"]) is not bool:
        raise bad("dm must be true or false")


def _channel_members(body: dict) -> None:
    check_id(body["channel"], "channel")
    check_ids(body["add"], "add")
    check_ids(body["remove"], "remove")
    if not body["add"] and not body["remove"]:
        raise bad("channel/members changes at least one key")


def _channel_key(body: dict) -> None:
    check_id(body["channel"], "channel")
    _workspace_key(body)


def _boxed(body: dict, limit: int | None = MAX_SEALED) -> None:
    check_id(body["channel"], "channel")
    check_uint(body["epoch"], "epoch")
    check_id(body["nonce"], "nonce", BOX_NONCE_SIZE)
    if not isinstance(body["box"], bytes) or (limit is not None and len(body["box"]) > limit):
        raise bad(f"box must be bytes{f' (at most {limit})' if limit else ''}")


# kind -> (exact body field names, checker)
BODIES: dict[str, tuple[frozenset[str], Callable[[dict], None]]] = {
    "workspace/genesis": (frozenset({"name", "nonce"}), _genesis),
    "workspace/admin-grant": (frozenset({"key"}), id_field("key")),
    "workspace/admin-revoke": (frozenset({"key"}), id_field("key")),
    "invite/create": (frozenset({"tag", "uses", "expires", "nonce", "box"}), _invite_create),
    "invite/revoke": (frozenset({"invite"}), id_field("invite")),
    "member/admit": (frozenset({"key", "invite"}), _member_admit),
    "member/remove": (frozenset({"key", "reason"}), _member_remove),
    "member/kept": (frozenset({"removal", "ids"}), _member_kept),
    "workspace/key": (frozenset({"epoch", "check", "recipient", "sealed"}), _workspace_key),
    "workspace/relay": (frozenset({"host", "port", "key", "active"}), _workspace_relay),
    "channel/private": (frozenset({"nonce", "dm"}), _channel_private),
    "channel/members": (frozenset({"channel", "add", "remove"}), _channel_members),
    "channel/key": (frozenset({"channel", "epoch", "check", "recipient", "sealed"}),
                    _channel_key),
    "channel/name": (frozenset({"channel", "epoch", "nonce", "box"}), _boxed),
    "post/sealed": (frozenset({"channel", "epoch", "nonce", "box"}),
                    lambda body: _boxed(body, None)),
}
