"""Invite codes, typed or pasted by a person, so a mistyped or truncated code must be refused,
never half-used. A code names the workspace and its root admin's key, and then either:

- an invite's seed (version 2, `hearth invite`): whoever holds the code proves it to any
  member's node, which checks the invite's signed half (uses, expiry, revocation) and admits
  them; the code holds no secret of the workspace;
- the workspace secret sealed to one person's key (version 3, `hearth invite --for KEY`):
  only that person can open it, so it admits no one else, online or not.

Versions 4 and 5 are 2 and 3 followed by the relays the workspace syncs through (each its key,
port and host), so someone on another network joins through one (docs/relay.md).

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
_RELAYED = 2  # a version with relays: the version without, plus this
_SIZES = {1: 1 + 96, _INVITE: 1 + 64 + _SEED, _PERSONAL: 1 + 64 + _SEALED}
_NEWEST = _PERSONAL + _RELAYED
MAX_RELAYS = 4  # named in one code (the first ones the workspace names)
_RELAY_KEY = 32
PREFIX = "hearth-"

CodeRelay = tuple[str, int, bytes]  # host, port, the relay's static key


class InviteError(ValueError):
    """A code that is not a valid invite, said in one line."""


@dataclass(frozen=True)
class Invite:
    workspace: bytes
    root: bytes
    seed: bytes | None = None  # an invite's: proves the code to a member's node
    sealed: bytes | None = None  # a personal code's: the workspace secret, sealed
    relays: tuple[CodeRelay, ...] = ()

    def __post_init__(self) -> None:
        if (self.seed is None) == (self.sealed is None):
            raise ValueError("an invite code holds a seed or a sealed secret, not both")

    @property
    def personal(self) -> bool:
        return self.sealed is not None

    def encode(self) -> str:
        version = (_PERSONAL if self.personal else _INVITE) + (_RELAYED if self.relays else 0)
        secret = self.sealed if self.sealed is not None else self.seed
        assert secret is not None  # __post_init__: one of the two
        payload = bytes([version]) + self.workspace + self.root + secret
        if self.relays:
            payload += _encode_relays(self.relays[:MAX_RELAYS])
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
        if version > _NEWEST:
            raise InviteError(f"invite code version {version} needs a newer Hearth")
        relayed = version > _PERSONAL
        base = version - _RELAYED if relayed else version
        if base not in _SIZES:
            raise InviteError("that is not an invite code (it is damaged or not Hearth's); "
                              "copy it again")
        size = _SIZES[base] + _CHECKSUM
        if len(data) != size and not (relayed and len(data) > size):
            raise InviteError("that invite code is incomplete or too long; copy it again")
        payload, checksum = data[:-_CHECKSUM], data[-_CHECKSUM:]
        if hashlib.blake2b(payload, digest_size=_CHECKSUM).digest() != checksum:
            raise InviteError("that invite code has a typo (its checksum does not match)")
        if version == 1:
            raise InviteError("that is an old invite code, which held the workspace's secret; "
                              "ask a member for a new one (`hearth invite`)")
        end = _SIZES[base]
        workspace, root, rest = payload[1:33], payload[33:65], payload[65:end]
        relays = _decode_relays(payload[end:]) if relayed else ()
        if base == _PERSONAL:
            return cls(workspace, root, sealed=rest, relays=relays)
        return cls(workspace, root, seed=rest, relays=relays)


def _encode_relays(relays: tuple[CodeRelay, ...]) -> bytes:
    out = bytearray([len(relays)])
    for host, port, key in relays:
        name = host.encode("idna")
        out += key + port.to_bytes(2, "big") + bytes([len(name)]) + name
    return bytes(out)


def _decode_relays(data: bytes) -> tuple[CodeRelay, ...]:
    damaged = InviteError("the relays in that invite code are damaged; copy it again")
    if not data or not 1 <= data[0] <= MAX_RELAYS:
        raise damaged
    relays, at = [], 1
    for _ in range(data[0]):
        if len(data) < at + _RELAY_KEY + 3:
            raise damaged
        key = data[at:at + _RELAY_KEY]
        port = int.from_bytes(data[at + _RELAY_KEY:at + _RELAY_KEY + 2], "big")
        length = data[at + _RELAY_KEY + 2]
        at += _RELAY_KEY + 3
        name = data[at:at + length]
        at += length
        try:
            host = name.decode("idna")
        except UnicodeError:
            raise damaged from None
        if len(name) != length or not host or not 0 < port < 65536:
            raise damaged
        relays.append((host, port, key))
    if at != len(data):
        raise damaged
    return tuple(relays)
