"""What the tests of objects and kinds share: fixed identities and times, hand-crafted
envelopes signed the way core.objects.build signs (Ed25519 over the canonical encoding of the
map without `sig`, then `sig` inserted), and reading a refusal's reason."""

from __future__ import annotations

import unicodedata

import cbor2
import pytest
from hypothesis import strategies as st

from core.errors import InvalidObject, Reason
from core.identity import Identity
from core.kinds import KINDS
from core.objects import (
    ENVELOPE_KEYS,
    build,
    decode,
)

IDENT = Identity.from_seed(bytes(range(32)))
OTHER = Identity.from_seed(bytes(range(1, 33)))
STREAM = bytes(range(100, 132))
TS = 1_700_000_000_000
ID1 = bytes([1]) * 32
ID2 = bytes([2]) * 32
UNKNOWN = "future/thing"
MISSING = object()


def enc(value) -> bytes:
    return cbor2.dumps(value, canonical=True)


def envelope(**changes) -> dict:
    """Envelope fields without `sig`: a valid unknown-kind object unless changed."""
    fields = {"v": 1, "type": UNKNOWN, "author": IDENT.public_key, "ts": TS, "stream": STREAM,
              "links": [], "body": {}}
    for key, value in changes.items():
        if value is MISSING:
            del fields[key]
        else:
            fields[key] = value
    return fields


def signed(fields: dict, identity: Identity = IDENT) -> bytes:
    """Sign the canonical encoding of `fields` (no `sig`) and insert `sig`, like build does."""
    return enc({**fields, "sig": identity.sign(enc(fields))})


def signed_pairs(pairs: list[tuple[str, bytes]], identity: Identity = IDENT) -> bytes:
    """A map written entry by entry, in the given order and with the given value encodings.

    The signature covers exactly these bytes without the sig entry, and the sig entry goes
    third (after `v` and `ts`), so the only defect is whatever the caller put in `pairs`.
    """
    def write(entries):
        return bytes([0xA0 + len(entries)]) + b"".join(enc(k) + v for k, v in entries)

    sig = identity.sign(write(pairs))
    return write([*pairs[:2], ("sig", enc(sig)), *pairs[2:]])


def canonical_pairs(fields: dict) -> list[tuple[str, bytes]]:
    return [(key, enc(fields[key])) for key in ENVELOPE_KEYS if key != "sig"]


def unsigned_pairs(pairs: list[tuple[str, bytes]]) -> bytes:
    """Like signed_pairs, but with an all-zero signature: what anyone can send."""
    entries = [*pairs[:2], ("sig", enc(bytes(64))), *pairs[2:]]
    return bytes([0xA0 + len(entries)]) + b"".join(enc(k) + v for k, v in entries)


def rejected(raw: bytes) -> InvalidObject:
    with pytest.raises(InvalidObject) as info:
        decode(raw)
    err = info.value
    assert isinstance(err.reason, Reason)
    assert str(err) and str(err) != str(err.reason)  # a sentence, not just the code
    return err


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def has_control(text: str) -> bool:
    return any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs") for ch in text)


# Strategies: one per kind, within the documented limits -------------------------------------

EMOJI_CJK = list("日本語中文字한국어漢字😀🎉🔥👍🏽🐈‍⬛🇫🇷ñé")  # codepoints: ZWJ, modifier, flag
NAME_CHARS = st.characters(exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp")) | st.sampled_from(
    [c for c in EMOJI_CJK if not has_control(c)]
)
TEXT_CHARS = st.characters(exclude_categories=("Cs",)) | st.sampled_from(EMOJI_CJK)


def names(limit: int):
    return (
        st.text(NAME_CHARS, min_size=1, max_size=limit)
        .map(nfc)
        .filter(lambda s: 1 <= len(s) <= limit and s.strip() == s and not has_control(s))
    )


def utf8_len(text: str) -> int:
    return len(text.encode())


