"""Joining through a relay with an invite's code (docs/relay.md "Knocking"): what a newcomer
hands a relay for the space's connected members, and what a member's node answers.

The newcomer holds the invite's seed, hence its tag and join key (core.membership), and no
epoch secret, so it cannot prove the space's token. It knocks instead: the relay forwards
`seal_knock`'s blob (its identity key, signed with the tag, in a SecretBox under the join key)
to the members connected now. A member's node whose membership holds the invite (it can derive
the join key) opens it, admits the key as a join session would, and answers with the newest
epoch's secret sealed to that key (`seal_answer`, again under the join key), or why not. The
relay learns the tag and sizes, nothing it could use: it holds neither the seed nor the secret.
"""

from __future__ import annotations

import os

import nacl.exceptions
import nacl.secret

from .encoding import EncodingError, dumps, loads
from .identity import Identity, IdentityError, seal_to, verify

KNOCK_CONTEXT = b"hearth-relay-knock/1"
MAX_KNOCK_BLOB = 1024  # a knock's or an answer's blob, either way
MAX_REASON = 200


class KnockError(ValueError):
    """A knock or an answer that does not open under this join key, or is malformed."""


def _box(join_key: bytes) -> nacl.secret.SecretBox:
    return nacl.secret.SecretBox(join_key)


def _open(join_key: bytes, blob: bytes) -> object:
    try:
        return loads(_box(join_key).decrypt(blob))
    except (nacl.exceptions.CryptoError, ValueError, TypeError, EncodingError):
        raise KnockError("not sealed under this invite's join key") from None


def seal_knock(join_key: bytes, tag: bytes, identity: Identity) -> bytes:
    """The newcomer's knock: its identity key, signed with the invite's tag."""
    key = identity.public_key
    body = dumps([key, identity.sign(KNOCK_CONTEXT + tag + key)])
    return bytes(_box(join_key).encrypt(body, os.urandom(24)))


def open_knock(join_key: bytes, tag: bytes, blob: bytes) -> bytes:
    """The identity key a knock names, once its signature holds."""
    fields = _open(join_key, blob)
    if not (isinstance(fields, list) and len(fields) == 2
            and all(isinstance(f, bytes) for f in fields) and len(fields[0]) == 32
            and verify(fields[0], KNOCK_CONTEXT + tag + fields[0], fields[1])):
        raise KnockError("a knock not signed by the key it names")
    return fields[0]


def seal_answer(join_key: bytes, key: bytes, epoch: int, secret: bytes | None,
                reason: str | None = None) -> bytes:
    """A member node's answer: the newest epoch's secret sealed to `key`, or why not."""
    body = {"epoch": epoch, "sealed": seal_to(key, secret)} if secret is not None else {
        "refused": (reason or "not admitted")[:MAX_REASON]}
    return bytes(_box(join_key).encrypt(dumps(body), os.urandom(24)))


def open_answer(join_key: bytes, identity: Identity, blob: bytes) -> tuple[int, bytes]:
    """(epoch, its secret) from an answer; KnockError with the member's reason if refused."""
    body = _open(join_key, blob)
    if isinstance(body, dict) and isinstance(body.get("refused"), str):
        raise KnockError(f"not admitted: {body['refused']}")
    if not (isinstance(body, dict) and body.keys() == {"epoch", "sealed"}
            and type(body["epoch"]) is int and body["epoch"] >= 0
            and isinstance(body["sealed"], bytes)):
        raise KnockError("a malformed answer")
    try:
        secret = identity.unseal(body["sealed"])
    except IdentityError:
        raise KnockError("an answer sealed to another key") from None
    if len(secret) != 32:
        raise KnockError("a malformed answer")
    return body["epoch"], secret
