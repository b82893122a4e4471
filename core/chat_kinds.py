"""Chat kinds (cable's semantics and limits): posts, replies, edits, reactions, files,
channel policies and moderation; the bodies core.kinds lists, checked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .attachments import MAX_FILE_SIZE
from .fields import (
    MAX_LIST,
    bad,
    check_id,
    check_name,
    check_reason,
    check_str,
    check_uint,
    has_control,
    ids_field,
)

MAX_CHANNEL = 64
MAX_TOPIC = 512
MAX_TEXT_BYTES = 4096
MAX_NICK = 32
MAX_EMOJI = 16  # codepoints: the longest RGI sequences (families, flags with tags) fit
# Distinct emoji of one member's that count on one message (ingest's rule, storage/_conversation)
MAX_EMOJI_PER_MEMBER = 20

CHAT_KINDS = frozenset(
    {"post/text", "post/delete", "post/info", "post/topic", "post/join", "post/leave",
     "post/reply", "post/edit", "post/react", "post/file"}
)
MOD_ROLES = ("moderator", "none")
# Kinds that are messages: shown in a channel or a thread, searched, counted as unread.
MESSAGE_KINDS = frozenset({"post/text", "post/reply", "post/file"})
# Kinds a post/delete may target (chat posts; never workspace or document objects).
DELETABLE_KINDS = CHAT_KINDS - {"post/delete"}


def check_channel(body: dict) -> None:
    check_name(body["channel"], "channel name", MAX_CHANNEL)


def _text(body: dict) -> None:
    check_channel(body)
    check_message(body)


def check_message(body: dict) -> None:
    """A message's `text` and optional `files` (a post's body, or a sealed post's opened box):
    the text 1..MAX_TEXT_BYTES, or 0..MAX_TEXT_BYTES with files."""
    text = body.get("text")
    if not isinstance(text, str):
        raise bad("text must be text")
    files = "files" in body
    if files:
        check_files(body["files"])
    size = len(text.encode("utf-8", "surrogatepass"))
    if not (0 if files else 1) <= size <= MAX_TEXT_BYTES:
        raise bad(f"text must be {0 if files else 1} to {MAX_TEXT_BYTES} bytes of UTF-8 "
                   f"(got {size})")


MAX_FILES = 4  # files attached to one message
MAX_FILE_NAME = 255  # codepoints
MAX_MEDIA_TYPE = 127
MAX_THUMB = 12 * 1024
DESCRIPTOR_FIELDS = frozenset({"name", "size", "type", "list", "key", "w", "h", "thumb"})
_NAME_FORBIDDEN = frozenset("/\\\0")


def check_file_name(value: Any) -> str:
    """An attached file's name: 1..MAX_FILE_NAME codepoints, no path separators, NUL or
    control characters (where it is saved is decided again on saving: app.attachments)."""
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_FILE_NAME:
        raise bad(f"a file's name must be 1 to {MAX_FILE_NAME} characters")
    if _NAME_FORBIDDEN & set(value) or has_control(value):
        raise bad("a file's name may not contain /, \\, NUL or control characters")
    return value


def check_descriptor(value: Any) -> dict:
    """One attached file's descriptor (see the module docstring), every field present."""
    if not isinstance(value, dict) or value.keys() != DESCRIPTOR_FIELDS:
        found = sorted(map(str, value)) if isinstance(value, dict) else type(value).__name__
        raise bad(f"a file descriptor has exactly {sorted(DESCRIPTOR_FIELDS)} (got {found})")
    check_file_name(value["name"])
    size = value["size"]
    if type(size) is not int or not 0 <= size <= MAX_FILE_SIZE:
        raise bad(f"a file's size must be 0 to {MAX_FILE_SIZE} bytes")
    media = value["type"]
    if not isinstance(media, str) or not 1 <= len(media) <= MAX_MEDIA_TYPE or \
            not all(" " <= ch <= "~" for ch in media):
        raise bad(f"a file's type must be 1 to {MAX_MEDIA_TYPE} printable ASCII characters")
    check_id(value["list"], "a file's list")
    check_id(value["key"], "a file's key")
    check_uint(value["w"], "a file's width")
    check_uint(value["h"], "a file's height")
    if not isinstance(value["thumb"], bytes) or len(value["thumb"]) > MAX_THUMB:
        raise bad(f"a file's thumbnail must be at most {MAX_THUMB} bytes")
    return value


