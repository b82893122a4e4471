"""Every object kind of format version 1, and the shape its body must have.

Streams are core.streams' (which stream an object must be in is a visibility question,
storage's, not validity). Each group of kinds checks its bodies in its own module:
core.chat_kinds (chat and moderation), core.doc_kinds (documents), core.workspace_kinds
(workspace, membership, private channels), with the field checks of core.fields; the names
they export are importable from here too.

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
imported history (core/import_kinds.py): post/origin, import/claim, import/confirm
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

from collections.abc import Callable

from . import chat_kinds, doc_kinds, import_kinds, workspace_kinds
from .chat_kinds import (
    CHAT_KINDS,
    DELETABLE_KINDS,
    DESCRIPTOR_FIELDS,
    MAX_CHANNEL,
    MAX_EMOJI,
    MAX_EMOJI_PER_MEMBER,
    MAX_FILE_NAME,
    MAX_FILES,
    MAX_MEDIA_TYPE,
    MAX_NICK,
    MAX_TEXT_BYTES,
    MAX_THUMB,
    MAX_TOPIC,
    MESSAGE_KINDS,
    MOD_ROLES,
    check_descriptor,
    check_emoji,
    check_file_name,
    check_files,
    check_message,
)
from .doc_kinds import EDITING, MAX_NOTE, MAX_TITLE, VISIBILITIES
from .fields import (
    BOX_NONCE_SIZE,
    MAX_LIST,
    MAX_NAME,
    MAX_REASON,
    MAX_SEALED,
    NONCE_SIZE,
    bad,
    check_name,
    check_reason,
)
from .streams import (
    CHANNEL_CLASS,
    DOCUMENT_CLASS,
    GENESIS_STREAM,
    WORKSPACE_CLASS,
    channel_key,
    channel_stream,
    profile_stream,
    stream_class,
)
from .workspace_kinds import INVITE_TAG_SIZE, MAX_KEPT

__all__ = [
    "BOX_NONCE_SIZE", "CHANNEL_CLASS", "CHAT_KINDS", "DELETABLE_KINDS", "DESCRIPTOR_FIELDS",
    "DOCUMENT_CLASS", "EDITING", "GENESIS_STREAM", "INVITE_TAG_SIZE", "KINDS", "MAX_CHANNEL",
    "MAX_EMOJI", "MAX_EMOJI_PER_MEMBER", "MAX_FILES", "MAX_FILE_NAME", "MAX_KEPT", "MAX_LIST",
    "MAX_MEDIA_TYPE", "MAX_NAME", "MAX_NICK", "MAX_NOTE", "MAX_REASON", "MAX_SEALED",
    "MAX_TEXT_BYTES", "MAX_THUMB", "MAX_TITLE", "MAX_TOPIC", "MESSAGE_KINDS", "MOD_ROLES",
    "NONCE_SIZE", "VISIBILITIES", "WORKSPACE_CLASS", "channel_key", "channel_stream",
    "check_body", "check_descriptor", "check_emoji", "check_file_name", "check_files",
    "check_message", "check_name", "check_reason", "profile_stream", "stream_class",
]

# kind -> (exact body field names, checker)
KINDS: dict[str, tuple[frozenset[str], Callable[[dict], None]]] = {
    **chat_kinds.BODIES, **doc_kinds.BODIES, **workspace_kinds.BODIES,
    **import_kinds.BODIES}


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
        raise bad(f"{kind} body: missing {missing}, unexpected {extra}")
    checker(body)
    return plain and kind not in _NESTED
