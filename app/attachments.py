"""Files and images attached to messages: a workspace's `ws.files` (issue #19; docs/ARCHITECTURE.md
"Attachments").

Attaching streams each file twice (core.attachments.seal_file: its digest, then its chunks)
into the ChunkStore beside the replica, so memory stays bounded whatever its size, and posts
a message whose `files` name them: a public channel's in the clear (its key derived with the
workspace id as scope), a private channel's inside the sealed box (scope: the channel's
newest key), so relays learn nothing of it. My own uploads are complete and kept here.
Attaching is two steps, so the Node hashes and encrypts in a worker thread while its loop
keeps serving (app/facade.py): `seal` touches only the ChunkStore, and
`publish` posts the message on the Node's thread; a failed attach removes the
chunks it wrote new.

Fetching what is missing from peers is the Node's (sync/, app/node.py): it asks this module
which files are wanted (`wanted`: one per list and size claimed), what chunks a file
has (`chunk_ids`) and whether it is complete (`complete`: the chunks consistent with
one size a message claims; each message claims its own, so a forged size never blocks the
real one). Saving writes the plaintext chunk by chunk into a temporary
file beside the target and renames it under a safe name that never leaves the folder and
never replaces a file; opening decrypts into `<workspace>/opened/` and only ever happens on
the person's request; both decrypt off the Node's thread too (`ready`, then
`save_ready` or `open_ready`). The quota is for others' unpinned files and evicts them, least
recently opened first; my uploads and pinned files stay, and so does every chunk that the
list of another file held here names.
"""

from __future__ import annotations

import os
import tempfile
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core import kinds
from core.attachments import (
    ID_SIZE,
    MAX_FILE_SIZE,
    TAG_SIZE,
    AttachmentError,
    chunk_count,
    chunk_size,
    open_file,
    parse_list,
    seal_file,
)
from core.objects import Object
from storage import NotFound
from storage._files import OPENED, FileState, attachment
from storage.chunks import ChunkStore

from . import preferences, thumbnails
from .errors import WorkspaceError
from .file_names import DEFAULT_NAME, safe_name
from .file_records import (
    AttachTarget,
    FileRef,
    ReadyFile,
    SealedFiles,
    StorageUsage,
    Wanted,
)

if TYPE_CHECKING:
    from storage import Replica

    from .workspace import Workspace

