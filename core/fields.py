"""Checks of body fields that kinds share (ids, lists of ids, bounded text and whole numbers,
names, reasons) and the limits they share; each kind's module (core.chat_kinds,
core.doc_kinds, core.workspace_kinds) checks its own bodies with them."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any

from .encoding import ID_SIZE
from .errors import InvalidObject, Reason

MAX_NAME = 64
MAX_LIST = 64
NONCE_SIZE = 16
BOX_NONCE_SIZE = 24
MAX_SEALED = 256
MAX_REASON = 256  # codepoints of a moderation action's or a removal's reason


def bad(message: str) -> InvalidObject:
    return InvalidObject(Reason.BAD_BODY, message)


_ZWJ = "\u200d"  # joins emoji sequences (👩‍💻); other format characters can spoof text


def has_control(text: str) -> bool:
    return any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") and ch != _ZWJ
               for ch in text)


def check_name(value: Any, what: str, limit: int) -> str:
    """A str of 1..limit codepoints in NFC with no control characters."""
    if not isinstance(value, str):
        raise bad(f"{what} must be text")
    if (value, limit) in _good_names:  # names repeat a lot; the checks below are not free
        return value
    if not 1 <= len(value) <= limit:
        raise bad(f"{what} must be 1 to {limit} characters")
    if unicodedata.normalize("NFC", value) != value:
        raise bad(f"{what} must be in Unicode NFC form")
    if value.strip() != value or has_control(value):
        raise bad(f"{what} may not contain control characters or surrounding spaces")
    if len(_good_names) >= _GOOD_NAMES_MAX:
        _good_names.clear()
    _good_names.add((value, limit))
    return value


_GOOD_NAMES_MAX = 4096
_good_names: set[tuple[str, int]] = set()


def check_id(value: Any, what: str, size: int = ID_SIZE) -> None:
    if not isinstance(value, bytes) or len(value) != size:
        raise bad(f"{what} must be {size} bytes")


def check_ids(value: Any, what: str, lo: int = 0, hi: int = MAX_LIST) -> None:
    if not isinstance(value, list) or not lo <= len(value) <= hi:
        raise bad(f"{what} must be a list of {lo} to {hi} ids")
    for item in value:
        check_id(item, what)
    if len(set(value)) != len(value):
        raise bad(f"{what} repeats an id")


def check_str(value: Any, what: str, lo: int, hi: int) -> None:
    if not isinstance(value, str) or not lo <= len(value) <= hi:
        raise bad(f"{what} must be text of {lo} to {hi} characters")


def check_uint(value: Any, what: str, lo: int = 0) -> None:
    if type(value) is not int or not lo <= value < 2**63:
        raise bad(f"{what} must be a whole number >= {lo}")


def check_reason(value: Any, lo: int = 0) -> str:
    """A moderation reason: lo..MAX_REASON codepoints on one line (no control characters)."""
    check_str(value, "reason", lo, MAX_REASON)
    if has_control(value):
        raise bad("reason may not contain control characters or line breaks")
    return value


def ids_field(name: str, lo: int) -> Callable[[dict], None]:
    return lambda body: check_ids(body[name], name, lo)


def id_field(name: str) -> Callable[[dict], None]:
    return lambda body: check_id(body[name], name)
