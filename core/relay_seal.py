"""Sealed envelopes for relays: what a member hands a relay instead of an object.

A relay (relay/) stores and forwards envelopes it cannot open. Every key here is derived from
one epoch's workspace secret (core/membership.py "Epochs"), which the relay never sees:

- `box`: the object's signed bytes in a SecretBox (XSalsa20-Poly1305) under the epoch's box key.
  The nonce is the opaque id (zero-padded to 24 bytes), which no other object shares under that
  key, so it travels in no field of its own.
- `opaque`: a keyed BLAKE2b (128 bits) of the object's id under the epoch's id key: the relay cannot tell
  which object, author, channel or stream an envelope holds, nor link two envelopes of a stream.
- `bucket`: the object's time, coarsened to BUCKET_MS, so members reconcile newest first.
- chunks of attached files: named by a keyed hash of the chunk id; their bytes are already
  ciphertext under the file's key.
- signals (typing, presence): a sender-signed body in a box under the epoch's signal key,
  forwarded to the members connected now and never stored.
- the token: an Ed25519 key pair seeded by the epoch secret. The relay holds only its public
  half (an admin registers it, and moves it at each rotation), and a member proves it by signing
  the relay session's handshake hash: a removed member, who lacks the new epoch's secret, is
  refused once the workspace has moved.

Opening checks the box and that the opaque id is the one its content's id gives, so a relay
cannot pass one envelope off as another; what opens is then an object like any other, checked
(signature and all) on the one ingest path: a relay can drop or withhold, never forge.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import NamedTuple

import nacl.exceptions
import nacl.secret

from .encoding import EncodingError, dumps, loads, object_id
from .identity import Identity, verify

KEY_SIZE = 32
OPAQUE_SIZE = 16  # 128 bits: no two of a workspace's objects share one (birthday bound 2^64)
BUCKET_MS = 3_600_000  # one hour: coarse enough that timing within it is hidden
MAX_BUCKET = (1 << 48) - 1
OVERHEAD = nacl.secret.SecretBox.MACBYTES  # bytes a box adds to the object
SPACE_SIZE = 32

_BOX_PERSON = b"hearth-rly-box"
_ID_PERSON = b"hearth-rly-id"
_TOKEN_PERSON = b"hearth-rly-token"
_SPACE_PERSON = b"hearth-rly-space"
_SIGNAL_PERSON = b"hearth-rly-sig"
SIGNAL_CONTEXT = b"hearth-relay-signal/1"
_CHUNK_LABEL = b"chunk:"  # chunk names and opaque ids never collide (object ids are 32 bytes)
MAX_SIGNAL = 1024  # a signal's body (typing, a cursor): what members pass through, never stored
TOKEN_CONTEXT = b"hearth-relay-token/1"  # signed with the handshake hash: a proof for one session


class SealError(ValueError):
    """An envelope that does not open under these keys (or was tampered with)."""


class Envelope(NamedTuple):
    """What a relay stores: an opaque id, a coarse time and a box."""

    opaque: bytes
    bucket: int
    box: bytes


def _derive(secret: bytes, person: bytes) -> bytes:
    if len(secret) != KEY_SIZE:
        raise ValueError("an epoch secret is 32 bytes")
    return hashlib.blake2b(secret, digest_size=KEY_SIZE, person=person).digest()


def _nonce(opaque: bytes) -> bytes:
    return opaque + bytes(24 - len(opaque))


def space_id(workspace: bytes) -> bytes:
    """What names a workspace on a relay (its id is not told: only that it exists)."""
    return hashlib.blake2b(workspace, digest_size=SPACE_SIZE, person=_SPACE_PERSON).digest()


def bucket_of(ts_ms: int) -> int:
    return min(max(ts_ms, 0) // BUCKET_MS, MAX_BUCKET)


@dataclass(frozen=True)
class EpochKeys:
    """The relay keys of one epoch, derived from its workspace secret."""

    epoch: int
    box_key: bytes
    id_key: bytes
    token: Identity
    signal_key: bytes

    @classmethod
    def derive(cls, epoch: int, secret: bytes) -> EpochKeys:
        return cls(epoch, _derive(secret, _BOX_PERSON), _derive(secret, _ID_PERSON),
                   Identity.from_seed(_derive(secret, _TOKEN_PERSON)),
                   _derive(secret, _SIGNAL_PERSON))

    def __repr__(self) -> str:  # never print a key
        return f"EpochKeys(epoch={self.epoch})"

    @property
    def token_key(self) -> bytes:
        """The public half of the token: what an admin registers with a relay."""
        return self.token.public_key

    def opaque(self, oid: bytes) -> bytes:
        return hashlib.blake2b(oid, digest_size=OPAQUE_SIZE, key=self.id_key).digest()

    def chunk_name(self, cid: bytes) -> bytes:
        """What names a chunk of an attached file on the relay. The chunk's bytes go as they
        are: ciphertext under its file's key already (core.attachments), checked against
        its id by whoever fetches it."""
        return hashlib.blake2b(_CHUNK_LABEL + cid, digest_size=OPAQUE_SIZE,
                               key=self.id_key).digest()

    def seal(self, raw: bytes, ts_ms: int) -> Envelope:
        opaque = self.opaque(object_id(raw))
        box = nacl.secret.SecretBox(self.box_key).encrypt(raw, _nonce(opaque)).ciphertext
        return Envelope(opaque, bucket_of(ts_ms), box)

    def open(self, envelope: Envelope) -> bytes:
        """The object's bytes (not yet checked as an object: ingest does that)."""
        try:
            raw = nacl.secret.SecretBox(self.box_key).decrypt(
                envelope.box, _nonce(envelope.opaque))
        except (nacl.exceptions.CryptoError, ValueError, TypeError):
            raise SealError("an envelope that does not open under this epoch's key") from None
        if self.opaque(object_id(raw)) != envelope.opaque:
            raise SealError("an envelope whose opaque id is not its content's")
        return raw

    def seal_signal(self, sender: Identity, body: bytes) -> bytes:
        """A signal for the members connected now (typing, presence), signed by `sender` so
        the receivers know whose it is, in a box under the epoch's signal key."""
        if len(body) > MAX_SIGNAL:
            raise ValueError(f"a signal is at most {MAX_SIGNAL} bytes")
        signed = dumps([sender.public_key, sender.sign(SIGNAL_CONTEXT + body), body])
        return bytes(nacl.secret.SecretBox(self.signal_key).encrypt(signed, os.urandom(24)))

    def open_signal(self, blob: bytes) -> tuple[bytes, bytes]:
        """(sender's key, body) of a signal; SealError for anything not sealed and signed so."""
        try:
            fields = loads(nacl.secret.SecretBox(self.signal_key).decrypt(blob))
        except (nacl.exceptions.CryptoError, ValueError, TypeError, EncodingError):
            raise SealError("a signal that does not open under this epoch's key") from None
        if not (isinstance(fields, list) and len(fields) == 3
                and all(isinstance(f, bytes) for f in fields) and len(fields[2]) <= MAX_SIGNAL
                and verify(fields[0], SIGNAL_CONTEXT + fields[2], fields[1])):
            raise SealError("a signal not signed by its sender")
        return fields[0], fields[2]

    def prove(self, handshake_hash: bytes) -> bytes:
        """The token's signature for one session (bound to its Noise handshake)."""
        return self.token.sign(TOKEN_CONTEXT + handshake_hash)


def token_valid(token_key: bytes, handshake_hash: bytes, proof: bytes) -> bool:
    """Whether `proof` is the token's signature for the session with `handshake_hash`."""
    return verify(token_key, TOKEN_CONTEXT + handshake_hash, proof)
