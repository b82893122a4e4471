"""What an attached file's descriptor says of it besides its bytes: its media type and, for an
image (PNG, JPEG, GIF, WebP), its size in pixels and a small JPEG thumbnail that travels in the
message (core/kinds.py: at most MAX_THUMB bytes).

Decoding is bounded: the header is read first, and an image of more than MAX_PIXELS (a
decompression bomb, or just too large to decode here) is never decoded; it is attached as a
file with no thumbnail, as is anything Pillow cannot read. Nothing here ever stops an attach.
"""

from __future__ import annotations

import io
import logging
import mimetypes
import warnings
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageOps

from core.kinds import MAX_THUMB

log = logging.getLogger(__name__)

MAX_PIXELS = 50_000_000  # 50 megapixels: larger images are not decoded
THUMB_SIDE = 320  # the thumbnail's longest side, at most
SNIFF_BYTES = 16
DEFAULT_TYPE = "application/octet-stream"
_QUALITIES = (80, 65, 50, 35)
_ORIENTATION = 0x0112  # the EXIF tag
_TURNED = (5, 6, 7, 8)  # orientations that swap width and height
_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


@dataclass(frozen=True, slots=True)
class FileLook:
    """What the descriptor says of a file besides its bytes."""

    media_type: str
    width: int = 0
    height: int = 0
    thumb: bytes = b""


def sniff_image(head: bytes) -> str | None:
    """The media type of an image format we thumbnail, from a file's first bytes."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def media_type(name: str, head: bytes) -> str:
    """An image's type from its first bytes, else the type its name's extension suggests."""
    sniffed = sniff_image(head)
    if sniffed:
        return sniffed
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed if guessed and guessed.isascii() and len(guessed) <= 127 else DEFAULT_TYPE


def thumbnail(image: Image.Image, limit: int = MAX_THUMB) -> bytes:
    """A JPEG of `image` at most THUMB_SIDE pixels on its longest side and `limit` bytes:
    lower quality first, then smaller, until it fits."""
    if image.mode not in ("RGB", "L"):
        rgba = image.convert("RGBA")
        flat = Image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        image = flat
    side = THUMB_SIDE
    while True:
        small = image.copy()
        small.thumbnail((side, side), Image.Resampling.LANCZOS)
        for quality in _QUALITIES:
            out = io.BytesIO()
            small.save(out, "JPEG", quality=quality, optimize=True)
            if out.tell() <= limit:
                return out.getvalue()
        if side <= 16:
            return b""
        side = side * 3 // 4


def look(path: Path, name: str | None = None) -> FileLook:
    """The media type of the file at `path` (named `name`), and for an image it can decode
    within the bounds, its size and thumbnail."""
    path = Path(path)
    with open(path, "rb") as f:
        head = f.read(SNIFF_BYTES)
    kind = media_type(name or path.name, head)
    if sniff_image(head) is None:
        return FileLook(kind)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path, formats=list(_FORMATS)) as image:
                width, height = image.size
                if width * height > MAX_PIXELS or width <= 0 or height <= 0:
                    log.info("%s: %dx%d pixels is more than we decode", path.name, width, height)
                    return FileLook(kind)
                image.draft("RGB", (THUMB_SIDE, THUMB_SIDE))  # JPEG: decode at a fraction
                image.seek(0)
                image.load()
                if image.getexif().get(_ORIENTATION) in _TURNED:  # shown turned a quarter
                    width, height = height, width
                return FileLook(kind, width, height, thumbnail(ImageOps.exif_transpose(image)))
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError,
            Image.DecompressionBombWarning, EOFError) as exc:
        log.info("%s: no thumbnail (%s)", path.name, exc)
        return FileLook(kind)
