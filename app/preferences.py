"""The window's preferences for a data folder (today: light, dark or the system's appearance),
kept in `preferences.json` beside the identity. A file that is missing, unreadable or holds
something else reads as the defaults, so a bad file never keeps the window from opening."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

APPEARANCES = ("system", "light", "dark")
FILE = "preferences.json"
MAX_BYTES = 64 * 1024


class PreferenceError(ValueError):
    """A preference value that does not exist."""


@dataclass(frozen=True)
class Preferences:
    appearance: str = "system"  # one of APPEARANCES


def load(data: Path) -> Preferences:
    path = Path(data) / FILE
    try:
        if path.stat().st_size > MAX_BYTES:
            return Preferences()
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Preferences()
    if not isinstance(stored, dict):
        return Preferences()
    appearance = stored.get("appearance")
    return Preferences(appearance if appearance in APPEARANCES else "system")


def save(data: Path, **changes: str) -> Preferences:
    """Change preferences by name (written whole, atomically); answers what is stored now."""
    if "appearance" in changes and changes["appearance"] not in APPEARANCES:
        raise PreferenceError(f"appearance must be one of {', '.join(APPEARANCES)}, "
                              f"not {changes['appearance']!r}")
    prefs = replace(load(data), **changes)
    folder = Path(data)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=folder, prefix=".preferences-", delete=False,
                                     encoding="utf-8") as tmp:
        json.dump(asdict(prefs), tmp)
    os.replace(tmp.name, folder / FILE)
    return prefs
