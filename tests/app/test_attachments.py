"""Files and images attached to messages (app/attachments.py, app/thumbnails.py) with real
replicas: objects travel as sync moves them (tests.support.share) and chunks are copied
ChunkStore to ChunkStore (the network's part is tests/sync's). A file attached at A is saved
at B byte for byte; identical files are stored once; a private channel's files are unreadable
without its key; hostile names are saved safely; the quota evicts others' files least
recently opened first; a deleted message's chunks go; images are thumbnailed within bounds."""

from __future__ import annotations

import errno
import hashlib
import io
import os
import struct
import threading
import time
import zlib
from pathlib import Path

import pytest
from PIL import Image

from app import preferences, thumbnails
from app.attachments import Wanted, safe_name
from app.facade import FILE_WORKERS
from app.workspace import Workspace, WorkspaceError
from core.attachments import CHUNK_SIZE, chunk_id
from core.kinds import MAX_THUMB
from storage.chunks import ChunkStore
from tests.support import (
    CHANNEL,
    TIMEOUT_S,
    Cluster,
    channels,
    create_workspace,
    join_member,
    share,
)


@pytest.fixture
def workspaces(tmp_path):
    """(alice's Workspace, bob's): two members of one workspace, each holding what the other
    wrote (tests.support.share)."""
    pa = create_workspace(tmp_path, "a", "alice")
    pb = join_member(tmp_path, pa, "b", "bob")
    a, b = Workspace.open(pa), Workspace.open(pb)
    share(a, b)
    share(b, a)
    yield a, b
    a.close()
    b.close()


def _copy_chunks(source: Workspace, target: Workspace) -> None:
    for cid in source.files.chunks.ids():
        target.files.chunks.put(cid, source.files.chunks.read(cid))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _png(path: Path, size=(640, 480)) -> Path:
    image = Image.effect_noise(size, 60).convert("RGB")
    image.save(path, "PNG")
    return path


def test_a_file_attached_at_a_is_saved_identical_at_b(workspaces, tmp_path):
    a, b = workspaces
    original = _write(tmp_path / "big.bin", os.urandom(20 * 2**20))
    obj = a.files.attach("general", [original], "the dataset")
    (mine,) = a.read("general")[-1].files
    assert (mine.name, mine.size, mine.complete, mine.mine) == ("big.bin", 20 * 2**20, True,
                                                                 True)
    share(a, b)
    (theirs,) = b.read("general")[-1].files
    assert not theirs.complete and not theirs.mine
    assert b.files.wanted(100 * 2**20) and not b.files.wanted(2**20)  # the limit counts
    with pytest.raises(WorkspaceError, match="not complete here"):
        b.files.save(obj.id, 0, tmp_path / "out")
    assert b.files.chunk_ids(theirs.list) is None  # its list chunk has not arrived yet
    _copy_chunks(a, b)
    assert len(b.files.chunk_ids(theirs.list)) == 80 and b.files.complete(theirs.list)
    assert b.read("general")[-1].files[0].complete and b.files.wanted(2**40) == []
    saved = b.files.save(obj.id, 0, tmp_path / "out")
    assert saved == tmp_path / "out" / "big.bin" and _sha(saved) == _sha(original)
    again = b.files.save(obj.id, 0, tmp_path / "out")  # never replaces a file
    assert again.name == "big (1).bin" and _sha(again) == _sha(original)
    assert [p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(".")] == []


def test_identical_files_are_stored_once(workspaces, tmp_path):
    a, _ = workspaces
    data = os.urandom(600_000)
    a.files.attach("general", [_write(tmp_path / "one.bin", data)])
    held = sorted(a.files.chunks.ids())
    channels(a, "random")
    a.files.attach("random", [_write(tmp_path / "two.bin", data)], "same bytes, other name")
    assert sorted(a.files.chunks.ids()) == held and len(held) == 3 + 1
    usage = a.files.usage()
    assert usage.files == 1 and usage.mine == usage.total > 600_000


