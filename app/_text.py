"""Text from objects made safe for a terminal: what every `hearth` command prints goes here.

Everything a member writes (messages, topics, nicknames, channel names, document titles and
text, branch and tag names) arrives signed from peers, so it is the attacker's text. Printed
raw, a carriage return or an ANSI escape rewrites the line (a message passes for another
author's, with that author's real key), a bidi override reorders it, and a newline starts a
line that looks like a header of its own. Here every control, format and line-separator
character is spelled out visibly instead ("\\r", "\\x1b", "\\u202e"), and a message's own lines
are indented under its header, so nothing a peer wrote can start a line of output.

Kept as they are: the zero-width joiner and non-joiner (emoji sequences and many scripts need
them; they move nothing). JSON output escapes the same characters as \\uXXXX, which decodes
to the very same text.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

_KEEP = frozenset("\u200c\u200d")  # zero-width non-joiner and joiner
_UNSAFE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
CONTINUATION = "  | "  # starts each further line of a multi-line message


def unsafe(ch: str) -> bool:
    """Whether a terminal could act on `ch` rather than draw it: C0 and C1 controls and
    DEL (Cc), format characters such as the bidi overrides and isolates (Cf), line and
    paragraph separators (Zl, Zp) and lone surrogates (Cs)."""
    if ch.isprintable():
        return False  # the common case, quickly: isprintable is False for all of the above
    return ch not in _KEEP and unicodedata.category(ch) in _UNSAFE


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    point = ord(ch)
    if point <= 0xFF:
        return f"\\x{point:02x}"
    if point <= 0xFFFF:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def line(text: Any) -> str:
    """`text` as one line a terminal draws as it is: nothing can move the cursor, end the
    line or reorder it."""
    text = "" if text is None else str(text)
    if text.isprintable():
        return text
    return "".join(_escape(ch) if unsafe(ch) else ch for ch in text)


def lines(text: str, *, keep_tabs: bool = True) -> list[str]:
    """A multi-line text (a message, a document) as safe lines: split at its newlines (a
    CR LF counts as one), each line made safe like `line`; tabs are kept."""
    out = []
    for part in text.replace("\r\n", "\n").split("\n"):
        if keep_tabs and "\t" in part:
            out.append("\t".join(line(piece) for piece in part.split("\t")))
        else:
            out.append(line(part))
    return out


def block(text: str) -> str:
    """A message's text after its header: its first line, then each further line indented
    with CONTINUATION, so no line a peer wrote starts at the left margin."""
    first, *rest = lines(text)
    return "\n".join([first, *(CONTINUATION + part for part in rest)])


def _json_escape(ch: str) -> str:
    point = ord(ch)
    if point <= 0xFFFF:
        return f"\\u{point:04x}"
    point -= 0x10000
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """JSON for a terminal: readable Unicode, but every character `unsafe` escapes as
    \\uXXXX (json.dumps escapes only C0 controls; DEL, C1 controls and bidi overrides would
    reach the terminal raw). Such characters only ever occur inside JSON strings, so the
    escaped text decodes to the same value."""
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    if not any(unsafe(ch) for ch in text if ch != "\n"):  # indent's newlines are its own
        return text
    return "".join(_json_escape(ch) if ch != "\n" and unsafe(ch) else ch for ch in text)


def counted(count: int, word: str) -> str:
    """"1 message", "2 messages": a count and its noun, plural unless one."""
    return f"{count} {word}{'' if count == 1 else 's'}"
