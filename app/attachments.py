"""Files and images attached to messages, as Workspace methods (issue #19; docs/ARCHITECTURE.md
"Attachments").

Attaching streams each file twice (core.attachments.seal_file: its digest, then its chunks)
into the ChunkStore beside the replica, so memory stays bounded whatever its size, and posts
a message whose `files` name them: a public channel's in the clear (its key derived with the
workspace id as scope), a private channel's inside the sealed box (scope: the channel's
newest key), so relays learn nothing of it. My own uploads are complete and kept here.

Fetching what is missing from peers is the Node's (sync/, app/node.py): it asks this module
which files are wanted (`wanted_files`), what chunks a file has (`file_chunks`) and whether it
is complete (`file_complete`). Saving writes the plaintext chunk by chunk into a temporary
file beside the target and renames it under a safe name that never leaves the folder and
never replaces a file; opening decrypts into `<workspace>/opened/` and only ever happens on
the person's request. The quota evicts others' files, least recently opened first; my
uploads and pinned files stay.
"""

from __future__ import annotations

import os
import re
import tempfile
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core import kinds
from core.attachments import (
    ID_SIZE,
    MAX_FILE_SIZE,
    TAG_SIZE,
    AttachmentError,
    chunk_count,
    open_file,
    seal_file,
)
from core.objects import Object
from storage import Attachment, NotFound
from storage._files import OPENED, FileState, attachment
from storage.chunks import ChunkStore

from . import preferences, thumbnails
from .errors import WorkspaceError

DEFAULT_NAME = "attachment"
MAX_SAVED_NAME = 255  # bytes of UTF-8: what most file systems allow in one name
# Names Windows keeps for devices, with any extension ("nul.txt" is NUL too).
_DEVICES = frozenset({"con", "prn", "aux", "nul", "conin$", "conout$",
                      *(f"{d}{n}" for d in ("com", "lpt") for n in "123456789¹²³")})
_UNSAFE = re.compile(r'[<>:"|?*]')


@dataclass(frozen=True, slots=True)
class FileRef:
    """File `index` of a message I can read: its descriptor and the key its chunks open with."""

    message: bytes
    index: int
    attachment: Attachment
    key: bytes

    @property
    def list(self) -> bytes:
        return self.attachment.list


@dataclass(frozen=True, slots=True)
class Wanted:
    """A file to fetch: its list chunk's id and size."""

    list: bytes
    size: int


@dataclass(frozen=True, slots=True)
class StorageUsage:
    """The bytes attached files' chunks take here, and the quota for others' files."""

    total: int
    mine: int  # my uploads (always kept)
    pinned: int  # pinned files of others (kept)
    others: int  # what eviction may free
    quota: int
    files: int  # files with chunks here


