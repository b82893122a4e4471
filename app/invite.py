"""Invite codes: the workspace secret, the workspace id and the root admin's key, typed or
pasted by a person, so a mistyped or truncated code must be refused, never half-used."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

_VERSION = 1
_CHECKSUM = 5
_SIZE = 1 + 32 + 32 + 32 + _CHECKSUM
PREFIX = "hearth-"


class InviteError(ValueError):
    """A code that is not a valid invite, said in one line."""


@dataclass(frozen=True)
class Invite:
    secret: bytes
    workspace: bytes
    root: bytes

    def encode(self) -> str:
        payload = bytes([_VERSION]) + self.secret + self.workspace + self.root
        data = payload + hashlib.blake2b(payload, digest_size=_CHECKSUM).digest()
        text = base64.b32encode(data).decode().rstrip("=").lower()
        groups = [text[i:i + 6] for i in range(0, len(text), 6)]
        return PREFIX + "-".join(groups)

    @classmethod
    def decode(cls, code: str) -> Invite:
        text = "".join(code.strip().lower().split())
        if text.startswith(PREFIX):
            text = text[len(PREFIX):]
        text = text.replace("-", "").upper()
        try:
            data = base64.b32decode(text + "=" * (-len(text) % 8))
        except ValueError:
            raise InviteError("that is not an invite code (unexpected characters)") from None
        if len(data) != _SIZE:
            raise InviteError("that invite code is incomplete or too long; copy it again")
        payload, checksum = data[:-_CHECKSUM], data[-_CHECKSUM:]
        if hashlib.blake2b(payload, digest_size=_CHECKSUM).digest() != checksum:
            raise InviteError("that invite code has a typo (its checksum does not match)")
        if payload[0] != _VERSION:
            raise InviteError(f"invite code version {payload[0]} needs a newer Hearth")
        return cls(payload[1:33], payload[33:65], payload[65:97])
