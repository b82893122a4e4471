"""Emoji names, Qt-free: the `emoji` package's CLDR short names as `:shortcode:`s."""

from __future__ import annotations

import emoji


def shortcode(text: str) -> str | None:
    """`:thumbs_up:` for "👍" (skin tones and variation selectors included), None when `text`
    is not one emoji."""
    if not emoji.purely_emoji(text) or emoji.emoji_count(text) != 1:
        return None
    name = emoji.demojize(text)
    return name if name != text else None
