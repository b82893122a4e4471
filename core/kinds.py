"""Every object kind of format version 1, and the shape its body must have.

Streams (see docs/ARCHITECTURE.md "Objects"): a channel's stream is `channel_stream(workspace, name)`; a
profile's is `profile_stream(author)`; the workspace stream is the genesis id; a document's root
branch stream is its `doc/root` id; a branch's stream is its `doc/branch` id. Which stream an
object must be in is a visibility question (storage), not validity.

Body fields, by kind (`id` = 32 bytes, `key` = 32-byte Ed25519 public key):

chat (cable's semantics and limits)
- post/text    {channel: name, text: str, 1..4096 UTF-8 bytes}
- post/delete  {targets: [id, 1..64, distinct]}  (in its targets' stream)
- post/info    {name: nickname 1..32 codepoints}  (in the author's profile stream)
- post/topic   {channel: name, topic: str 0..512 codepoints}
- post/join    {channel: name}
- post/leave   {channel: name}
- post/reply   {channel: name, text: as post/text, parent: id, broadcast: bool}  (a message in
                the thread of `parent`, a top-level message of the same channel; `broadcast`
                also shows it in the channel)
- post/file    {channel: name, text: str 0..4096 UTF-8 bytes, files: [descriptor, 1..4]}  (a
                message with attached files; a kind of its own rather than a field of
                post/text, so versions from before attachments store and relay it instead of
                refusing it. A descriptor names one file (core/attachments.py): {name: str
                1..255 codepoints, no "/", "\\", NUL or control characters; size: int 0..4 GiB;
                type: media type, 1..127 printable ASCII; list: id (the list chunk's); key:
                bytes 32; w: int >= 0; h: int >= 0 (an image's size, else 0); thumb: bytes <=
                12 KiB (a small JPEG, images only, else empty)}, every field present)
- post/edit    {channel: name, target: id, text: as post/text}  (the author's new text for
                `target`, a post/text or post/reply of theirs in the same channel)
- post/react   {channel: name, target: id, emoji: str 1..16 codepoints, no spaces or control
                characters}  (taken back by a post/delete of the post/react)
workspace
- workspace/genesis     {name: str 1..64 codepoints, nonce: bytes 16}  (stream: 32 zero bytes)
- workspace/admin-grant {key: key}  (the root made `key` an admin)
- workspace/admin-revoke {key: key}  (the root took it back; per key the root's latest of the
                  two counts, and `member/kept` lists naming the revocation keep what the
                  former admin did before it: core/membership.py "Authority")
- channel/policy        {channel: name, policies: [policy dict, 0..64]}  (core.policy dicts)
documents
- doc/root       {title: str 1..256, editors: [key, 1..64 distinct], nonce: bytes 16}
- doc/title      {title: str 1..256}
- doc/editors    {add: [key, 0..64], remove: [key, 0..64]}  (at least one key in all)
- doc/branch     {name: str 1..64, source: id | None, at: [id, 0..64]}  (fork of `source`
                  at commits `at`; `source` None for the first `main`)
- doc/main       {branch: id}  (makes that branch the document's main)
- doc/commit     {root: [id, 0..64], epoch: int >= 0, nonce: bytes 24, box: bytes}
                  (in its branch's stream; `root` = root-branch heads the author had seen,
                  or [] for "the same as my first parent's"; `box` is the SecretBox of the
                  commit payload under the branch key of `epoch`)
- doc/tag        {name: str 1..64, commit: id}
- doc/branch-key {branch: id, epoch: int >= 0, recipient: key, sealed: bytes <= 256}
- doc/key-refresh {branch: id, epoch: int >= 1}
- doc/visibility {mode: "workspace" | "private"}  (the creator's latest counts; a document
                  with none is private: documents from before visibility were)
- doc/editing    {mode: "workspace" | "listed"}  (who edits: "workspace" makes every member
                  an editor besides those listed; the creator's, in the root state an object
                  names; a kind of its own so older versions store and relay it)
- doc/workspace-key {branch: id, epoch: int >= 0, nonce: bytes 24, box: bytes <= 256}
                  (`box` is the SecretBox of the branch key of `epoch` under a key derived
                  from the workspace secret and `branch`: every member reads it, a network
                  sniffer or a bundle file's reader without the secret does not)
- doc/edit-request {note: str 0..256, open: bool}  (a member asks the editors to make them
                  one; `open` false withdraws; the author's latest counts)
- doc/comment    {epoch: int >= 0, nonce: bytes 24, box: bytes}  (in its branch's stream,
                  linking to the branch heads its author read; `box` is the SecretBox, under
                  the branch key of `epoch`, of a comment on a range of the text, a reply or a
                  resolve: see core/documents/_comments.py. Anyone who reads the branch may
                  comment)
membership (in the workspace stream; docs/ARCHITECTURE.md "Members and invites")
- invite/create  {tag: bytes 16, uses: int >= 0, expires: int >= 0, nonce: bytes 24,
                  box: bytes <= 256}  (an invite code's signed half: `tag` names it on the
                  wire; `uses` admissions at most (0: any number); no admission after
                  `expires` (ms since the epoch; 0: never); `box` is the SecretBox of the
                  join key under a key derived from the workspace secret and `tag`, so any
                  member's node can admit with it, and the code itself holds no secret)
- invite/revoke  {invite: id}  (counts from the invite's creator or an admin)
- member/admit   {key: key, invite: id | None}  (the author admitted `key`: with the invite
                  `invite`, or, None, with a personal code made for that key)
- member/remove  {key: key, reason: str 0..256}  (an admin removed `key`; core/membership.py)
- member/kept    {removal: id, ids: [id, 1..1024 distinct]}  (objects of the member that
                  removal removed which its author held, and which therefore still count)
- workspace/key  {epoch: int >= 0, check: bytes 16, recipient: key, sealed: bytes <= 256}
                  (the workspace secret of `epoch` sealed to `recipient`, with the `check`
                  of that secret: by the member who admitted them, or an admin's rotation)
private channels and direct messages (core/private.py)
- channel/private {nonce: bytes 16, dm: bool}  (in the workspace stream; its id is the
                  channel's, the stream of everything below; its author is its creator)
- channel/members {channel: id, add: [key, 0..64], remove: [key, 0..64]}  (at least one key;
                  by the creator or an admin)
- channel/key    {channel: id, epoch: int >= 0, check: bytes 16, recipient: key,
                  sealed: bytes <= 256}  (the channel key of `epoch` sealed to a member)
- channel/name   {channel: id, epoch: int >= 0, nonce: bytes 24, box: bytes <= 256}  (the
                  channel's name in a SecretBox under the key of `epoch`; the creator's
                  latest counts)
- post/sealed    {channel: id, epoch: int >= 0, nonce: bytes 24, box: bytes}  (a message:
                  the SecretBox, under the key of `epoch`, of {"text": str} or, with
                  attached files, {"text": str, "files": [descriptor, 1..4]}, checked by
                  `check_message` when opened)
moderation (cable's moderation roles; docs/ARCHITECTURE.md "Who may do what")
- mod/role       {channel: name, key: key, role: "moderator" | "none", reason: str 0..256}
                  (in the workspace stream; per (channel, key) the latest an admin wrote counts)
- mod/hide       {channel: name, target: id or key, hidden: bool, reason: str 1..256}
                  (in the channel's stream; hides the post `target`, or every post of the
                  member whose key is `target`, in that channel; `hidden` false undoes it. It
                  counts when its author is an admin, or a moderator of the channel now)
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any

from .attachments import MAX_FILE_SIZE
from .encoding import ID_SIZE, derive_id
from .errors import InvalidObject, Reason

MAX_CHANNEL = 64
MAX_TOPIC = 512
MAX_TEXT_BYTES = 4096
MAX_NICK = 32
MAX_TITLE = 256
MAX_NAME = 64
MAX_LIST = 64
NONCE_SIZE = 16
BOX_NONCE_SIZE = 24
MAX_SEALED = 256
MAX_EMOJI = 16  # codepoints: the longest RGI sequences (families, flags with tags) fit
# Distinct emoji of one member's that count on one message (ingest's rule, storage/_conversation)
MAX_EMOJI_PER_MEMBER = 20
GENESIS_STREAM = bytes(32)

CHAT_KINDS = frozenset(
    {"post/text", "post/delete", "post/info", "post/topic", "post/join", "post/leave",
     "post/reply", "post/edit", "post/react", "post/file"}
)
MOD_ROLES = ("moderator", "none")
MAX_REASON = 256  # codepoints of a moderation action's reason
# Kinds that are messages: shown in a channel or a thread, searched, counted as unread.
MESSAGE_KINDS = frozenset({"post/text", "post/reply", "post/file"})
# Kinds a post/delete may target (chat posts; never workspace or document objects).
DELETABLE_KINDS = CHAT_KINDS - {"post/delete"}


# A stream's class: which streams a member who keeps only some channels and documents on a
# computer still syncs (every workspace-level one), and how sync orders them.
WORKSPACE_CLASS, CHANNEL_CLASS, DOCUMENT_CLASS = 0, 1, 2


def stream_class(kind: str, stream: bytes, workspace: bytes) -> int:
    """The class an object of `kind` in `stream` gives its stream: workspace-level for the
    workspace's own streams, profiles (post/info) and any kind this version does not know."""
    if stream in (workspace, GENESIS_STREAM) or kind == "post/info":
        return WORKSPACE_CLASS
    if kind.startswith("doc/"):
        return DOCUMENT_CLASS
    if kind.startswith(("post/", "mod/")):
        return CHANNEL_CLASS
    return WORKSPACE_CLASS