long_texts = st.sampled_from(["a", "é", "中", "😀"]).flatmap(
    lambda ch: st.integers(1, 4096 // utf8_len(ch)).map(lambda n: ch * n)
)
texts = (st.text(TEXT_CHARS, min_size=1, max_size=200) | long_texts).filter(
    lambda s: 1 <= utf8_len(s) <= 4096
)
topics = st.text(TEXT_CHARS, max_size=80) | st.integers(0, 512).map(lambda n: "話" * n)
ids = st.binary(min_size=32, max_size=32)


def id_lists(lo: int = 0, hi: int = 64):
    return st.lists(ids, min_size=lo, max_size=hi, unique=True)


epochs = st.integers(0, 2**63 - 1)
policies = st.fixed_dictionaries(
    {"effect": st.sampled_from(["allow", "deny"])},
    optional={
        name: st.lists(st.text(max_size=12), max_size=3)
        for name in ("subjects", "resources", "actions")
    },
)
descriptors = st.fixed_dictionaries({
    "name": st.text("abcXYZ019 ._-()éü日本", min_size=1, max_size=40),
    "size": st.integers(0, 4 << 30), "type": st.sampled_from(["image/png", "application/pdf"]),
    "list": ids, "key": ids, "w": st.integers(0, 5000), "h": st.integers(0, 5000),
    "thumb": st.binary(max_size=64)})
editor_changes = st.tuples(id_lists(0, 8), id_lists(0, 8)).filter(lambda t: t[0] or t[1])

slack_ids = st.text("UBC0123456789ABCDEFGHXYZ.", min_size=1, max_size=32)
origin_items = st.lists(st.tuples(
    ids, slack_ids, names(80), slack_ids, st.integers(0, 2**63 - 1),
    st.sampled_from(["", "thread_broadcast", "huddle_thread"]),
    st.lists(st.tuples(st.sampled_from(["👍", ":party_parrot:"]), st.integers(1, 999),
                       st.lists(slack_ids, max_size=4)).map(list), max_size=3)).map(list),
    min_size=1, max_size=4, unique_by=lambda item: item[0])

BODIES = {
    "post/origin": st.fixed_dictionaries({"channel": names(64), "items": origin_items}),
    "import/claim": st.fixed_dictionaries({"user": slack_ids}),
    "import/confirm": st.fixed_dictionaries({"key": ids, "user": slack_ids}),
    "post/text": st.fixed_dictionaries({"channel": names(64), "text": texts}),
    "post/delete": st.fixed_dictionaries({"targets": id_lists(1)}),
    "post/info": st.fixed_dictionaries({"name": names(32)}),
    "post/topic": st.fixed_dictionaries({"channel": names(64), "topic": topics}),
    "post/join": st.fixed_dictionaries({"channel": names(64)}),
    "post/leave": st.fixed_dictionaries({"channel": names(64)}),
    "post/reply": st.fixed_dictionaries(
        {"channel": names(64), "text": texts, "parent": ids, "broadcast": st.booleans()}),
    "post/edit": st.fixed_dictionaries({"channel": names(64), "target": ids, "text": texts}),
    "post/file": st.fixed_dictionaries({"channel": names(64), "text": st.just("") | texts,
                                        "files": st.lists(descriptors, min_size=1, max_size=4)}),
    "post/react": st.fixed_dictionaries(
        {"channel": names(64), "target": ids, "emoji": st.sampled_from(["👍", "👩‍💻", "🇫🇷", "+1", "❤️"])}),
    "workspace/genesis": st.fixed_dictionaries(
        {"name": names(64), "nonce": st.binary(min_size=16, max_size=16)}
    ),
    "workspace/admin-grant": st.fixed_dictionaries({"key": ids}),
    "workspace/admin-revoke": st.fixed_dictionaries({"key": ids}),
    "channel/policy": st.fixed_dictionaries(
        {"channel": names(64), "policies": st.lists(policies, max_size=8)}
    ),
    "doc/root": st.fixed_dictionaries(
        {
            "title": st.text(TEXT_CHARS, min_size=1, max_size=256),
            "editors": id_lists(1),
            "nonce": st.binary(min_size=16, max_size=16),
        }
    ),
    "doc/title": st.fixed_dictionaries({"title": st.text(TEXT_CHARS, min_size=1, max_size=256)}),
    "doc/editors": editor_changes.map(lambda t: {"add": t[0], "remove": t[1]}),
    "doc/branch": st.fixed_dictionaries(
        {"name": names(64), "source": st.none() | ids, "at": id_lists()}
    ),
    "doc/main": st.fixed_dictionaries({"branch": ids}),
    "doc/commit": st.fixed_dictionaries(
        {
            "root": id_lists(),
            "epoch": epochs,
            "nonce": st.binary(min_size=24, max_size=24),
            "box": st.binary(max_size=2000),
        }
    ),
    "doc/tag": st.fixed_dictionaries({"name": names(64), "commit": ids}),
    "doc/branch-key": st.fixed_dictionaries(
        {"branch": ids, "epoch": epochs, "recipient": ids, "sealed": st.binary(max_size=256)}
    ),
    "doc/key-refresh": st.fixed_dictionaries(
        {"branch": ids, "epoch": st.integers(1, 2**63 - 1)}
    ),
    "doc/visibility": st.fixed_dictionaries({"mode": st.sampled_from(["workspace", "private"])}),
    "doc/editing": st.fixed_dictionaries({"mode": st.sampled_from(["workspace", "listed"])}),
    "doc/workspace-key": st.fixed_dictionaries(
        {"branch": ids, "epoch": epochs, "nonce": st.binary(min_size=24, max_size=24),
         "box": st.binary(max_size=256)}
    ),
    "doc/edit-request": st.fixed_dictionaries(
        {"note": st.text(TEXT_CHARS, max_size=256), "open": st.booleans()}
    ),
    "doc/comment": st.fixed_dictionaries(
        {"epoch": epochs, "nonce": st.binary(min_size=24, max_size=24),
         "box": st.binary(max_size=2000)}
    ),
    "mod/role": st.fixed_dictionaries(
        {"channel": names(64), "key": ids, "role": st.sampled_from(["moderator", "none"]),
         "reason": st.text(NAME_CHARS, max_size=256)}
    ),
    "mod/hide": st.fixed_dictionaries(
        {"channel": names(64), "target": ids, "hidden": st.booleans(),
         "reason": st.text(NAME_CHARS, min_size=1, max_size=256)}
    ),
    "invite/create": st.fixed_dictionaries(
        {"tag": st.binary(min_size=16, max_size=16), "uses": epochs, "expires": epochs,
         "nonce": st.binary(min_size=24, max_size=24), "box": st.binary(max_size=256)}
    ),
    "invite/revoke": st.fixed_dictionaries({"invite": ids}),
    "member/admit": st.fixed_dictionaries({"key": ids, "invite": st.none() | ids}),
    "member/remove": st.fixed_dictionaries(
        {"key": ids, "reason": st.text(NAME_CHARS, max_size=256)}
    ),
    "channel/private": st.fixed_dictionaries(
        {"nonce": st.binary(min_size=16, max_size=16), "dm": st.booleans()}
    ),
    "channel/members": st.fixed_dictionaries(
        {"channel": ids, "add": st.lists(ids, min_size=1, max_size=4, unique=True),
         "remove": st.lists(ids, max_size=4, unique=True)}
    ),
    "channel/key": st.fixed_dictionaries(
        {"channel": ids, "epoch": epochs, "check": st.binary(min_size=16, max_size=16),
         "recipient": ids, "sealed": st.binary(max_size=256)}
    ),
    "channel/name": st.fixed_dictionaries(
        {"channel": ids, "epoch": epochs, "nonce": st.binary(min_size=24, max_size=24),
         "box": st.binary(max_size=256)}
    ),
    "post/sealed": st.fixed_dictionaries(
        {"channel": ids, "epoch": epochs, "nonce": st.binary(min_size=24, max_size=24),
         "box": st.binary(max_size=2000)}
    ),
    "member/kept": st.fixed_dictionaries(
        {"removal": ids, "ids": st.lists(ids, min_size=1, max_size=8, unique=True)}
    ),
    "workspace/key": st.fixed_dictionaries(
        {"epoch": epochs, "check": st.binary(min_size=16, max_size=16), "recipient": ids,
         "sealed": st.binary(max_size=256)}
    ),
    "workspace/relay": st.fixed_dictionaries(
        {"host": st.text(st.characters(min_codepoint=33, max_codepoint=126,
                                       exclude_characters="/"), min_size=1, max_size=253),
         "port": st.integers(1, 65535), "key": ids, "active": st.booleans()}
    ),
}

unknown_kinds = st.just(UNKNOWN) | st.text(
    st.characters(max_codepoint=127), min_size=1, max_size=64
).filter(lambda k: k not in KINDS)
unknown_bodies = st.dictionaries(
    st.text(max_size=8),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20) | st.binary(max_size=20),
        lambda children: st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.integers(-100, 100), children, max_size=4),
        max_leaves=20,
    ),
    max_size=5,
)
ALL_KINDS = sorted(KINDS)
seeds = st.binary(min_size=32, max_size=32)
timestamps = st.integers(0, 2**63 - 1) | st.integers(TS - 10**9, TS + 10**9)


@st.composite
def built_objects(draw, kind=None):
    if kind is None:
        kind = draw(st.sampled_from([*ALL_KINDS, UNKNOWN]))
    if kind in KINDS:
        body = draw(BODIES[kind])
    else:
        kind = draw(unknown_kinds) if kind == UNKNOWN else kind
        body = draw(unknown_bodies)
    # The caller's key order does not matter: build writes the canonical order.
    body = dict(draw(st.permutations(list(body.items()))))
    identity = Identity.from_seed(draw(seeds))
    stream = draw(ids)
    ts = draw(timestamps)
    links = draw(st.lists(ids, max_size=6) | id_lists(60, 64))
    links += draw(st.lists(st.sampled_from(links), max_size=2)) if links else []  # repeats
    obj = build(identity, kind, stream=stream, body=body, ts=ts, links=links)
    return obj, (identity, kind, stream, body, ts, links)
