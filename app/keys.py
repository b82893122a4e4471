"""Keys and ids as people type and read them (a leaf: the library and its commands share it)."""

from __future__ import annotations

from .errors import WorkspaceError

SHORT_KEY = 8  # hex digits of a key that name a person in lists and refusals


def parse_key(text: str, what: str = "key") -> bytes:
    """A 32-byte key or id given as 64 hex characters."""
    try:
        value = bytes.fromhex(text.strip())
    except ValueError:
        value = b""
    if len(value) != 32:
        raise WorkspaceError(f"{what} must be 64 hexadecimal characters, got {text!r}")
    return value
