"""Invite codes, typed or pasted by a person, so a mistyped or truncated code must be refused,
never half-used. A code names the workspace and its root admin's key, and then either:

- an invite's seed (version 2, `hearth invite`): whoever holds the code proves it to any
  member's node, which checks the invite's signed half (uses, expiry, revocation) and admits
  them; the code holds no secret of the workspace;
- the workspace secret sealed to one person's key (version 3, `hearth invite --for KEY`):
  only that person can open it, so it admits no one else, online or not.

Version 1 codes held the workspace secret itself; they are refused with a word on why.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

_CHECKSUM = 5
_SEED = 32
_SEALED = 80  # a sealed box of the 32-byte secret: ephemeral key 32, secret 32, MAC 16
_INVITE, _PERSONAL = 2, 3
_SIZES = {1: 1 + 96, _INVITE: 1 + 64 + _SEED, _PERSONAL: 1 + 64 + _SEALED}
PREFIX = "hearth-"


class InviteError(ValueError):
    """A code that is not a valid invite, said in one line."""


@dataclass(frozen=True)
class Invite:
    workspace: bytes
    root: bytes
    seed: bytes | None = None  # an invite's: proves the code to a member's node
    sealed: bytes | None = None  # a personal code's: the workspace secret, sealed

    def __post_init__(self) -> None:
        if (self.seed is None) == (self.sealed is None):
            raise ValueError("an invite code holds a seed or a sealed secret, not both")

    @property
    def personal(self) -> bool:
        return self.sealed is not None

    def encode(self) -> str:
        version = _PERSONAL if self.personal else _INVITE
        secret = self.sealed if self.sealed is not None else self.seed
        assert secret is not None  # __post_init__: one of the two
        payload = bytes([version]) + self.workspace + self.root + secret
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
        if not data:
            raise InviteError("that invite code is empty; copy it again")
        version = data[0]
        if version > max(_SIZES):
            raise InviteError(f"invite code version {version} needs a newer Hearth")
        if version not in _SIZES:
            raise InviteError("that is not an invite code (it is damaged or not Hearth's); "
                              "copy it again")
        if len(data) != _SIZES[version] + _CHECKSUM:
            raise InviteError("that invite code is incomplete or too long; copy it again")
        payload, checksum = data[:-_CHECKSUM], data[-_CHECKSUM:]
        if hashlib.blake2b(payload, digest_size=_CHECKSUM).digest() != checksum:
            raise InviteError("that invite code has a typo (its checksum does not match)")
        if version == 1:
            raise InviteError("that is an old invite code, which held the workspace's secret; "
                              "ask a member for a new one (`hearth invite`)")
        workspace, root, rest = payload[1:33], payload[33:65], payload[65:]
        if version == _PERSONAL:
            return cls(workspace, root, sealed=rest)
        return cls(workspace, root, seed=rest)
