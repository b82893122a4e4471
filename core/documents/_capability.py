"""Capabilities: read access to one branch (its keys by epoch), as text a person can copy."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

import nacl.secret

from .. import encoding
from ._records import DocumentError

KEY_SIZE = nacl.secret.SecretBox.KEY_SIZE
CAP_PREFIX = "hearthcap1-"
_CAP_CHECKSUM = 4


@dataclass(frozen=True)
class Capability:
    """Read access to one branch: its keys, by epoch."""

    document: bytes
    branch: bytes
    keys: tuple[tuple[int, bytes], ...]

    def encode(self) -> str:
        data = encoding.dumps({"d": self.document, "b": self.branch,
                               "k": [[epoch, key] for epoch, key in self.keys]})
        data += hashlib.blake2b(data, digest_size=_CAP_CHECKSUM).digest()
        return CAP_PREFIX + base64.b32encode(data).decode().rstrip("=").lower()

    @classmethod
    def decode(cls, text: str) -> Capability:
        text = "".join(text.split()).lower()
        if not text.startswith(CAP_PREFIX):
            raise DocumentError("that is not a Hearth read capability")
        body = text[len(CAP_PREFIX):].upper()
        try:
            data = base64.b32decode(body + "=" * (-len(body) % 8))
        except ValueError:
            raise DocumentError("that capability has characters it cannot have") from None
        payload, checksum = data[:-_CAP_CHECKSUM], data[-_CAP_CHECKSUM:]
        if hashlib.blake2b(payload, digest_size=_CAP_CHECKSUM).digest() != checksum:
            raise DocumentError("that capability is damaged or incomplete; copy it again")
        try:
            record = encoding.loads(payload)
            keys = tuple((e, bytes(k)) for e, k in record["k"])
            cap = cls(bytes(record["d"]), bytes(record["b"]), keys)
        except (encoding.EncodingError, KeyError, TypeError, ValueError):
            raise DocumentError("that capability is damaged") from None
        if len(cap.document) != 32 or len(cap.branch) != 32 or not keys or any(
                type(e) is not int or not 0 <= e < 2**63 or len(k) != KEY_SIZE
                for e, k in keys):
            raise DocumentError("that capability is damaged")
        return cap
