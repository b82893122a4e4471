"""The bodies of known kinds (core.kinds): every kind's exact fields, each limit at its edge and
one past it, and missing or extra fields refused as bad bodies."""

from __future__ import annotations

import pytest

from core.errors import InvalidObject, Reason
from core.kinds import KINDS
from core.objects import (
    build,
    decode,
)

from .objects_support import ALL_KINDS, ID1, ID2, IDENT, STREAM, TS, envelope, rejected, signed

# Bodies of known kinds ------------------------------------------------------------------------

EMOJI_4096 = "😀" * 1024  # 4096 bytes of UTF-8
def _item(**changed) -> list:
    """A post/origin item (core.import_kinds.ITEM), with some places changed."""
    from core.import_kinds import ITEM

    values = dict(zip(ITEM, [ID1, "U024BE7LH", "Zoë 日本", "1577872800.000200", 0, "",
                             [["👍", 3, ["U1", "U2"]]]], strict=True))
    return [{**values, **changed}[place] for place in ITEM]


VALID = {
    "post/text": {"channel": "general", "text": "hello\nworld"},
    "post/delete": {"targets": [ID1]},
    "post/info": {"name": "alice"},
    "post/topic": {"channel": "general", "topic": "news"},
    "post/join": {"channel": "general"},
    "post/leave": {"channel": "general"},
    "post/reply": {"channel": "general", "text": "me too", "parent": ID1, "broadcast": False},
    "post/edit": {"channel": "general", "target": ID1, "text": "hello, world"},
    "post/file": {"channel": "general", "text": "", "files": [
        {"name": "report.pdf", "size": 1000, "type": "application/pdf", "list": ID1,
         "key": ID1, "w": 0, "h": 0, "thumb": b""}]},
    "post/react": {"channel": "general", "target": ID1, "emoji": "👍"},
    "workspace/genesis": {"name": "Home", "nonce": bytes(16)},
    "workspace/admin-grant": {"key": ID1},
    "workspace/admin-revoke": {"key": ID1},
    "channel/policy": {
        "channel": "general",
        "policies": [{"effect": "deny", "subjects": [ID1.hex()], "resources": ["post/text"],
                      "actions": ["append"]}],
    },
    "doc/root": {"title": "Notes", "editors": [ID1], "nonce": bytes(16)},
    "doc/title": {"title": "Notes"},
    "doc/editors": {"add": [ID1], "remove": []},
    "doc/branch": {"name": "main", "source": None, "at": []},
    "doc/main": {"branch": ID1},
    "doc/commit": {"root": [], "epoch": 0, "nonce": bytes(24), "box": b"box"},
    "doc/tag": {"name": "v1", "commit": ID1},
    "doc/branch-key": {"branch": ID1, "epoch": 0, "recipient": ID2, "sealed": b"s" * 80},
    "doc/key-refresh": {"branch": ID1, "epoch": 1},
    "doc/visibility": {"mode": "workspace"},
    "doc/editing": {"mode": "workspace"},
    "doc/workspace-key": {"branch": ID1, "epoch": 0, "nonce": bytes(24), "box": b"b" * 48},
    "doc/edit-request": {"note": "may I help?", "open": True},
    "doc/comment": {"epoch": 0, "nonce": bytes(24), "box": b"box"},
    "mod/role": {"channel": "general", "key": ID1, "role": "moderator", "reason": "helps"},
    "mod/hide": {"channel": "general", "target": ID1, "hidden": True, "reason": "spam"},
    "post/origin": {"channel": "general",
                    "items": [[ID1, "U024BE7LH", "Zoë 日本", "1577872800.000200", 0, "",
                               [["👍", 3, ["U1", "U2"]]]]]},
    "import/claim": {"user": "U024BE7LH"},
    "import/confirm": {"key": ID1, "user": "U024BE7LH"},
    "invite/create": {"tag": ID1[:16], "uses": 3, "expires": 1_700_000_000_000,
                      "nonce": ID1[:24], "box": b"b" * 48},
    "invite/revoke": {"invite": ID1},
    "member/admit": {"key": ID1, "invite": ID1},
    "member/remove": {"key": ID1, "reason": "left the team"},
    "channel/private": {"nonce": ID1[:16], "dm": False},
    "channel/members": {"channel": ID1, "add": [ID1], "remove": [ID1]},
    "channel/key": {"channel": ID1, "epoch": 0, "check": ID1[:16], "recipient": ID1,
                    "sealed": b"s" * 72},
    "channel/name": {"channel": ID1, "epoch": 0, "nonce": ID1[:24], "box": b"n" * 20},
    "post/sealed": {"channel": ID1, "epoch": 0, "nonce": ID1[:24], "box": b"p" * 40},
    "member/kept": {"removal": ID1, "ids": [ID1]},
    "workspace/key": {"epoch": 0, "check": ID1[:16], "recipient": ID1, "sealed": b"s" * 80},
    "workspace/relay": {"host": "relay.example.org", "port": 7655, "key": ID1, "active": True},
}
MANY = [bytes([i]) * 32 for i in range(65)]

