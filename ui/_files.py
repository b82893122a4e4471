"""What the window shows of attached files, decided without Qt: sizes in words ("2.4 MB", from
app/units.py, as the CLI shows them), how far a download is, which files count as images shown
inline, how big a thumbnail is drawn, which names are programs that Open asks about first, and
what a pasted image is called.

Plain functions over app.records.Attachment, so tests check them without a display."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from pathlib import PurePath

from app.file_names import safe_name
from app.records import Attachment
from app.units import size_label  # one formatter for the window and the CLI

MAX_FILES = 4  # files one message carries (the protocol's limit, core/kinds.py)
MAX_FILE_SIZE = 4 << 30  # one file's largest size (core/attachments.py)
THUMB_MAX = 320  # an inline image's longest side, in pixels
# Names a desktop may run, rather than show, when asked to open them: Open asks first.
EXECUTABLE = frozenset({
    "app", "appimage", "apk", "bat", "bin", "cmd", "com", "command", "cpl", "csh", "deb",
    "desktop", "dll", "dmg", "exe", "gadget", "hta", "inf", "ins", "isp", "jar", "js", "jse",
    "ksh", "lnk", "msc", "msi", "msp", "mst", "pif", "pkg", "pl", "ps1", "ps1xml", "ps2",
    "psc1", "py", "pyw", "rb", "reg", "rpm", "run", "scf", "scr", "sct", "sh", "shb", "so",
    "terminal", "url", "vb", "vbe", "vbs", "workflow", "ws", "wsc", "wsf", "wsh", "zsh",
})
INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"})


def progress_label(have: int, size: int) -> str:
    """"1.2 MB of 2.4 MB" while a file arrives."""
    return f"{size_label(have)} of {size_label(size)}"


def fraction(have: int, size: int) -> float:
    """How much of a file is here, 0 to 1 (an empty file is whole)."""
    return 1.0 if size <= 0 else max(0.0, min(1.0, have / size))


def shows_inline(attachment: Attachment) -> bool:
    """An image with a thumbnail shows as the picture (a card shows the rest)."""
    return bool(attachment.thumb) and attachment.media_type in INLINE_TYPES


def is_executable(name: str) -> bool:
    """Whether opening a file by this name could run a program: Open asks first. The name
    as sent and as it is written to disk (app.attachments.safe_name drops what hides an
    extension: "evil.sh\u200d", "evil.exe. .") are both judged."""
    return any(PurePath(n.strip().rstrip(". ")).suffix.lower().lstrip(".") in EXECUTABLE
               for n in (name, safe_name(name)))


def fit(width: int, height: int, most_width: int, most_height: int = THUMB_MAX) -> tuple[int,
                                                                                        int]:
    """A picture `width` x `height` scaled down (never up) to fit `most_width` x
    `most_height`, keeping its shape; at least 1 x 1."""
    if width <= 0 or height <= 0:
        return max(1, min(most_width, most_height)), max(1, min(most_width, most_height))
    scale = min(1.0, most_width / width, most_height / height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def kind_label(attachment: Attachment) -> str:
    """A short word for what a file is: the name's extension ("PDF"), else the media type's
    subtype, else "File"."""
    suffix = PurePath(attachment.name).suffix.lstrip(".")
    if suffix and len(suffix) <= 8:
        return suffix.upper()
    sub = attachment.media_type.partition("/")[2].partition(";")[0]
    if sub and sub != "octet-stream" and len(sub) <= 12:
        return sub.upper()
    return "File"


def describe(attachment: Attachment) -> str:
    """A file in words, for tooltips and screen readers: "report.pdf (2.4 MB)"."""
    return f"{attachment.name} ({size_label(attachment.size)})"


def pasted_name(when: datetime, taken: Collection[str] = ()) -> str:
    """What a pasted image is called: "Pasted image 2026-11-24 13.22.05.png", with " (2)"
    when that name is already waiting to be sent."""
    base = f"Pasted image {when.strftime('%Y-%m-%d %H.%M.%S')}"
    name, n = f"{base}.png", 2
    while name in taken:
        name, n = f"{base} ({n}).png", n + 1
    return name