def safe_name(name: str) -> str:
    """A file name to save under that never leaves its folder: the last part of any path,
    without control characters, characters Windows refuses, leading dots (which hide a file)
    or trailing dots and spaces; a device name (CON, nul.txt) gets a leading "_"; at most
    MAX_SAVED_NAME bytes, the extension kept; DEFAULT_NAME when nothing is left."""
    name = unicodedata.normalize("NFC", str(name)).replace("\\", "/").split("/")[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")
    name = _UNSAFE.sub("_", name).strip().lstrip(".").rstrip(". ").strip()
    if not name:
        return DEFAULT_NAME
    if name.split(".")[0].rstrip().casefold() in _DEVICES:
        name = "_" + name
    stem, dot, ext = name.rpartition(".")
    if not dot or len(ext.encode()) > 16:
        stem, ext = name, ""
    ext = f".{ext}" if ext else ""
    while len((stem + ext).encode()) > MAX_SAVED_NAME:
        stem = stem[:-1]
    return (stem.rstrip(". ") or DEFAULT_NAME) + ext


def _numbered(name: str, n: int) -> str:
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        return f"{name} ({n})"
    return f"{stem} ({n}).{ext}"


def _reserve(folder: Path, name: str) -> Path:
    """An empty new file in `folder` named `name`, or "name (1).ext", ... if it is taken."""
    for n in range(10_000):
        candidate = folder / (name if n == 0 else _numbered(name, n))
        try:
            os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            return candidate
        except FileExistsError:
            continue
    raise WorkspaceError(f"too many files named like {name} in {folder}")


def _descriptor_name(path: Path) -> str:
    """The name a file travels under: its own, made a valid descriptor name."""
    name = unicodedata.normalize("NFC", path.name)
    name = "".join("_" if ch in "/\\" or unicodedata.category(ch) in ("Cc", "Cf", "Cs",
                                                                      "Zl", "Zp")
                   and ch != "\u200d" else ch for ch in name)
    if len(name) > kinds.MAX_FILE_NAME:
        stem, dot, ext = name.rpartition(".")
        keep = kinds.MAX_FILE_NAME - len(ext) - 1
        name = stem[:keep] + dot + ext if dot and keep > 0 else name[:kinds.MAX_FILE_NAME]
    return name or DEFAULT_NAME


def stored_bytes(size: int) -> int:
    """What a whole file of `size` bytes takes in the chunk store (its list chunk too)."""
    count = chunk_count(size)
    return size + count * TAG_SIZE + count * ID_SIZE


class Attachments:
    """Mixed into app.workspace.Workspace, whose replica, paths, key, clock and publishing it
    uses (and app.private's channel views and keys)."""

    _private_indexed: set[bytes] | None = None  # sealed posts whose files are listed

    @property
    def chunks(self) -> ChunkStore:
        return self.replica.chunks

    # Attaching --------------------------------------------------------------------------------

    def _seal(self, paths: Sequence[Path], scope: bytes) -> list[dict]:
        """Descriptors of these files, their chunks put into the ChunkStore."""
        if not 1 <= len(paths) <= kinds.MAX_FILES:
            raise WorkspaceError(f"a message carries 1 to {kinds.MAX_FILES} files")
        files = [Path(p).expanduser() for p in paths]
        for path in files:
            try:
                info = path.stat()
            except OSError as exc:
                raise WorkspaceError(f"cannot read {path}: {exc.strerror}") from None
            if not path.is_file():
                raise WorkspaceError(f"{path} is not a file")
            if info.st_size > MAX_FILE_SIZE:
                raise WorkspaceError(f"{path.name} is {info.st_size / 2**30:.1f} GiB; a file "
                                     f"may be at most {MAX_FILE_SIZE >> 30} GiB")
        store = self.chunks
        out = []
        for path in files:
            name = _descriptor_name(path)
            try:
                with open(path, "rb") as f:
                    sealed = seal_file(f, scope, store.put)
                look = thumbnails.look(path, name)
            except AttachmentError as exc:
                raise WorkspaceError(f"{path.name}: {exc}") from None
            except OSError as exc:
                raise WorkspaceError(f"cannot attach {path.name}: {exc.strerror or exc}") \
                    from None
            out.append({"name": name, "size": sealed.size, "type": look.media_type,
                        "list": sealed.list, "key": sealed.key, "w": look.width,
                        "h": look.height, "thumb": look.thumb})
        return out

    def _mine(self, descriptors: list[dict]) -> None:
        for d in descriptors:
            self.replica.files.set(d["list"], mine=1, complete=1, evicted=0)

    def attach(self, channel: str, paths: Sequence[Path], text: str = "") -> Object:
        """Post `paths` (1 to 4 files, each at most 4 GiB) to a public channel, with `text`."""
        channel, stream = self._channel(channel)
        self._check_text(text)
        descriptors = self._seal(paths, self.id)
        obj = self.publish("post/file", stream, {"channel": channel, "text": text,
                                                 "files": descriptors})
        self._mine(descriptors)
        return obj

    def attach_private(self, channel: bytes, paths: Sequence[Path], text: str = "") -> Object:
        """Post files to a private channel or direct message I am in: the descriptors go
        inside the sealed box, the chunks are encrypted in the scope of the channel's key."""
        self._check_text(text)
        epoch, key = self._newest_key(channel)
        descriptors = self._seal(paths, key)
        obj = self._post_sealed(channel, epoch, key, {"text": text, "files": descriptors})
        self.replica.files.record_private(channel, obj, descriptors)
        self._mine(descriptors)
        return obj

    @staticmethod
    def _check_text(text: str) -> None:
        if len(text.encode("utf-8", "surrogatepass")) > kinds.MAX_TEXT_BYTES:
            raise WorkspaceError(f"a message's text is at most {kinds.MAX_TEXT_BYTES} bytes")

    # Finding a file ---------------------------------------------------------------------------

    def file_ref(self, message_id: bytes, index: int) -> FileRef:
        """File `index` of a message I can read here; WorkspaceError when there is none."""
        try:
            obj = self.replica.object(message_id)
        except NotFound:
            raise WorkspaceError(f"this replica holds no message {message_id.hex()}") from None
        if obj.type in kinds.MESSAGE_KINDS:
            if self.replica.message(message_id) is None:
                raise WorkspaceError("that message is not shown here")
            found = obj.body.get("files", [])
        elif obj.type == "post/sealed":
            found = self._sealed_files(obj)
            if found is None:
                raise WorkspaceError("that message is not readable here")
        else:
            raise WorkspaceError(f"{message_id.hex()[:12]} is not a message")
        if not 0 <= index < len(found):
            raise WorkspaceError(f"that message has {len(found) or 'no'} "
                                 f"{'file' if len(found) == 1 else 'files'}"
                                 + (f"; the index is 0 to {len(found) - 1}" if found else ""))
        d = found[index]
        state = self.replica.files.state(d["list"])
        return FileRef(message_id, index,
                       attachment(d, bool(state and state.complete),
                                  bool(state and state.mine)), d["key"])

    def _sealed_files(self, post: Object) -> list[dict] | None:
        """The descriptors of a private post I can open (listing them here)."""
        channel = post.body["channel"]
        try:
            view = self.private_view(channel)
        except WorkspaceError:
            return None
        if self.key not in view.current:
            return None
        opened = self._open_post(view, post)
        if opened is None:
            return None
        files = opened.get("files", [])
        if files:
            self.replica.files.record_private(channel, post, files)
        return files

    def file_chunks(self, list_id: bytes) -> list[bytes] | None:
        """The chunk ids of a file, when its list chunk is held (None when not yet)."""
        size = self.replica.files.claimed_size(list_id)
        if size is None:
            raise WorkspaceError("no message here names that file")
        try:
            return self.replica.files.chunk_ids(list_id, size)
        except AttachmentError as exc:
            raise WorkspaceError(f"the file's chunk list is bad: {exc}") from None

    def file_size(self, list_id: bytes) -> int | None:
        """The size a message held here claims for the file."""
        return self.replica.files.claimed_size(list_id)

    def _index_private_files(self) -> None:
        """List the files of private posts I can open that are not listed yet."""
        seen = self._private_indexed
        if seen is None:
            seen = self._private_indexed = set(self.replica.files.private_listed())
        for channel in self.private_channels():
            view = self.private_view(channel.id)
            for post in view.posts:
                if post.id not in seen:
                    seen.add(post.id)
                    opened = self._open_post(view, post)
                    if opened and opened.get("files"):
                        self.replica.files.record_private(channel.id, post, opened["files"])

    def wanted_files(self, limit: int) -> list[Wanted]:
        """Files of visible messages in the channels I am in (public ones joined, private
        ones I am in), not complete here and not evicted, at most `limit` bytes; newest
        first."""
        self._index_private_files()
        private = [c.id for c in self.private_channels()]
        return [Wanted(lst, size)
                for lst, size, _ in self.replica.files.wanted(limit, self.key, private)]

    def file_complete(self, list_id: bytes) -> bool:
        """Whether every chunk of the file is here (recorded); when it has just become so,
        others' files are evicted as the quota needs."""
        state = self.replica.files.state(list_id)
        if state is None:
            return False
        try:
            ids = self.replica.files.chunk_ids(list_id, state.size)
        except AttachmentError:
            ids = None
        complete = ids is not None and not self.chunks.missing(ids)
        if complete != state.complete or (complete and state.evicted):
            self.replica.files.set(list_id, complete=complete, evicted=0)
            if complete:
                self.evict(self._quota(), keep=(list_id,))
        return complete

    # Reading a file ---------------------------------------------------------------------------

    def _complete_ref(self, message_id: bytes, index: int) -> FileRef:
        ref = self.file_ref(message_id, index)
        if not self.file_complete(ref.list):
            raise WorkspaceError(f"{ref.attachment.name} is not complete here yet; "
                                 "`hearth download` fetches it")
        return ref

    def _decrypt_into(self, ref: FileRef, folder: Path) -> Path:
        """The file's plaintext in a new temporary file in `folder`."""
        ids = self.file_chunks(ref.list) or []
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".hearth-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                open_file(ref.key, ids, ref.attachment.size, self.chunks.read, out)
        except AttachmentError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise WorkspaceError(f"{ref.attachment.name}: {exc}") from None
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return Path(tmp)

    def save_attachment(self, message_id: bytes, index: int, out_dir: Path,
                        name: str | None = None) -> Path:
        """Write file `index` of a message into `out_dir` under its own name (or `name`),
        made safe (`safe_name`), never replacing a file: "report (1).pdf" when taken."""
        ref = self._complete_ref(message_id, index)
        folder = Path(out_dir).expanduser()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = self._decrypt_into(ref, folder)
            try:
                target = _reserve(folder, safe_name(name if name is not None
                                                    else ref.attachment.name))
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
        except OSError as exc:
            raise WorkspaceError(f"cannot save into {folder}: {exc.strerror or exc}") from None
        return target

    def open_attachment(self, message_id: bytes, index: int) -> Path:
        """The file decrypted into `<workspace>/opened/` (reused when already there), for the
        person to open; records when it was last opened."""
        ref = self._complete_ref(message_id, index)
        folder = self.paths.workspace_dir / OPENED / ref.list.hex()[:16]
        target = folder / safe_name(ref.attachment.name)
        try:
            if not (target.is_file() and target.stat().st_size == ref.attachment.size):
                folder.mkdir(parents=True, exist_ok=True)
                os.replace(self._decrypt_into(ref, folder), target)
        except OSError as exc:
            raise WorkspaceError(f"cannot open {ref.attachment.name}: "
                                 f"{exc.strerror or exc}") from None
        self.replica.files.set(ref.list, opened=int(self.clock() * 1000))
        return target

    # Storage ----------------------------------------------------------------------------------

    def _quota(self) -> int:
        return preferences.load(self.paths.data).storage_quota_mb * 2**20

    def _held(self, state: FileState) -> int:
        if state.complete:
            return stored_bytes(state.size)
        return self.replica.files.held_bytes(state)

    def storage_usage(self) -> StorageUsage:
        """What the attached files' chunks take here, by whose they are, and the quota."""
        mine = pinned = others = count = 0
        for state in self.replica.files.all():
            held = self._held(state)
            if not held:
                continue
            count += 1
            if state.mine:
                mine += held
            elif state.pinned:
                pinned += held
            else:
                others += held
        return StorageUsage(mine + pinned + others, mine, pinned, others, self._quota(), count)

    def pin(self, message_id: bytes, index: int, pinned: bool = True) -> None:
        """Keep a file here whatever the quota (or let eviction take it again)."""
        ref = self.file_ref(message_id, index)
        self.replica.files.set(ref.list, pinned=pinned)

    def evict(self, quota: int, *, keep: Sequence[bytes] = ()) -> int:
        """Free others' files, least recently opened first (never opened: the oldest
        first), until what is held is at most `quota` bytes; my uploads, pinned files and
        `keep` stay. The bytes freed. An evicted file is not fetched again on its own."""
        states = self.replica.files.all()
        held = {s.list: self._held(s) for s in states}
        total = sum(held.values())
        if total <= quota:
            return 0
        newest = self.replica.files.newest_refs()
        candidates = sorted(
            (s for s in states if not s.mine and not s.pinned and s.list not in keep
             and held[s.list]),
            key=lambda s: (s.opened, newest.get(s.list, 0), s.list))
        freed = 0
        for state in candidates:
            if total <= quota:
                break
            freed_now = self.replica.files.drop_chunks(state.list, state.size)
            self.replica.files.set(state.list, complete=0, evicted=1)
            total -= held[state.list]
            freed += freed_now
        return freed