def _bad(message: str) -> InvalidObject:
    return InvalidObject(Reason.BAD_BODY, message)


def channel_key(name: str) -> str:
    """How channel names compare: NFC, then case-folded."""
    return unicodedata.normalize("NFC", name).casefold()


def channel_stream(workspace: bytes, name: str) -> bytes:
    return derive_id("channel", workspace, channel_key(name).encode())


def profile_stream(author: bytes) -> bytes:
    """The profile stream's "hypothetical root": anyone can derive it from the key alone."""
    return derive_id("profile", author)


_ZWJ = "\u200d"  # joins emoji sequences (👩‍💻); other format characters can spoof text


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") and ch != _ZWJ
               for ch in text)


def check_name(value: Any, what: str, limit: int) -> str:
    """A str of 1..limit codepoints in NFC with no control characters."""
    if not isinstance(value, str):
        raise _bad(f"{what} must be text")
    if (value, limit) in _good_names:  # names repeat a lot; the checks below are not free
        return value
    if not 1 <= len(value) <= limit:
        raise _bad(f"{what} must be 1 to {limit} characters")
    if unicodedata.normalize("NFC", value) != value:
        raise _bad(f"{what} must be in Unicode NFC form")
    if value.strip() != value or _has_control(value):
        raise _bad(f"{what} may not contain control characters or surrounding spaces")
    if len(_good_names) >= _GOOD_NAMES_MAX:
        _good_names.clear()
    _good_names.add((value, limit))
    return value