def check_files(value: Any) -> list:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_FILES:
        raise bad(f"files must be a list of 1 to {MAX_FILES} file descriptors")
    for item in value:
        check_descriptor(item)
    return value


def _reply(body: dict) -> None:
    _text(body)
    check_id(body["parent"], "parent")
    if type(body["broadcast"]) is not bool:
        raise bad("broadcast must be true or false")


def _edit(body: dict) -> None:
    _text(body)
    check_id(body["target"], "target")


def check_emoji(emoji: Any) -> str:
    """A reaction's emoji: 1..MAX_EMOJI codepoints with no spaces or control characters."""
    if not isinstance(emoji, str) or not 1 <= len(emoji) <= MAX_EMOJI:
        raise bad(f"emoji must be 1 to {MAX_EMOJI} characters")
    if has_control(emoji) or any(ch.isspace() for ch in emoji):
        raise bad("emoji may not contain spaces or control characters")
    return emoji


def _react(body: dict) -> None:
    check_channel(body)
    check_id(body["target"], "target")
    check_emoji(body["emoji"])


def _topic(body: dict) -> None:
    check_channel(body)
    check_str(body["topic"], "topic", 0, MAX_TOPIC)


def _info(body: dict) -> None:
    check_name(body["name"], "nickname", MAX_NICK)


def _policy(body: dict) -> None:
    from .policy import Policy  # local: policy is a sibling leaf module

    check_channel(body)
    policies = body["policies"]
    if not isinstance(policies, list) or len(policies) > MAX_LIST:
        raise bad(f"policies must be a list of at most {MAX_LIST}")
    for item in policies:
        try:
            Policy.from_dict(item)
        except (ValueError, TypeError) as exc:
            raise bad(f"bad policy: {exc}") from None


def _mod_role(body: dict) -> None:
    check_channel(body)
    check_id(body["key"], "key")
    if body["role"] not in MOD_ROLES:
        raise bad(f"role must be one of {', '.join(MOD_ROLES)}")
    check_reason(body["reason"])


def _mod_hide(body: dict) -> None:
    check_channel(body)
    check_id(body["target"], "target")
    if type(body["hidden"]) is not bool:
        raise bad("hidden must be true or false")
    check_reason(body["reason"], 1)


# kind -> (exact body field names, checker)
BODIES: dict[str, tuple[frozenset[str], Callable[[dict], None]]] = {
    "post/text": (frozenset({"channel", "text"}), _text),
    "post/delete": (frozenset({"targets"}), ids_field("targets", 1)),
    "post/info": (frozenset({"name"}), _info),
    "post/topic": (frozenset({"channel", "topic"}), _topic),
    "post/join": (frozenset({"channel"}), check_channel),
    "post/leave": (frozenset({"channel"}), check_channel),
    "post/reply": (frozenset({"channel", "text", "parent", "broadcast"}), _reply),
    "post/file": (frozenset({"channel", "text", "files"}), _text),
    "post/edit": (frozenset({"channel", "target", "text"}), _edit),
    "post/react": (frozenset({"channel", "target", "emoji"}), _react),
    "channel/policy": (frozenset({"channel", "policies"}), _policy),
    "mod/role": (frozenset({"channel", "key", "role", "reason"}), _mod_role),
    "mod/hide": (frozenset({"channel", "target", "hidden", "reason"}), _mod_hide),
}
