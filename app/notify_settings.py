"""Notification settings, kept in the data folder's `notifications.json` beside
`preferences.json` (app/preferences.py): this computer's preferences, never synced, since
how loudly a channel may call for me is a choice for each of my computers (a muted laptop
and a phone-like desktop that hears everything), and no other member should learn it. The
keywords, do not disturb and whether text shows hold for every workspace of the data folder;
levels are per workspace (by its id), per conversation (app.notify_rules.conversation_key).

A file that is missing, too large, unreadable or holds something else reads as the defaults,
and what it holds that is not a setting is ignored; writes are whole and atomic."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from .notify_rules import (
    LEVELS,
    NotifySettings,
    Rule,
    Schedule,
    check_keywords,
    parse_schedule,
)

FILE = "notifications.json"
MAX_BYTES = 256 * 1024
MAX_RULES = 4096  # conversations with a level of their own, per workspace


def _raw(data: Path) -> dict[str, Any]:
    path = Path(data) / FILE
    try:
        if path.stat().st_size > MAX_BYTES:
            return {}
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return stored if isinstance(stored, dict) else {}


def _time(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value < 1e12 else None


def _rules(stored: object) -> dict[str, Rule]:
    out: dict[str, Rule] = {}
    if not isinstance(stored, dict):
        return out
    for key, rule in list(stored.items())[:MAX_RULES]:
        if isinstance(key, str) and isinstance(rule, dict) and rule.get("level") in LEVELS:
            out[key] = Rule(rule["level"], _time(rule.get("until")))
    return out


def _schedule(value: object) -> Schedule | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_schedule(value)
    except ValueError:
        return None


def _keywords(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(w, str) for w in value):
        return ()
    try:
        return check_keywords(value)
    except ValueError:
        return ()


def load(data: Path, workspace: bytes) -> NotifySettings:
    """The settings of `workspace` (its id) on this computer."""
    raw = _raw(data)
    levels = raw.get("levels")
    return NotifySettings(
        rules=_rules(levels.get(workspace.hex()) if isinstance(levels, dict) else None),
        keywords=_keywords(raw.get("keywords")),
        show_text=raw.get("show_text") is not False,
        paused=raw.get("paused") is True,
        paused_until=_time(raw.get("paused_until")),
        schedule=_schedule(raw.get("schedule")))


def _write(data: Path, raw: dict[str, Any]) -> None:
    folder = Path(data)
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(raw)
    if len(text.encode()) > MAX_BYTES:
        raise ValueError("too many notification settings on this computer")
    with tempfile.NamedTemporaryFile("w", dir=folder, prefix=".notifications-", delete=False,
                                     encoding="utf-8") as tmp:
        tmp.write(text)
    os.replace(tmp.name, folder / FILE)


def _stored(data: Path, workspace: bytes) -> tuple[dict[str, Any], NotifySettings]:
    """What the file holds now, rewritten from what reads back (so nothing unreadable is
    kept), and the workspace's settings."""
    raw = _raw(data)
    stored = raw.get("levels")
    levels: dict = stored if isinstance(stored, dict) else {}
    clean: dict[str, Any] = {"levels": {ws: {k: {"level": r.level, "until": r.until}
                                             for k, r in _rules(rules).items()}
                                        for ws, rules in levels.items() if isinstance(ws, str)}}
    settings = load(data, workspace)
    clean.update(keywords=list(settings.keywords), show_text=settings.show_text,
                 paused=settings.paused, paused_until=settings.paused_until,
                 schedule=str(settings.schedule) if settings.schedule else None)
    return clean, settings


def set_level(data: Path, workspace: bytes, conversation: str, level: str | None,
              until: float | None = None) -> NotifySettings:
    """A conversation's own level (None: back to its kind's default), until a time or for
    good."""
    if level is not None and level not in LEVELS:
        raise ValueError(f"a level is one of {', '.join(LEVELS)}, not {level!r}")
    raw, _ = _stored(data, workspace)
    rules = raw["levels"].setdefault(workspace.hex(), {})
    if level is None:
        rules.pop(conversation, None)
    else:
        if conversation not in rules and len(rules) >= MAX_RULES:
            raise ValueError(f"at most {MAX_RULES} conversations have a level of their own")
        rules[conversation] = {"level": level, "until": until}
    _write(data, raw)
    return load(data, workspace)


def save(data: Path, workspace: bytes, **changes: Any) -> NotifySettings:
    """Change keywords, show_text, paused, paused_until or schedule (a Schedule or None)."""
    raw, settings = _stored(data, workspace)
    if "keywords" in changes:
        changes["keywords"] = check_keywords(list(changes["keywords"]))
    settings = replace(settings, **changes)
    raw.update(keywords=list(settings.keywords), show_text=bool(settings.show_text),
               paused=bool(settings.paused), paused_until=settings.paused_until,
               schedule=str(settings.schedule) if settings.schedule else None)
    _write(data, raw)
    return load(data, workspace)