# (kind, field, value): boundary values that are still valid
EDGES = [
    ("post/text", "text", EMOJI_4096),
    ("post/text", "text", "x"),
    ("post/text", "text", "\x00\x07 tabs\tand\r\nnewlines \u200b\u2028"),  # text is free-form
    ("post/text", "channel", "日" * 64),
    ("post/text", "channel", "x"),
    ("post/text", "channel", "Général 🎉"),
    ("post/topic", "topic", ""),
    ("post/topic", "topic", "話" * 512),
    ("post/info", "name", "n" * 32),
    ("post/info", "name", "😀" * 32),
    ("post/delete", "targets", MANY[:64]),
    ("post/reply", "broadcast", True),
    ("post/edit", "text", EMOJI_4096),
    ("post/react", "emoji", "👨‍👩‍👧‍👦"),  # a ZWJ sequence of 7 codepoints
    ("post/react", "emoji", "x" * 16),
    ("workspace/genesis", "name", "w" * 64),
    ("channel/policy", "policies", []),
    ("channel/policy", "policies", [{"effect": "allow"}] * 64),
    ("doc/root", "editors", MANY[:64]),
    ("doc/root", "title", "t" * 256),
    ("doc/editors", "add", []),  # with remove non-empty below
    ("doc/branch", "source", ID2),
    ("doc/branch", "at", MANY[:64]),
    ("doc/commit", "epoch", 2**63 - 1),
    ("doc/commit", "box", b""),
    ("doc/commit", "root", MANY[:64]),
    ("doc/tag", "name", "t" * 64),
    ("doc/branch-key", "sealed", b"s" * 256),
    ("doc/branch-key", "sealed", b""),
    ("doc/key-refresh", "epoch", 2**63 - 1),
    ("doc/visibility", "mode", "private"),
    ("doc/editing", "mode", "listed"),
    ("doc/workspace-key", "epoch", 2**63 - 1),
    ("doc/workspace-key", "box", b"b" * 256),
    ("doc/workspace-key", "box", b""),
    ("doc/edit-request", "note", ""),
    ("doc/edit-request", "note", "話" * 256),
    ("doc/edit-request", "open", False),
    ("doc/comment", "epoch", 2**63 - 1),
    ("doc/comment", "box", b""),
    ("mod/role", "role", "none"),
    ("mod/role", "reason", ""),
    ("mod/role", "reason", "話" * 256),
    ("mod/hide", "hidden", False),
    ("post/origin", "items", [_item(target=bytes([n]) * 32) for n in range(64)]),
    ("post/origin", "items", [_item(name="x" * 80)]),
    ("import/claim", "user", "U" * 32),
    ("mod/hide", "reason", "x"),
    ("mod/hide", "reason", "😀" * 256),
    ("invite/create", "uses", 0),
    ("invite/create", "expires", 0),
    ("invite/create", "box", b""),
    ("member/admit", "invite", None),
    ("workspace/key", "sealed", b""),
    ("member/remove", "reason", ""),
    ("channel/private", "dm", True),
    ("channel/members", "add", []),
    ("post/sealed", "box", b"p" * 20_000),
    ("member/kept", "ids", [bytes([n % 256, n // 256]) * 16 for n in range(1024)]),
]

# (kind, field, value): out of the documented limits -> bad_body
OUT_OF_LIMITS = [
    ("post/text", "text", ""),
    ("post/text", "text", "a" + EMOJI_4096),  # 4097 bytes
    ("post/text", "text", "a" * 4097),
    ("post/text", "text", b"hello"),
    ("post/text", "text", None),
    ("post/text", "channel", "c" * 65),
    ("post/text", "channel", ""),
    ("post/text", "channel", "gen\x07eral"),
    ("post/text", "channel", "gen\neral"),
    ("post/text", "channel", "gen\u2028eral"),
    ("post/text", "channel", "e\u0301"),  # NFD, not NFC
    ("post/text", "channel", " general"),
    ("post/text", "channel", "general "),
    ("post/text", "channel", b"general"),
    ("post/text", "channel", 5),
    ("post/topic", "topic", "t" * 513),
    ("post/reply", "broadcast", 1),
    ("post/reply", "parent", ID1[:31]),
    ("post/reply", "text", ""),
    ("post/edit", "text", "a" * 4097),
    ("post/edit", "target", None),
    ("post/react", "emoji", ""),
    ("post/react", "emoji", "x" * 17),
    ("post/react", "emoji", "thumbs up"),
    ("post/react", "emoji", "\u202e"),  # a bidi override
    ("post/react", "target", [ID1]),
    ("post/topic", "topic", b"news"),
    ("post/topic", "topic", None),
    ("post/topic", "channel", "c" * 65),
    ("post/info", "name", "n" * 33),
    ("post/info", "name", ""),
    ("post/info", "name", "bob\x00"),
    ("post/info", "name", "A\u030a"),  # NFD of Å
    ("post/info", "name", ["alice"]),
    ("post/join", "channel", "c" * 65),
    ("post/join", "channel", "a\tb"),
    ("post/join", "channel", None),
    ("post/leave", "channel", "\x1b[31mred"),
    ("post/leave", "channel", ""),
    ("post/delete", "targets", []),
    ("post/delete", "targets", MANY),
    ("post/delete", "targets", [ID1, ID1]),
    ("post/delete", "targets", [ID1[:31]]),
    ("post/delete", "targets", [ID1.hex()]),
    ("post/delete", "targets", ID1),
    ("workspace/genesis", "name", ""),
    ("workspace/genesis", "name", "w" * 65),
    ("workspace/genesis", "name", "home\x7f"),
    ("workspace/genesis", "nonce", bytes(15)),
    ("workspace/genesis", "nonce", bytes(17)),
    ("workspace/genesis", "nonce", "0" * 16),
    ("workspace/admin-grant", "key", ID1[:31]),
    ("workspace/admin-grant", "key", ID1 + b"\x00"),
    ("workspace/admin-grant", "key", ID1.hex()),
    ("workspace/admin-revoke", "key", ID1[:31]),
    ("workspace/admin-revoke", "key", ID1.hex()),
    ("channel/policy", "channel", "c" * 65),
    ("channel/policy", "policies", [{"effect": "allow"}] * 65),
    ("channel/policy", "policies", "deny everyone"),
    ("channel/policy", "policies", {"effect": "deny"}),
    ("channel/policy", "policies", [{"effect": "maybe"}]),
    ("channel/policy", "policies", [{"subjects": ["a"]}]),
    ("channel/policy", "policies", [{"effect": "deny", "colour": ["red"]}]),
    ("channel/policy", "policies", [{"effect": "deny", "subjects": "alice"}]),
    ("channel/policy", "policies", [{"effect": "deny", "subjects": [1]}]),
    ("channel/policy", "policies", [{"effect": ["deny"]}]),
    ("channel/policy", "policies", ["deny"]),
    ("doc/root", "title", ""),
    ("doc/root", "title", "t" * 257),
    ("doc/root", "title", b"Notes"),
    ("doc/root", "editors", []),
    ("doc/root", "editors", MANY),
    ("doc/root", "editors", [ID1, ID1]),
    ("doc/root", "editors", [ID1[:31]]),
    ("doc/root", "nonce", bytes(24)),
    ("doc/title", "title", ""),
    ("doc/title", "title", "t" * 257),
    ("doc/title", "title", None),
    ("doc/editors", "add", MANY),
    ("doc/editors", "add", [ID1, ID1]),
    ("doc/editors", "add", None),
    ("doc/editors", "remove", [ID1[:31]]),
    ("doc/branch", "name", ""),
    ("doc/branch", "name", "b" * 65),
    ("doc/branch", "name", "a\nb"),
    ("doc/branch", "source", ID1[:31]),
    ("doc/branch", "source", "main"),
    ("doc/branch", "at", MANY),
    ("doc/branch", "at", [ID1, ID1]),
    ("doc/branch", "at", None),
    ("doc/main", "branch", ID1[:31]),
    ("doc/main", "branch", None),
    ("doc/commit", "root", MANY),
    ("doc/commit", "root", [ID1, ID1]),
    ("doc/commit", "epoch", -1),
    ("doc/commit", "epoch", True),
    ("doc/commit", "epoch", 2**63),
    ("doc/commit", "epoch", 1.0),
    ("doc/commit", "epoch", "0"),
    ("doc/commit", "nonce", bytes(16)),
    ("doc/commit", "box", "box"),
    ("doc/commit", "box", None),
    ("doc/tag", "name", ""),
    ("doc/tag", "name", "t" * 65),
    ("doc/tag", "name", "v1\x00"),
    ("doc/tag", "commit", ID1[:31]),
    ("doc/branch-key", "branch", ID1[:31]),
    ("doc/branch-key", "epoch", -1),
    ("doc/branch-key", "recipient", ID2[:31]),
    ("doc/branch-key", "sealed", b"s" * 257),
    ("doc/branch-key", "sealed", "sealed"),
    ("doc/key-refresh", "branch", ID1[:31]),
    ("doc/key-refresh", "epoch", 0),
    ("doc/key-refresh", "epoch", -1),
    ("doc/key-refresh", "epoch", False),
    ("doc/visibility", "mode", "public"),
    ("doc/visibility", "mode", "Workspace"),
    ("doc/visibility", "mode", True),
    ("doc/editing", "mode", "everyone"),
    ("doc/editing", "mode", "Workspace"),
    ("doc/editing", "mode", 1),
    ("doc/workspace-key", "branch", ID1[:31]),
    ("doc/workspace-key", "epoch", -1),
    ("doc/workspace-key", "nonce", bytes(16)),
    ("doc/workspace-key", "box", b"b" * 257),
    ("doc/workspace-key", "box", "box"),
    ("doc/edit-request", "note", "n" * 257),
    ("doc/edit-request", "note", b"note"),
    ("doc/edit-request", "open", 1),
    ("doc/edit-request", "open", None),
    ("doc/comment", "epoch", -1),
    ("doc/comment", "epoch", True),
    ("doc/comment", "nonce", bytes(16)),
    ("doc/comment", "box", "box"),
    ("doc/comment", "box", None),
    ("mod/role", "channel", "c" * 65),
    ("mod/role", "key", ID1[:31]),
    ("mod/role", "role", "admin"),
    ("mod/role", "role", None),
    ("mod/role", "reason", "r" * 257),
    ("mod/role", "reason", "a\nb"),
    ("mod/role", "reason", None),
    ("mod/hide", "channel", ""),
    ("mod/hide", "target", ID1[:31]),
    ("mod/hide", "target", ID1.hex()),
    ("mod/hide", "hidden", 1),
    ("mod/hide", "hidden", None),
    ("mod/hide", "reason", ""),
    ("mod/hide", "reason", "r" * 257),
    ("mod/hide", "reason", "\u202espam"),
    ("mod/hide", "reason", b"spam"),
    ("invite/create", "tag", ID1),
    ("invite/create", "uses", -1),
    ("invite/create", "expires", None),
    ("invite/create", "nonce", ID1[:16]),
    ("invite/create", "box", b"b" * 257),
    ("invite/revoke", "invite", ID1[:31]),
    ("member/admit", "key", None),
    ("member/admit", "invite", ID1.hex()),
    ("workspace/key", "epoch", -1),
    ("workspace/key", "recipient", ID1[:31]),
    ("workspace/key", "sealed", b"s" * 257),
    ("workspace/key", "check", ID1),
    ("member/remove", "reason", "a\nb"),
    ("workspace/relay", "port", 0),
    ("workspace/relay", "host", "a b"),
    ("workspace/relay", "key", ID1[:31]),
    ("workspace/relay", "active", None),
    ("member/remove", "key", None),
    ("member/kept", "ids", []),
    ("member/kept", "ids", [ID1, ID1]),
    ("member/kept", "ids", [bytes([n % 256, n // 256]) * 16 for n in range(1025)]),
    ("member/kept", "removal", ID1[:31]),
    ("channel/private", "dm", 1),
    ("channel/private", "nonce", ID1),
    ("channel/members", "add", [ID1, ID1]),
    ("channel/key", "check", ID1),
    ("channel/name", "box", b"n" * 257),
    ("post/sealed", "channel", "general"),
    ("post/sealed", "nonce", ID1[:16]),
    ("post/file", "files", []),
    ("post/file", "text", "x" * 4097),
    ("post/file", "files", [{**VALID["post/file"]["files"][0], "name": "../x"}] * 1),
    ("post/origin", "items", []),
    ("post/origin", "items", [_item(), _item()]),
    ("post/origin", "items", [_item(target=bytes([n]) * 32) for n in range(65)]),
    ("post/origin", "items", [_item(ts="a b")]),
    ("post/origin", "items", [_item() + [1]]),
    ("post/origin", "items", [{"target": ID1}]),
    ("post/origin", "items", [_item(reactions=[["👍", 0, []]])]),
    ("post/origin", "items", [_item(reactions=[{"emoji": "👍", "count": 1, "users": []}])]),
    ("post/origin", "items", [_item(name="x" * 81)]),
    ("post/origin", "items", [_item(user="")]),
    ("import/claim", "user", "U" * 33),
    ("import/confirm", "key", ID1[:31]),
]


def with_field(kind: str, field: str, value) -> dict:
    body = dict(VALID[kind])
    body[field] = value
    if kind == "doc/editors" and field == "add" and value == []:
        body["remove"] = [ID2]
    return body


def edge_id(case) -> str:
    kind, field, value = case
    return f"{kind}-{field}-{repr(value)[:24]}"


def test_tables_cover_every_kind():
    assert set(VALID) == set(KINDS)
    assert {kind for kind, _, _ in OUT_OF_LIMITS} == set(KINDS)
    for kind, (fields, _) in KINDS.items():
        assert set(VALID[kind]) == fields


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_valid_example_bodies(kind):
    obj = build(IDENT, kind, stream=STREAM, body=VALID[kind], ts=TS)
    assert decode(obj.raw) == obj
    assert decode(signed(envelope(type=kind, body=VALID[kind]))).body == VALID[kind]


@pytest.mark.parametrize("case", EDGES, ids=edge_id)
def test_boundary_values_are_valid(case):
    body = with_field(*case)
    obj = build(IDENT, case[0], stream=STREAM, body=body, ts=TS)
    assert decode(obj.raw).body == body


@pytest.mark.parametrize("case", OUT_OF_LIMITS, ids=edge_id)
def test_out_of_limit_body_is_bad_body(case):
    kind = case[0]
    body = with_field(*case)
    assert rejected(signed(envelope(type=kind, body=body))).reason is Reason.BAD_BODY
    with pytest.raises(InvalidObject) as info:
        build(IDENT, kind, stream=STREAM, body=body, ts=TS)
    assert info.value.reason is Reason.BAD_BODY


@pytest.mark.parametrize(
    "kind,field", [(kind, field) for kind in ALL_KINDS for field in sorted(VALID[kind])]
)
def test_body_missing_field_is_bad_body(kind, field):
    body = {k: v for k, v in VALID[kind].items() if k != field}
    assert rejected(signed(envelope(type=kind, body=body))).reason is Reason.BAD_BODY
    with pytest.raises(InvalidObject) as info:
        build(IDENT, kind, stream=STREAM, body=body, ts=TS)
    assert info.value.reason is Reason.BAD_BODY


@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize("extra", ["extra", "x", 1], ids=repr)
def test_body_extra_field_is_bad_body(kind, extra):
    body = {**VALID[kind], extra: 1}
    assert rejected(signed(envelope(type=kind, body=body))).reason is Reason.BAD_BODY
    with pytest.raises(InvalidObject) as info:
        build(IDENT, kind, stream=STREAM, body=body, ts=TS)
    assert info.value.reason is Reason.BAD_BODY


def test_doc_editors_must_change_someone():
    body = {"add": [], "remove": []}
    assert rejected(signed(envelope(type="doc/editors", body=body))).reason is Reason.BAD_BODY


def test_name_checks_are_not_fooled_by_the_cache():
    # A name valid under one limit is not valid under a smaller one (nicknames: 32).
    name = "n" * 40
    build(IDENT, "post/join", stream=STREAM, body={"channel": name}, ts=TS)
    raw = signed(envelope(type="post/info", body={"name": name}))
    assert rejected(raw).reason is Reason.BAD_BODY
