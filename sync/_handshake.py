"""The Noise handshake that opens a session, and the Noise state that then encrypts it (part of
sync.session.Session).

The first three messages are a Noise_XXpsk0_25519_ChaChaPoly_BLAKE2b handshake with the
workspace secret as the pre-shared key, so a computer without the secret learns nothing and can
inject nothing. A responder also takes a handshake under an older epoch's secret (a member who
has not heard of the newest epoch yet catches up); `old_epoch` says it did.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from noise.connection import Keypair, NoiseConnection
from noise.exceptions import NoiseHandshakeError, NoiseInvalidMessage, NoiseValueError

from core.identity import Identity, verify

from ._errors import SessionError

if TYPE_CHECKING:
    from .session import Session

NOISE_PROTOCOL = b"Noise_XXpsk0_25519_ChaChaPoly_BLAKE2b"
PROLOGUE = b"hearth/1"
HELLO_CONTEXT = b"hearth-hello/1"
MAX_HANDSHAKE_MESSAGE = 1024


class Handshake:
    """The session's Noise state: `noise` encrypts and decrypts every message once `finished`."""

    def __init__(self, session: Session, secret: bytes, older_secrets: tuple[bytes, ...]):
        self._session = session
        self.noise = self._noise_for(secret)
        self._older = () if session.initiator else tuple(older_secrets)
        self._heard = False  # the responder has read the initiator's first message
        self.old_epoch = False
        if session.initiator:
            session.send_raw(self.noise.write_message())

    @property
    def finished(self) -> bool:
        return bool(self.noise.handshake_finished)

    def read(self, data: bytes) -> None:
        """One handshake message from the peer; the reply, if one is due, goes out."""
        if len(data) > MAX_HANDSHAKE_MESSAGE:
            raise SessionError("handshake message too large")
        try:
            if self._session.initiator or self._heard:
                self.noise.read_message(data)
            else:
                self._first_message(data)
            if not self.noise.handshake_finished:
                self._session.send_raw(self.noise.write_message())
        except (NoiseHandshakeError, NoiseInvalidMessage, NoiseValueError, ValueError) as exc:
            raise SessionError(f"handshake failed (wrong workspace secret?): {exc!r}") from None
        except Exception as exc:  # cryptography's InvalidTag and friends
            raise SessionError(f"handshake failed (wrong workspace secret?): {exc!r}") from None

    def proof(self, identity: Identity) -> bytes:
        """`identity`'s signature of this handshake: the hello's `sig`."""
        return identity.sign(HELLO_CONTEXT + self.noise.get_handshake_hash())

    def verify(self, key: bytes, sig: bytes) -> bool:
        """Whether `sig` is `key`'s signature of this handshake (the peer's hello)."""
        return verify(key, HELLO_CONTEXT + self.noise.get_handshake_hash(), sig)

    def _noise_for(self, secret: bytes) -> NoiseConnection:
        noise = NoiseConnection.from_name(NOISE_PROTOCOL)
        if self._session.initiator:
            noise.set_as_initiator()
        else:
            noise.set_as_responder()
        noise.set_keypair_from_private_bytes(Keypair.STATIC, os.urandom(32))
        noise.set_psks(psk=secret)
        noise.set_prologue(PROLOGUE)
        noise.start_handshake()
        return noise

    def _first_message(self, data: bytes) -> None:
        """Read the initiator's first message under the newest secret, else an older one
        (its AEAD tag tells them apart)."""
        self._heard = True
        try:
            self.noise.read_message(data)
            return
        except Exception:  # not the newest epoch's
            if not self._older:
                raise
        for secret in self._older:
            noise = self._noise_for(secret)
            try:
                noise.read_message(data)
            except Exception:  # noqa: S112 - not this epoch's either: the next
                continue
            self.noise, self.old_epoch = noise, True
            return
        raise SessionError("no epoch's secret reads it")
