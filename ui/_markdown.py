"""The Markdown of message rows, decided without Qt: which texts need the Markdown engine at all
(most chat lines do not, and keep the plain fast path), how a chat text becomes Markdown source
(every typed line break is a line break, as in any chat), which link targets may open, and how
far a code block scrolls sideways.

Qt's own engine (QTextDocument.setMarkdown, md4c) renders the source in ui/message_delegate.py;
tests/ui/test_message_markdown.py checks these functions without a display.
"""

from __future__ import annotations

import re

# Inline syntax: emphasis, code spans, strikethrough, escapes, links and images, autolinks
# (<https://...>) and character references (&amp;). A lone "<b>" is not here: raw HTML is
# shown as typed, which the plain path does anyway.
_INLINE = re.compile(r"[*_`~\[\\]|<[A-Za-z][\w+.-]*:|"
                     r"&(?:#\d{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
# Block syntax at a line's start: quotes, headings, bullets, numbered items, setext
# underlines and rules, indented code.
_BLOCK = re.compile(r"^(?: {0,3}(?:>|#{1,6}(?:[ \t]|$)|[-+*][ \t]|\d{1,9}[.)](?:[ \t]|$)"
                    r"|=+[ \t]*$|-+[ \t]*$)| {4}|\t)", re.MULTILINE)
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
SAFE_SCHEMES = ("http", "https", "mailto")
BREAK = "\ue000"  # a private-use character: what chat_source ends lines with
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_PUNCTUATION = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def closes_fence(line: str, fence: str) -> bool:
    """Whether `line` closes the fenced code block `fence` opened (CommonMark: the same
    character, at least as many of it, and nothing after)."""
    match = FENCE.match(line)
    return (match is not None and match.group(1)[0] == fence[0]
            and len(match.group(1)) >= len(fence) and not line[match.end():].strip())


def has_markup(text: str) -> bool:
    """Whether `text` may read differently as Markdown. False for most chat lines: those are
    laid out as plain text, which is several times cheaper."""
    return _INLINE.search(text) is not None or _BLOCK.search(text) is not None


def chat_source(text: str) -> str:
    """`text` as Markdown source where each line break the person typed stays a line break
    (CommonMark would join the lines of a paragraph): BREAK ends every line outside code
    blocks, which are kept as typed. The engine reads BREAK as text and the line's end as a
    space, and the renderer turns the two into a line break inside the paragraph (a Markdown
    hard break would start a new block, with a paragraph's spacing)."""
    if "\n" not in text:
        return text
    lines = text.replace(BREAK, "").split("\n")
    out = []
    fence: str | None = None  # the open fence's characters, inside a fenced block
    indented = False  # inside an indented code block
    previous_blank = True
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        blank = not line.strip()
        if fence is not None:
            if closes_fence(line, fence):
                fence = None
            out.append(line)
        elif (match := FENCE.match(line)) is not None:
            fence = match.group(1)
            out.append(line)
        elif indented and (blank or line.startswith(("    ", "\t"))):
            out.append(line)
        elif previous_blank and line.startswith(("    ", "\t")) and not blank:
            indented = True
            out.append(line)
        else:
            indented = False
            joined = last or blank or not lines[i + 1].strip()  # a paragraph's end
            out.append(line if joined else line + BREAK)
        previous_blank = blank
    return "\n".join(out)


def escape(text: str) -> str:
    """`text` with Markdown's punctuation escaped, so it shows as typed (a name in a /me row)."""
    return "".join("\\" + c if c in _PUNCTUATION else c for c in text)


def safe_url(url: str) -> bool:
    """Whether a link may open: web and mail addresses only, never file:, javascript: or an
    application's own scheme. A target with no scheme is not a link either."""
    match = _SCHEME.match(url.strip())
    return match is not None and match.group(1).lower() in SAFE_SCHEMES


def clamp_scroll(offset: float, content: float, visible: float) -> float:
    """A code block's sideways scroll: between 0 and how far its widest line overflows."""
    return max(0.0, min(offset, max(0.0, content - visible)))