def test_private_files_are_unreadable_without_the_channels_key(tmp_path):
    ada_p = create_workspace(tmp_path, "ada", "ada")
    others = [join_member(tmp_path, ada_p, n, n) for n in ("bob", "cat")]
    ada, bob, cat = (Workspace.open(p) for p in (ada_p, *others))
    for ws in (ada, bob, cat):
        share(ws, *[o for o in (ada, bob, cat) if o is not ws])
    channel = ada.private.create("plans", [bob.key])
    secret = b"MARKER-private-file " * 5000
    obj = ada.files.attach_private(channel, [_write(tmp_path / "plan-MARKER.txt", secret)], "see")
    share(ada, bob, cat)
    _copy_chunks(ada, bob)
    _copy_chunks(ada, cat)
    (shown,) = bob.private.read(channel)[-1].files
    assert shown.name == "plan-MARKER.txt" and bob.files.complete(shown.list)
    assert _sha(bob.files.save(obj.id, 0, tmp_path / "bob-out")) == \
        hashlib.sha256(secret).hexdigest()
    assert [w.list for w in bob.files.wanted(2**30)] == []
    with pytest.raises(WorkspaceError):
        cat.files.ref(obj.id, 0)
    assert cat.files.wanted(2**30) == []
    cat.replica.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for path in (tmp_path / "cat").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"MARKER" not in data, path  # neither the name nor the content
    public = ada.files.attach("general", [tmp_path / "plan-MARKER.txt"])
    assert public.body["files"][0]["list"] != shown.list  # another scope, other chunks
    for ws in (ada, bob, cat):
        ws.close()


@pytest.mark.parametrize("name, saved", [
    ("../../etc/passwd", "passwd"), ("/abs", "abs"), ("C:\\x", "x"), ("CON", "_CON"),
    ("nul.txt", "_nul.txt"), ("com1.tar.gz", "_com1.tar.gz"), (".bashrc", "bashrc"),
    ("a\x00b\x1b[31mc\u202e.txt", "ab[31mc.txt"), ("..", "attachment"), ("   ", "attachment"),
    ("\x01\x02", "attachment"), ("report. ", "report"), ('what?<>|"*.pdf', "what______.pdf"),
])
def test_hostile_names_are_saved_safely(workspaces, tmp_path, name, saved):
    a, _ = workspaces
    obj = a.files.attach("general", [_write(tmp_path / "f.txt", b"hello")])
    out = tmp_path / "out"
    path = a.files.save(obj.id, 0, out, name)
    assert path == out / saved and path.read_bytes() == b"hello"
    assert safe_name(name) == saved
    assert [p for p in tmp_path.rglob("passwd") if p.parent != out] == []


def test_a_long_name_keeps_its_extension(tmp_path):
    name = safe_name("é" * 300 + ".pdf")
    assert name.endswith(".pdf") and len(name.encode()) <= 255


def test_quota_evicts_others_files_least_recently_opened_first(workspaces, tmp_path):
    a, b = workspaces
    b.files.attach("general", [_write(tmp_path / "mine.bin", os.urandom(300_000))])
    ids = [a.files.attach("general", [_write(tmp_path / f"f{n}.bin", os.urandom(300_000 + n))]).id
           for n in range(4)]
    share(a, b)
    _copy_chunks(a, b)
    lists = [b.files.ref(i, 0).list for i in ids]
    assert all(b.files.complete(lst) for lst in lists)
    b.files.pin(ids[0], 0)
    b.files.open(ids[2], 0)  # opened: kept longer than those never opened
    before = b.files.usage()
    assert before.files == 5 and before.pinned > 0 and before.mine > 0
    freed = b.files.evict(before.others - 400_000)  # the quota is for others' unpinned files
    assert freed > 600_000
    complete = {lst: b.files.ref(i, 0).attachment.complete for i, lst in
                zip(ids, lists, strict=True)}
    assert complete == {lists[0]: True, lists[1]: False, lists[2]: True, lists[3]: False}
    assert b.read("general")[-5].files[0].mine  # my upload stays
    assert [w.list for w in b.files.wanted(2**30)] == []  # not fetched again on its own
    b.files.evict(0)
    after = b.files.usage()
    assert after.others == 0 and after.total == after.mine + after.pinned
    assert not (b.paths.workspace_dir / "opened" / lists[2].hex()[:16]).exists()


