"""Names to save a received file under: a peer chose the name, so it must never leave its
folder, hide, or name a device (a leaf: the window and the library both use it)."""

from __future__ import annotations

import re
import unicodedata

DEFAULT_NAME = "attachment"
MAX_SAVED_NAME = 255  # bytes of UTF-8: what most file systems allow in one name
# Names Windows keeps for devices, with any extension ("nul.txt" is NUL too).
_DEVICES = frozenset({"con", "prn", "aux", "nul", "conin$", "conout$",
                      *(f"{d}{n}" for d in ("com", "lpt") for n in "123456789¹²³")})
_UNSAFE = re.compile(r'[<>:"|?*]')


def safe_name(name: str) -> str:
    """A file name to save under that never leaves its folder: the last part of any path,
    without control characters, characters Windows refuses, leading dots (which hide a file)
    or trailing dots and spaces; a device name (CON, nul.txt) gets a leading "_"; at most
    MAX_SAVED_NAME bytes, the extension kept; DEFAULT_NAME when nothing is left."""
    name = unicodedata.normalize("NFC", str(name)).replace("\\", "/").split("/")[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")
    name = _UNSAFE.sub("_", name).strip().lstrip(".").rstrip(". ").strip()
    if not name:
        return DEFAULT_NAME
    if name.split(".")[0].rstrip().casefold() in _DEVICES:
        name = "_" + name
    stem, dot, ext = name.rpartition(".")
    if not dot or len(ext.encode()) > 16:
        stem, ext = name, ""
    ext = f".{ext}" if ext else ""
    while len((stem + ext).encode()) > MAX_SAVED_NAME:
        stem = stem[:-1]
    return (stem.rstrip(". ") or DEFAULT_NAME) + ext