_GOOD_NAMES_MAX = 4096
_good_names: set[tuple[str, int]] = set()


def _channel(body: dict) -> None:
    check_name(body["channel"], "channel name", MAX_CHANNEL)


def _id(value: Any, what: str, size: int = ID_SIZE) -> None:
    if not isinstance(value, bytes) or len(value) != size:
        raise _bad(f"{what} must be {size} bytes")


def _ids(value: Any, what: str, lo: int = 0, hi: int = MAX_LIST) -> None:
    if not isinstance(value, list) or not lo <= len(value) <= hi:
        raise _bad(f"{what} must be a list of {lo} to {hi} ids")
    for item in value:
        _id(item, what)
    if len(set(value)) != len(value):
        raise _bad(f"{what} repeats an id")


def _str(value: Any, what: str, lo: int, hi: int) -> None:
    if not isinstance(value, str) or not lo <= len(value) <= hi:
        raise _bad(f"{what} must be text of {lo} to {hi} characters")


def _uint(value: Any, what: str, lo: int = 0) -> None:
    if type(value) is not int or not lo <= value < 2**63:
        raise _bad(f"{what} must be a whole number >= {lo}")


def _text(body: dict) -> None:
    _channel(body)
    check_message(body)


def check_message(body: dict) -> None:
    """A message's `text` and optional `files` (a post's body, or a sealed post's opened box):
    the text 1..MAX_TEXT_BYTES, or 0..MAX_TEXT_BYTES with files."""
    text = body.get("text")
    if not isinstance(text, str):
        raise _bad("text must be text")
    files = "files" in body
    if files:
        check_files(body["files"])
    size = len(text.encode("utf-8", "surrogatepass"))
    if not (0 if files else 1) <= size <= MAX_TEXT_BYTES:
        raise _bad(f"text must be {0 if files else 1} to {MAX_TEXT_BYTES} bytes of UTF-8 "
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
        raise _bad(f"a file's name must be 1 to {MAX_FILE_NAME} characters")
    if _NAME_FORBIDDEN & set(value) or _has_control(value):
        raise _bad("a file's name may not contain /, \\, NUL or control characters")
    return value


def check_descriptor(value: Any) -> dict:
    """One attached file's descriptor (see the module docstring), every field present."""
    if not isinstance(value, dict) or value.keys() != DESCRIPTOR_FIELDS:
        found = sorted(map(str, value)) if isinstance(value, dict) else type(value).__name__
        raise _bad(f"a file descriptor has exactly {sorted(DESCRIPTOR_FIELDS)} (got {found})")
    check_file_name(value["name"])
    size = value["size"]
    if type(size) is not int or not 0 <= size <= MAX_FILE_SIZE:
        raise _bad(f"a file's size must be 0 to {MAX_FILE_SIZE} bytes")
    media = value["type"]
    if not isinstance(media, str) or not 1 <= len(media) <= MAX_MEDIA_TYPE or \
            not all(" " <= ch <= "~" for ch in media):
        raise _bad(f"a file's type must be 1 to {MAX_MEDIA_TYPE} printable ASCII characters")
    _id(value["list"], "a file's list")
    _id(value["key"], "a file's key")
    _uint(value["w"], "a file's width")
    _uint(value["h"], "a file's height")
    if not isinstance(value["thumb"], bytes) or len(value["thumb"]) > MAX_THUMB:
        raise _bad(f"a file's thumbnail must be at most {MAX_THUMB} bytes")
    return value


def check_files(value: Any) -> list:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_FILES:
        raise _bad(f"files must be a list of 1 to {MAX_FILES} file descriptors")
    for item in value:
        check_descriptor(item)
    return value


def _reply(body: dict) -> None:
    _text(body)
    _id(body["parent"], "parent")
    if type(body["broadcast"]) is not bool:
        raise _bad("broadcast must be true or false")


def _edit(body: dict) -> None:
    _text(body)
    _id(body["target"], "target")


def check_emoji(emoji: Any) -> str:
    """A reaction's emoji: 1..MAX_EMOJI codepoints with no spaces or control characters."""
    if not isinstance(emoji, str) or not 1 <= len(emoji) <= MAX_EMOJI:
        raise _bad(f"emoji must be 1 to {MAX_EMOJI} characters")
    if _has_control(emoji) or any(ch.isspace() for ch in emoji):
        raise _bad("emoji may not contain spaces or control characters")
    return emoji


def _react(body: dict) -> None:
    _channel(body)
    _id(body["target"], "target")
    check_emoji(body["emoji"])


def _topic(body: dict) -> None:
    _channel(body)
    _str(body["topic"], "topic", 0, MAX_TOPIC)


def _info(body: dict) -> None:
    check_name(body["name"], "nickname", MAX_NICK)


def _genesis(body: dict) -> None:
    check_name(body["name"], "workspace name", MAX_NAME)
    _id(body["nonce"], "nonce", NONCE_SIZE)


def _policy(body: dict) -> None:
    from .policy import Policy  # local: policy is a sibling leaf module

    _channel(body)
    policies = body["policies"]
    if not isinstance(policies, list) or len(policies) > MAX_LIST:
        raise _bad(f"policies must be a list of at most {MAX_LIST}")
    for item in policies:
        try:
            Policy.from_dict(item)
        except (ValueError, TypeError) as exc:
            raise _bad(f"bad policy: {exc}") from None


def _doc_root(body: dict) -> None:
    _str(body["title"], "title", 1, MAX_TITLE)
    _ids(body["editors"], "editors", 1)
    _id(body["nonce"], "nonce", NONCE_SIZE)


def _doc_editors(body: dict) -> None:
    _ids(body["add"], "add")
    _ids(body["remove"], "remove")
    if not body["add"] and not body["remove"]:
        raise _bad("an editor change must add or remove someone")


def _doc_branch(body: dict) -> None:
    check_name(body["name"], "branch name", MAX_NAME)
    if body["source"] is not None:
        _id(body["source"], "source")
    _ids(body["at"], "at")


def _doc_commit(body: dict) -> None:
    _ids(body["root"], "root")
    _uint(body["epoch"], "epoch")
    _id(body["nonce"], "nonce", BOX_NONCE_SIZE)
    if not isinstance(body["box"], bytes):
        raise _bad("box must be bytes")


def _doc_tag(body: dict) -> None:
    check_name(body["name"], "tag name", MAX_NAME)
    _id(body["commit"], "commit")


def _doc_branch_key(body: dict) -> None:
    _id(body["branch"], "branch")
    _uint(body["epoch"], "epoch")
    _id(body["recipient"], "recipient")
    if not isinstance(body["sealed"], bytes) or len(body["sealed"]) > MAX_SEALED:
        raise _bad(f"sealed must be at most {MAX_SEALED} bytes")


def _doc_key_refresh(body: dict) -> None:
    _id(body["branch"], "branch")
    _uint(body["epoch"], "epoch", 1)


VISIBILITIES = ("workspace", "private")
MAX_NOTE = 256


def _doc_visibility(body: dict) -> None:
    if body["mode"] not in VISIBILITIES:
        raise _bad(f"mode must be one of {', '.join(VISIBILITIES)}")


EDITING = ("workspace", "listed")


def _doc_editing(body: dict) -> None:
    if body["mode"] not in EDITING:
        raise _bad(f"mode must be one of {', '.join(EDITING)}")


def _doc_workspace_key(body: dict) -> None:
    _id(body["branch"], "branch")
    _uint(body["epoch"], "epoch")
    _id(body["nonce"], "nonce", BOX_NONCE_SIZE)
    if not isinstance(body["box"], bytes) or len(body["box"]) > MAX_SEALED:
        raise _bad(f"box must be at most {MAX_SEALED} bytes")


def _doc_edit_request(body: dict) -> None:
    _str(body["note"], "note", 0, MAX_NOTE)
    if type(body["open"]) is not bool:
        raise _bad("open must be true or false")


def _doc_comment(body: dict) -> None:
    _uint(body["epoch"], "epoch")
    _id(body["nonce"], "nonce", BOX_NONCE_SIZE)
    if not isinstance(body["box"], bytes):
        raise _bad("box must be bytes")


INVITE_TAG_SIZE = 16


def _invite_create(body: dict) -> None:
    _id(body["tag"], "tag", INVITE_TAG_SIZE)
    _uint(body["uses"], "uses")
    _uint(body["expires"], "expires")
    _id(body["nonce"], "nonce", BOX_NONCE_SIZE)
    if not isinstance(body["box"], bytes) or len(body["box"]) > MAX_SEALED:
        raise _bad(f"box must be at most {MAX_SEALED} bytes")


def _member_admit(body: dict) -> None:
    _id(body["key"], "key")
    if body["invite"] is not None:
        _id(body["invite"], "invite")


def _member_remove(body: dict) -> None:
    _id(body["key"], "key")
    check_reason(body["reason"])


MAX_KEPT = 1024


def _member_kept(body: dict) -> None:
    _id(body["removal"], "removal")
    _ids(body["ids"], "ids", 1, MAX_KEPT)


def _workspace_key(body: dict) -> None:
    _uint(body["epoch"], "epoch")
    _id(body["check"], "check", INVITE_TAG_SIZE)
    _id(body["recipient"], "recipient")
    if not isinstance(body["sealed"], bytes) or len(body["sealed"]) > MAX_SEALED:
        raise _bad(f"sealed must be at most {MAX_SEALED} bytes")


def _channel_private(body: dict) -> None:
    _id(body["nonce"], "nonce", NONCE_SIZE)
    if type(body["dm"]) is not bool:
        raise _bad("dm must be true or false")


def _channel_members(body: dict) -> None:
    _id(body["channel"], "channel")
    _ids(body["add"], "add")
    _ids(body["remove"], "remove")
    if not body["add"] and not body["remove"]:
        raise _bad("channel/members changes at least one key")


def _channel_key(body: dict) -> None:
    _id(body["channel"], "channel")
    _workspace_key(body)


def _boxed(body: dict, limit: int | None = MAX_SEALED) -> None:
    _id(body["channel"], "channel")
    _uint(body["epoch"], "epoch")
    _id(body["nonce"], "nonce", BOX_NONCE_SIZE)
    if not isinstance(body["box"], bytes) or (limit is not None and len(body["box"]) > limit):
        raise _bad(f"box must be bytes{f' (at most {limit})' if limit else ''}")


def check_reason(value: Any, lo: int = 0) -> str:
    """A moderation reason: lo..MAX_REASON codepoints on one line (no control characters)."""
    _str(value, "reason", lo, MAX_REASON)
    if _has_control(value):
        raise _bad("reason may not contain control characters or line breaks")
    return value


def _mod_role(body: dict) -> None:
    _channel(body)
    _id(body["key"], "key")
    if body["role"] not in MOD_ROLES:
        raise _bad(f"role must be one of {', '.join(MOD_ROLES)}")
    check_reason(body["reason"])


def _mod_hide(body: dict) -> None:
    _channel(body)
    _id(body["target"], "target")
    if type(body["hidden"]) is not bool:
        raise _bad("hidden must be true or false")
    check_reason(body["reason"], 1)


def _ids_field(name: str, lo: int) -> Callable[[dict], None]:
    return lambda body: _ids(body[name], name, lo)


def _id_field(name: str) -> Callable[[dict], None]:
    return lambda body: _id(body[name], name)


# kind -> (exact body field names, checker)
KINDS: dict[str, tuple[frozenset[str], Callable[[dict], None]]] = {
    "post/text": (frozenset({"channel", "text"}), _text),
    "post/delete": (frozenset({"targets"}), _ids_field("targets", 1)),
    "post/info": (frozenset({"name"}), _info),
    "post/topic": (frozenset({"channel", "topic"}), _topic),
    "post/join": (frozenset({"channel"}), _channel),
    "post/leave": (frozenset({"channel"}), _channel),
    "post/reply": (frozenset({"channel", "text", "parent", "broadcast"}), _reply),
    "post/file": (frozenset({"channel", "text", "files"}), _text),
    "post/edit": (frozenset({"channel", "target", "text"}), _edit),
    "post/react": (frozenset({"channel", "target", "emoji"}), _react),
    "workspace/genesis": (frozenset({"name", "nonce"}), _genesis),
    "workspace/admin-grant": (frozenset({"key"}), _id_field("key")),
    "workspace/admin-revoke": (frozenset({"key"}), _id_field("key")),
    "channel/policy": (frozenset({"channel", "policies"}), _policy),
    "doc/root": (frozenset({"title", "editors", "nonce"}), _doc_root),
    "doc/title": (frozenset({"title"}), lambda b: _str(b["title"], "title", 1, MAX_TITLE)),
    "doc/editors": (frozenset({"add", "remove"}), _doc_editors),
    "doc/branch": (frozenset({"name", "source", "at"}), _doc_branch),
    "doc/main": (frozenset({"branch"}), _id_field("branch")),
    "doc/commit": (frozenset({"root", "epoch", "nonce", "box"}), _doc_commit),
    "doc/tag": (frozenset({"name", "commit"}), _doc_tag),
    "doc/branch-key": (frozenset({"branch", "epoch", "recipient", "sealed"}), _doc_branch_key),
    "doc/key-refresh": (frozenset({"branch", "epoch"}), _doc_key_refresh),
    "doc/visibility": (frozenset({"mode"}), _doc_visibility),
    "doc/editing": (frozenset({"mode"}), _doc_editing),
    "doc/workspace-key": (frozenset({"branch", "epoch", "nonce", "box"}), _doc_workspace_key),
    "doc/edit-request": (frozenset({"note", "open"}), _doc_edit_request),
    "doc/comment": (frozenset({"epoch", "nonce", "box"}), _doc_comment),
    "invite/create": (frozenset({"tag", "uses", "expires", "nonce", "box"}), _invite_create),
    "invite/revoke": (frozenset({"invite"}), _id_field("invite")),
    "member/admit": (frozenset({"key", "invite"}), _member_admit),
    "member/remove": (frozenset({"key", "reason"}), _member_remove),
    "member/kept": (frozenset({"removal", "ids"}), _member_kept),
    "workspace/key": (frozenset({"epoch", "check", "recipient", "sealed"}), _workspace_key),
    "channel/private": (frozenset({"nonce", "dm"}), _channel_private),
    "channel/members": (frozenset({"channel", "add", "remove"}), _channel_members),
    "channel/key": (frozenset({"channel", "epoch", "check", "recipient", "sealed"}),
                    _channel_key),
    "channel/name": (frozenset({"channel", "epoch", "nonce", "box"}), _boxed),
    "post/sealed": (frozenset({"channel", "epoch", "nonce", "box"}),
                    lambda body: _boxed(body, None)),
    "mod/role": (frozenset({"channel", "key", "role", "reason"}), _mod_role),
    "mod/hide": (frozenset({"channel", "target", "hidden", "reason"}), _mod_hide),
}


def _canonical_order(fields: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted(fields, key=lambda k: (len(k.encode()), k.encode())))


# kind -> canonical key order of its body, for the decoder's fast path
_ORDER = {kind: _canonical_order(fields) for kind, (fields, _) in KINDS.items()}
# Bodies that nest maps (policies) need the general canonical walk.
_NESTED = frozenset({"channel/policy", "post/file"})  # bodies that hold maps


def check_body(kind: str, body: dict) -> bool:
    """Raise InvalidObject(BAD_BODY) unless `body` has the shape `kind` requires.

    Unknown kinds pass: they are valid, stored and relayed, just not interpreted. Returns True
    when the body is known to be plain CBOR in canonical key order (see encoding.is_plain).
    """
    spec = KINDS.get(kind)
    if spec is None:
        return False
    fields, checker = spec
    plain = tuple(body) == _ORDER[kind]
    if not plain and body.keys() != fields:
        missing = sorted(fields - body.keys())
        extra = sorted(map(str, body.keys() - fields))
        raise _bad(f"{kind} body: missing {missing}, unexpected {extra}")
    checker(body)
    return plain and kind not in _NESTED