__all__ = ["AttachTarget", "Attachments", "FileRef", "ReadyFile", "SealedFiles", "StorageUsage",
           "Wanted", "safe_name", "stored_bytes"]


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
    """A workspace's attached files (`ws.files`): it posts through the workspace (and its
    private channels' keys) and keeps the chunks in the replica's ChunkStore."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.replica: Replica = ws.replica
        self._chunk_store: ChunkStore | None = None

    @property
    def chunks(self) -> ChunkStore:
        store = self._chunk_store
        if store is None:  # opened: what a crash left half-written goes
            store = self._chunk_store = self.replica.chunks
            store.clean()
        return store

    # Attaching --------------------------------------------------------------------------------

    def seal(self, paths: Sequence[Path], scope: bytes) -> SealedFiles:
        """Make these files into chunks in the ChunkStore (from any thread: it touches nothing
        else); a failure removes the chunks it wrote new."""
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
        new: list[bytes] = []

        def put(cid: bytes, chunk: bytes) -> None:
            if store.put(cid, chunk):
                new.append(cid)

        out = []
        try:
            for path in files:
                name = _descriptor_name(path)
                try:
                    with open(path, "rb") as f:
                        sealed = seal_file(f, scope, put)
                    look = thumbnails.look(path, name)
                except AttachmentError as exc:
                    raise WorkspaceError(f"{path.name}: {exc}") from None
                except OSError as exc:
                    raise WorkspaceError(f"cannot attach {path.name}: "
                                         f"{exc.strerror or exc}") from None
                out.append({"name": name, "size": sealed.size, "type": look.media_type,
                            "list": sealed.list, "key": sealed.key, "w": look.width,
                            "h": look.height, "thumb": look.thumb})
        except BaseException:
            self.discard(SealedFiles((), tuple(new)))
            raise
        return SealedFiles(tuple(out), tuple(new))

    def discard(self, sealed: SealedFiles) -> None:
        """Remove the chunks a sealing wrote new, but any a file held here names."""
        kept = self.replica.files.named_elsewhere(sealed.new)
        self.chunks.remove(cid for cid in sealed.new if cid not in kept)

    def target(self, channel: str, text: str = "") -> AttachTarget:
        """Where `attach` posts to a public channel this computer knows (WorkspaceError when
        it cannot; UnknownChannel for a name it does not know: posting never makes one)."""
        self._check_text(text)
        name, stream = self.ws.writable(channel)
        return AttachTarget(name, stream, 0, self.ws.id)

    def private_target(self, channel: bytes, text: str = "") -> AttachTarget:
        """Where `attach_private` posts: the channel's newest key is the files' scope."""
        self._check_text(text)
        epoch, key = self.ws.private.newest_key(channel)
        return AttachTarget(channel, None, epoch, key)

    def publish(self, target: AttachTarget, sealed: SealedFiles,
                text: str = "") -> Object:
        """Post sealed files (on the Node's thread); when that fails, their new chunks go."""
        descriptors = list(sealed.descriptors)
        try:
            if target.stream is not None:
                obj = self.ws.publish("post/file", target.stream, {
                    "channel": target.channel, "text": text, "files": descriptors})
            else:
                channel = target.channel
                assert isinstance(channel, bytes)
                if self.ws.private.newest_key(channel)[0] != target.epoch:
                    raise WorkspaceError("the channel's key changed while the files were "
                                         "being attached; attach them again")
                obj = self.ws.private.post_sealed(channel, target.epoch, target.scope,
                                        {"text": text, "files": descriptors})
                self.replica.files.record_private(channel, obj, descriptors)
        except BaseException:
            self.discard(sealed)
            raise
        for d in descriptors:
            self.replica.files.set(d["list"], mine=1, complete=1, evicted=0, size=d["size"])
        return obj

    def attach(self, channel: str, paths: Sequence[Path], text: str = "") -> Object:
        """Post `paths` (1 to 4 files, each at most 4 GiB) to a public channel, with `text`."""
        target = self.target(channel, text)
        return self.publish(target, self.seal(paths, target.scope), text)

    def attach_private(self, channel: bytes, paths: Sequence[Path], text: str = "") -> Object:
        """Post files to a private channel or direct message I am in: the descriptors go
        inside the sealed box, the chunks are encrypted in the scope of the channel's key."""
        target = self.private_target(channel, text)
        return self.publish(target, self.seal(paths, target.scope), text)

    @staticmethod
    def _check_text(text: str) -> None:
        if len(text.encode("utf-8", "surrogatepass")) > kinds.MAX_TEXT_BYTES:
            raise WorkspaceError(f"a message's text is at most {kinds.MAX_TEXT_BYTES} bytes")

    # Finding a file ---------------------------------------------------------------------------

    def ref(self, message_id: bytes, index: int) -> FileRef:
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
                                  bool(state and state.mine), bool(state and state.pinned)),
                       d["key"])

    def _sealed_files(self, post: Object) -> list[dict] | None:
        """The descriptors of a private post I can open (listing them here)."""
        channel = post.body["channel"]
        try:
            view = self.ws.private.view(channel)
        except WorkspaceError:
            return None
        if self.ws.key not in view.current:
            return None
        opened = self.ws.private.open_post(view, post)
        if opened is None:
            return None
        files = opened.get("files", [])
        if files:
            self.replica.files.record_private(channel, post, files)
        return files

    def chunk_ids(self, list_id: bytes, size: int | None = None) -> list[bytes] | None:
        """The chunk ids of a file, when its list chunk is held (None when not yet), read for
        `size`, or for any size a message held here claims."""
        sizes = [size] if size is not None else self.replica.files.sizes(list_id)
        if not sizes:
            raise WorkspaceError("no message here names that file")
        data = self.chunks.read(list_id)
        if data is None:
            return None
        for claimed in sizes:
            try:
                return parse_list(data, claimed)
            except AttachmentError:
                continue
        raise WorkspaceError("the file's chunk list does not match its size")

    def _index_private_files(self) -> None:
        """List the files of the private messages I can open: the conversation lists them as
        it indexes what arrived (app.private_conversation)."""
        for channel in self.ws.private.channels():
            self.ws.private.conversation.follow(channel.id)

    def wanted(self, limit: int) -> list[Wanted]:
        """Files of visible messages in the channels I am in (public ones joined, private
        ones I am in), not complete here and not evicted, at most `limit` bytes; newest
        first."""
        self._index_private_files()
        private = [c.id for c in self.ws.private.channels()]
        return [Wanted(lst, size)
                for lst, size, _ in self.replica.files.wanted(limit, self.ws.key, private)]

    def _consistent(self, list_id: bytes, size: int) -> bool:
        """Whether the list and every chunk of a file of `size` bytes are here."""
        data = self.chunks.read(list_id)
        try:
            ids = parse_list(data, size) if data is not None else None
        except AttachmentError:
            return False
        return ids is not None and all(self.chunks.size(cid) == chunk_size(n, size)
                                       for n, cid in enumerate(ids))

    def complete(self, list_id: bytes, size: int | None = None, *,
                 keep: Sequence[bytes] = ()) -> bool:
        """Whether every chunk of the file is here for `size`, or for one size a message
        claims (recorded); when it has just become so, others' files are evicted as the quota
        needs, but this one and `keep`. A file no message names any more loses its chunks."""
        files = self.replica.files
        claimed = files.sizes(list_id)
        if not claimed:  # deleted, perhaps while it was being fetched
            if files.state(list_id) is not None or self.chunks.has(list_id):
                files.forget(list_id)
            return False
        found = next((s for s in ([size] if size is not None else claimed)
                      if self._consistent(list_id, s)), None)
        state = files.state(list_id)
        if state is None:
            return False
        if found is not None:
            if not state.complete or state.evicted or state.size != found:
                files.set(list_id, complete=1, evicted=0, size=found)
                self.evict(self._quota(), keep=(list_id, *keep))
            return True
        if state.complete and (size is None or size == state.size):
            files.set(list_id, complete=0)
        return False

    # Reading a file ---------------------------------------------------------------------------

    def ready(self, message_id: bytes, index: int) -> ReadyFile:
        """File `index` of a message, complete here (on the Node's thread); WorkspaceError
        when it is not."""
        ref = self.ref(message_id, index)
        size = ref.attachment.size
        if not self.complete(ref.list, size):
            raise WorkspaceError(f"{ref.attachment.name} is not complete here yet; "
                                 "`hearth download` fetches it")
        return ReadyFile(ref, tuple(self.chunk_ids(ref.list, size) or ()))

    def _decrypt_into(self, ready: ReadyFile, folder: Path) -> Path:
        """The file's plaintext in a new temporary file in `folder`."""
        ref = ready.ref
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".hearth-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                open_file(ref.key, list(ready.ids), ref.attachment.size, self.chunks.read, out)
        except AttachmentError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise WorkspaceError(f"{ref.attachment.name}: {exc}") from None
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return Path(tmp)

    def save_ready(self, ready: ReadyFile, out_dir: Path, name: str | None = None) -> Path:
        """`save_attachment`'s writing (from any thread: it touches only the ChunkStore)."""
        folder = Path(out_dir).expanduser()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = self._decrypt_into(ready, folder)
            try:
                target = _reserve(folder, safe_name(name if name is not None
                                                    else ready.ref.attachment.name))
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
        except OSError as exc:
            raise WorkspaceError(f"cannot save into {folder}: {exc.strerror or exc}") from None
        return target

    def save(self, message_id: bytes, index: int, out_dir: Path,
             name: str | None = None) -> Path:
        """Write file `index` of a message into `out_dir` under its own name (or `name`),
        made safe (`safe_name`), never replacing a file: "report (1).pdf" when taken."""
        return self.save_ready(self.ready(message_id, index), out_dir, name)

    def open_ready(self, ready: ReadyFile) -> Path:
        """`open_attachment`'s decrypting (from any thread: it touches only the ChunkStore and
        the opened folder)."""
        ref = ready.ref
        folder = self.ws.paths.workspace_dir / OPENED / ref.list.hex()[:16]
        target = folder / safe_name(ref.attachment.name)
        try:
            if not (target.is_file() and target.stat().st_size == ref.attachment.size):
                folder.mkdir(parents=True, exist_ok=True)
                os.replace(self._decrypt_into(ready, folder), target)
        except OSError as exc:
            raise WorkspaceError(f"cannot open {ref.attachment.name}: "
                                 f"{exc.strerror or exc}") from None
        return target

    def opened(self, list_id: bytes) -> None:
        """Record that a file was opened now (eviction takes the least recently opened)."""
        self.replica.files.set(list_id, opened=int(self.ws.clock() * 1000))

    def open(self, message_id: bytes, index: int) -> Path:
        """The file decrypted into `<workspace>/opened/` (reused when already there), for the
        person to open; records when it was last opened."""
        ready = self.ready(message_id, index)
        target = self.open_ready(ready)
        self.opened(ready.ref.list)
        return target

    # Storage ----------------------------------------------------------------------------------

    def _quota(self) -> int:
        return preferences.load(self.ws.paths.data).storage_quota_mb * 2**20

    def _held(self, state: FileState) -> int:
        if state.complete:
            return stored_bytes(state.size)
        return self.replica.files.held_bytes(state)

    def usage(self) -> StorageUsage:
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

    def set_preferences(self, *, auto_download_mb: int | None = None,
                        storage_quota_mb: int | None = None) -> int:
        """Change the data folder's file sizes (PreferenceError for a bad one); a smaller quota
        evicts others' files at once: the bytes freed."""
        changes = {name: value for name, value in (("auto_download_mb", auto_download_mb),
                                                   ("storage_quota_mb", storage_quota_mb))
                   if value is not None}
        prefs = preferences.save(self.ws.paths.data, **changes)
        return self.evict(prefs.storage_quota_mb * 2**20)

    def pin(self, message_id: bytes, index: int, pinned: bool = True) -> None:
        """Keep a file here whatever the quota (or let eviction take it again)."""
        ref = self.ref(message_id, index)
        self.replica.files.set(ref.list, pinned=pinned)

    def evict(self, quota: int, *, keep: Sequence[bytes] = ()) -> int:
        """Free others' unpinned files, least recently opened first (never opened: the oldest
        first), until they take at most `quota` bytes; my uploads, pinned files, `keep` and
        every chunk another file held here names stay. The bytes freed. An evicted file is not
        fetched again on its own."""
        states = self.replica.files.all()
        others = [s for s in states if not s.mine and not s.pinned]
        held = {s.list: self._held(s) for s in others}
        total = sum(held.values())
        if total <= quota:
            return 0
        newest = self.replica.files.newest_refs()
        candidates = sorted((s for s in others if s.list not in keep and held[s.list]),
                            key=lambda s: (s.opened, newest.get(s.list, 0), s.list))
        chosen = []
        for state in candidates:
            if total <= quota:
                break
            chosen.append(state.list)
            total -= held[state.list]
        freed = self.replica.files.drop_files(chosen)
        for lst in chosen:
            self.replica.files.set(lst, complete=0, evicted=1)
        return freed