def test_a_deleted_message_takes_its_chunks_everywhere(workspaces, tmp_path):
    a, b = workspaces
    obj = a.files.attach("general", [_write(tmp_path / "gone.bin", os.urandom(700_000))])
    share(a, b)
    _copy_chunks(a, b)
    assert list(b.files.chunks.ids())
    a.conversation.delete(obj.id)
    assert list(a.files.chunks.ids()) == []
    share(a, b)
    assert list(b.files.chunks.ids()) == [] and b.files.usage().files == 0


def test_attach_refuses_what_cannot_travel(workspaces, tmp_path):
    a, _ = workspaces
    with pytest.raises(WorkspaceError, match="1 to 4 files"):
        a.files.attach("general", [])
    with pytest.raises(WorkspaceError, match="1 to 4 files"):
        a.files.attach("general", [_write(tmp_path / f"{n}", b"x") for n in range(5)])
    with pytest.raises(WorkspaceError, match="not a file"):
        a.files.attach("general", [tmp_path])
    with pytest.raises(WorkspaceError, match="cannot read"):
        a.files.attach("general", [tmp_path / "missing"])
    huge = tmp_path / "huge.bin"
    with open(huge, "wb") as f:
        f.truncate((4 << 30) + 1)  # sparse: nothing written
    with pytest.raises(WorkspaceError, match="at most 4 GiB"):
        a.files.attach("general", [huge])
    assert list(a.files.chunks.ids()) == []


def test_an_image_gets_its_size_and_a_thumbnail_that_fits(workspaces, tmp_path):
    a, _ = workspaces
    obj = a.files.attach("general", [_png(tmp_path / "noise.png", (2000, 1500)),
                               _write(tmp_path / "notes.txt", b"plain")])
    image, text = a.read("general")[-1].files
    assert (image.media_type, image.width, image.height) == ("image/png", 2000, 1500)
    assert 0 < len(image.thumb) <= MAX_THUMB
    with Image.open(io.BytesIO(image.thumb)) as thumb:
        assert thumb.format == "JPEG" and max(thumb.size) <= thumbnails.THUMB_SIDE
    assert (text.media_type, text.width, text.thumb) == ("text/plain", 0, b"")
    assert obj.body["files"][0]["thumb"] == image.thumb


@pytest.mark.parametrize("fmt, kind", [("JPEG", "image/jpeg"), ("GIF", "image/gif"),
                                       ("WEBP", "image/webp")])
def test_every_image_format_is_thumbnailed(tmp_path, fmt, kind):
    path = tmp_path / "picture.bin"  # the bytes say what it is, not the name
    Image.effect_noise((400, 300), 80).convert("RGB").save(path, fmt)
    look = thumbnails.look(path)
    assert (look.media_type, look.width, look.height) == (kind, 400, 300)
    assert 0 < len(look.thumb) <= MAX_THUMB


