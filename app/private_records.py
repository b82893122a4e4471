"""The record of a private channel or direct message as its member reads it (app/private.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PrivateChannel:
    """A private channel or direct message I am in, as I read it."""

    id: bytes
    name: str  # its name; for a direct message, the other person's nickname (or key prefix)
    dm: bool
    creator: bytes
    members: tuple[bytes, ...]  # in it now, oldest member first (the creator)

    @property
    def hex(self) -> str:
        return self.id.hex()
