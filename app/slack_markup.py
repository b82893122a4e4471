"""Slack's message markup and Markdown, both ways (app/slack_import.py reads exports,
app/archive_json.py writes them).

Slack: :emoji: shortcodes, *bold*, _italic_, ~strike~, `code`, ```blocks```, <@U123> and <@U123|name> mentions,
<#C123|name> channels, <!here> <!channel> <!everyone>, <!subteam^S1|@team>, <!date^..|text>,
<url|label> and <url> links, and &amp; &lt; &gt; escapes. Markdown: **bold**, *italic*,
~~strike~~, [label](url), @name, #channel. Code spans and blocks are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

_CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.S)
_ANGLE = re.compile(r"<([^<>\n]+)>")
_BOLD = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])")
_STRIKE = re.compile(r"(?<![\w~])~(?=\S)([^~\n]+?)(?<=\S)~(?![\w~])")
_MARKS = re.compile(r"[*_~<&]")
_HELD = re.compile("\x01(\\d+)\x01")
_SPECIAL = {"here": "@here", "channel": "@channel", "everyone": "@everyone"}


def _strike(match: re.Match[str]) -> str:
    return f"~~{match.group(1)}~~"


def _held_bold(match: re.Match[str]) -> str:  # "**" once italics are done
    return f"\x00{match.group(1)}\x00"


def _italic(match: re.Match[str]) -> str:
    return f"*{match.group(1)}*"


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _split_code(text: str, plain: Callable[[str], str]) -> str:
    """`plain` applied to every part of `text` outside code spans and blocks."""
    if "`" not in text:
        return plain(text)
    parts = _CODE.split(text)
    return "".join(part if n % 2 else plain(part) for n, part in enumerate(parts))


def _emojize(text: str) -> str:
    """Slack's :shortcodes: (":wave:", ":+1:") as the emoji they name; others stay."""
    import emoji

    return emoji.emojize(text, language="alias")


def to_markdown(text: str, users: Mapping[str, str], channels: Mapping[str, str]) -> str:
    """Slack markup as Markdown; `users` and `channels` name Slack's ids."""

    def angle(match: re.Match[str]) -> str:
        inner = match.group(1)
        target, _, label = inner.partition("|")
        if target.startswith("@"):
            return "@" + (label or users.get(target[1:], target[1:]))
        if target.startswith("#"):
            return "#" + (label or channels.get(target[1:], target[1:]))
        if target.startswith("!"):
            word = target[1:]
            if word in _SPECIAL:
                return _SPECIAL[word]
            if word.startswith("subteam^"):
                return label or "@" + word.removeprefix("subteam^")
            return label or "@" + word.split("^")[0]
        url = _unescape(target)
        return f"[{_unescape(label)}]({url})" if label and label != url else url

    def plain(part: str) -> str:
        if not _MARKS.search(part):
            return _emojize(part) if ":" in part else part
        held: list[str] = []

        def hold(match: re.Match[str]) -> str:
            held.append(angle(match))
            return f"\x01{len(held) - 1}\x01"

        # Each pass only where its mark is in the text: most messages have one or two.
        if "<" in part:
            part = _ANGLE.sub(hold, part)
        if ":" in part:
            part = _emojize(part)
        if "~" in part:
            part = _STRIKE.sub(_strike, part)
        if "*" in part:
            part = _BOLD.sub(_held_bold, part)
        if "_" in part:
            part = _ITALIC.sub(_italic, part)
        if "\x00" in part:
            part = part.replace("\x00", "**")
        if "&" in part:
            part = _unescape(part)
        return _HELD.sub(lambda m: held[int(m.group(1))], part) if held else part

    return _split_code(text, plain)


_MD_LINK = re.compile(r"\[([^\[\]\n]+)\]\((\S+?)\)")
_MD_BOLD = re.compile(r"\*\*(?=\S)([^*\n]+?)(?<=\S)\*\*")
_MD_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_MD_STRIKE = re.compile(r"~~(?=\S)([^~\n]+?)(?<=\S)~~")
_URL = re.compile(r"(?<![\w<|(])(https?://[^\s<>]+)")


def to_slack(text: str, users: Mapping[str, str], channels: Mapping[str, str]) -> str:
    """Markdown as Slack markup, so that to_markdown gives `text` back; `users` and
    `channels` map names to Slack's ids (a name not listed stays text)."""
    mention = re.compile(r"(?<![\w@])@([\w.\-]+)")
    channel = re.compile(r"(?<![\w#])#([\w.\-]+)")

    def plain(part: str) -> str:
        links: list[str] = []

        def hold(value: str) -> str:
            links.append(value)
            return f"\x01{len(links) - 1}\x01"

        part = _MD_LINK.sub(lambda m: hold(f"<{_escape(m.group(2))}|{_escape(m.group(1))}>"),
                            part)
        part = _URL.sub(lambda m: hold(f"<{_escape(m.group(1))}>"), part)
        part = _escape(part)
        part = _MD_BOLD.sub(lambda m: f"\x00{m.group(1)}\x00", part)
        part = _MD_ITALIC.sub(lambda m: f"_{m.group(1)}_", part)
        part = _MD_STRIKE.sub(lambda m: f"~{m.group(1)}~", part).replace("\x00", "*")

        def who(m: re.Match[str]) -> str:
            word = m.group(1)
            if "@" + word in _SPECIAL.values():
                return f"<!{word}>"
            return f"<@{users[word]}>" if word in users else m.group(0)

        part = mention.sub(who, part)
        part = channel.sub(lambda m: f"<#{channels[m.group(1)]}|{m.group(1)}>"
                           if m.group(1) in channels else m.group(0), part)
        return _HELD.sub(lambda m: links[int(m.group(1))], part)

    return _split_code(text, plain)