def _png_header(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + \
        chunk(b"IDAT", zlib.compress(b"\0" * 1024)) + chunk(b"IEND", b"")


def test_a_decompression_bomb_is_attached_as_a_plain_file(workspaces, tmp_path):
    a, _ = workspaces
    bomb = _write(tmp_path / "bomb.png", _png_header(100_000, 100_000))
    look = thumbnails.look(bomb)
    assert (look.media_type, look.width, look.height, look.thumb) == ("image/png", 0, 0, b"")
    a.files.attach("general", [bomb])
    (shown,) = a.read("general")[-1].files
    assert (shown.name, shown.thumb, shown.width) == ("bomb.png", b"", 0)


def test_a_broken_image_is_just_a_file(tmp_path):
    broken = _write(tmp_path / "broken.jpg", b"\xff\xd8\xff\xe0" + os.urandom(500))
    assert thumbnails.look(broken) == thumbnails.FileLook("image/jpeg")
    named = _write(tmp_path / "report.pdf", b"%PDF-1.4 hello")
    assert thumbnails.look(named).media_type == "application/pdf"


def test_file_preferences_have_defaults_and_bounds(tmp_path):
    prefs = preferences.load(tmp_path)
    assert (prefs.auto_download_mb, prefs.storage_quota_mb) == (25, 10240)
    assert preferences.save(tmp_path, storage_quota_mb=500).storage_quota_mb == 500
    assert preferences.load(tmp_path).appearance == "system"
    with pytest.raises(preferences.PreferenceError):
        preferences.save(tmp_path, auto_download_mb=-1)


# A member's list made of my chunks, forged sizes, failed attaches ------------------------------

def _borrow(forger: Workspace, victim: Workspace, upload, k: int = 2):
    """A post of `forger` naming a list made of the first k chunk ids of `upload` (a message
    of `victim`), that list already fetched by the victim; (post, list id)."""
    d = upload.body["files"][0]
    borrowed = b"".join(victim.files.chunk_ids(d["list"])[:k])
    lid = chunk_id(borrowed)
    forger.files.chunks.put(lid, borrowed)
    channel, stream = forger.channel_stream("general")
    post = forger.publish("post/file", stream, {"channel": channel, "text": "", "files": [
        dict(d, list=lid, size=k * CHUNK_SIZE, name="innocent.bin")]})
    share(forger, victim)
    victim.files.chunks.put(lid, borrowed)
    assert victim.files.complete(lid)
    return post, lid


@pytest.mark.parametrize("how", ["delete", "evict"])
def test_a_members_list_of_my_chunks_never_takes_my_upload(workspaces, tmp_path, how):
    a, b = workspaces
    data = os.urandom(3 * CHUNK_SIZE + 10)
    mine = b.files.attach("general", [_write(tmp_path / "mine.bin", data)])
    share(b, a)
    post, lid = _borrow(a, b, mine)
    if how == "delete":
        a.conversation.delete(post.id)
        share(a, b)
        assert b.replica.files.state(lid) is None
    else:
        assert b.files.evict(0) > 0 and not b.files.complete(lid)
    assert b.files.complete(mine.body["files"][0]["list"])
    assert _sha(b.files.save(mine.id, 0, tmp_path / "out")) == \
        hashlib.sha256(data).hexdigest()


def test_a_wrong_size_named_first_does_not_decide_the_files_size(workspaces, tmp_path):
    a, b = workspaces
    data = os.urandom(3 * CHUNK_SIZE + 10)
    real = a.files.attach("general", [_write(tmp_path / "real.bin", data)])
    d = real.body["files"][0]
    channel, stream = a.channel_stream("general")
    forged = a.publish("post/file", stream, {"channel": channel, "text": "",
                                             "files": [dict(d, size=3 * CHUNK_SIZE + 5)]})
    b.replica.ingest([forged])  # the forged size is the first b hears of
    share(a, b)
    assert set(b.files.wanted(2**30)) == {Wanted(d["list"], 3 * CHUNK_SIZE + 5),
                                         Wanted(d["list"], len(data))}
    assert b.files.ref(forged.id, 0).attachment.size == 3 * CHUNK_SIZE + 5
    assert b.files.ref(real.id, 0).attachment.size == len(data)
    _copy_chunks(a, b)
    assert not b.files.complete(d["list"], 3 * CHUNK_SIZE + 5)
    assert b.files.complete(d["list"], len(data)) and b.files.complete(d["list"])
    assert len(b.files.chunk_ids(d["list"])) == 4
    assert _sha(b.files.save(real.id, 0, tmp_path / "out")) == \
        hashlib.sha256(data).hexdigest()
    with pytest.raises(WorkspaceError):
        b.files.save(forged.id, 0, tmp_path / "out")
    assert b.files.wanted(2**30) == []


def _full_disk(monkeypatch, after: int) -> None:
    """The disk fills after `after` new chunks (a chunk already held is not written again)."""
    real, written = ChunkStore.put, [0]

    def put(store, cid, data, **kw):
        if not store.has(cid):
            written[0] += 1
            if written[0] > after:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real(store, cid, data, **kw)
    monkeypatch.setattr(ChunkStore, "put", put)


def test_a_failed_attach_leaves_only_the_chunks_held_before(workspaces, tmp_path, monkeypatch):
    a, _ = workspaces
    kept = _write(tmp_path / "kept.bin", os.urandom(2 * CHUNK_SIZE))
    a.files.attach("general", [kept])
    held = set(a.files.chunks.ids())
    _full_disk(monkeypatch, after=5)
    with pytest.raises(WorkspaceError, match="No space left"):
        a.files.attach("general", [kept, _write(tmp_path / "big.bin", os.urandom(10 * CHUNK_SIZE))])
    assert set(a.files.chunks.ids()) == held
    monkeypatch.undo()
    growing = _write(tmp_path / "growing.bin", os.urandom(3 * CHUNK_SIZE))
    real_put = ChunkStore.put

    def grow(store, cid, data, **kw):  # the file grows while it is read
        with open(growing, "ab") as f:
            f.write(b"more")
        return real_put(store, cid, data, **kw)
    monkeypatch.setattr(ChunkStore, "put", grow)
    with pytest.raises(WorkspaceError, match="changed"):
        a.files.attach("general", [growing])
    assert set(a.files.chunks.ids()) == held


def test_a_file_deleted_while_it_was_fetched_leaves_nothing(workspaces, tmp_path):
    a, b = workspaces
    obj = a.files.attach("general", [_write(tmp_path / "gone.bin", os.urandom(3 * CHUNK_SIZE))])
    lst = obj.body["files"][0]["list"]
    in_flight = {cid: a.files.chunks.read(cid) for cid in a.files.chunks.ids()}
    share(a, b)
    b.files.chunks.put(lst, in_flight[lst])  # the fetch has begun
    a.conversation.delete(obj.id)
    share(a, b)
    for cid, chunk in in_flight.items():  # what was still on its way lands
        b.files.chunks.put(cid, chunk)
    assert not b.files.complete(lst)
    assert list(b.files.chunks.ids()) == []


def test_opening_the_workspace_drops_what_a_crash_left_half_written(tmp_path):
    paths = create_workspace(tmp_path, "a", "alice")
    with Workspace.open(paths) as ws:
        tmp = ws.files.chunks.folder / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    left = tmp / "abcdef12xyz"
    left.write_bytes(b"half a chunk")
    old = time.time() - 3600
    os.utime(left, (old, old))
    with Workspace.open(paths) as ws:
        ws.files.chunks.has(b"\0" * 32)
        assert not left.exists()


def test_the_quota_counts_only_others_files(workspaces, tmp_path):
    a, b = workspaces
    b.files.attach("general", [_write(tmp_path / "mine.bin", os.urandom(1_000_000))])
    theirs = a.files.attach("general", [_write(tmp_path / "theirs.bin", os.urandom(300_000))])
    share(a, b)
    _copy_chunks(a, b)
    lst = theirs.body["files"][0]["list"]
    assert b.files.complete(lst)
    assert b.files.evict(500_000) == 0 and b.files.complete(lst)
    assert b.files.evict(200_000) > 0 and not b.files.complete(lst)


def test_attaching_and_saving_leave_the_nodes_thread_free(tmp_path):
    data = os.urandom(3 * CHUNK_SIZE + 1)
    with Cluster(tmp_path) as cluster:
        (pa,) = cluster.members(1)
        node = cluster.start(pa)
        facade = node.facade
        release = threading.Event()
        busy = [facade._files.submit(release.wait, TIMEOUT_S) for _ in range(FILE_WORKERS)]
        attaching = facade.attach(CHANNEL, [_write(tmp_path / "big.bin", data)], "big")
        assert facade.run(lambda ws: ws.post(CHANNEL, "meanwhile").id).result(TIMEOUT_S)  # the loop answers
        assert not attaching.done()
        release.set()
        assert all(f.result(TIMEOUT_S) for f in busy)
        message_id = attaching.result(TIMEOUT_S)
        shown = facade.run(lambda ws: ws.read(CHANNEL)).result(TIMEOUT_S)
        assert [m.text for m in shown[-2:]] == ["meanwhile", "big"] and shown[-1].files[0].mine
        saved = facade.save_attachment(message_id, 0, tmp_path / "out").result(TIMEOUT_S)
        opened = facade.open_attachment(message_id, 0).result(TIMEOUT_S)
        assert saved.read_bytes() == data and opened.read_bytes() == data
