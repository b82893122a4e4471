"""Attached files in the replica (storage/_files.py): messages read with their files, a
deleted message's chunks gone unless another message names the same file, the view a
function of the objects held, and a version-11 file upgraded."""

from __future__ import annotations

import io
import os
import random
import sqlite3
import time

from core.attachments import CHUNK_SIZE, chunk_id, parse_list, seal_file
from storage import Replica
from storage._schema import SCHEMA_VERSION
from storage.chunks import STALE_TMP_S, ChunkStore
from tests.support import FakeClock

from .conftest import T0, add, new_replica


def _file(replica: Replica, data: bytes, scope: bytes) -> dict:
    """A descriptor of `data`, its chunks put in the replica's chunk store."""
    sealed = seal_file(io.BytesIO(data), scope, replica.chunks.put)
    return {"name": "notes.txt", "size": sealed.size, "type": "text/plain",
            "list": sealed.list, "key": sealed.key, "w": 0, "h": 0, "thumb": b""}


def _with_files(world, who, text, files, channel="general", **kw):
    return world.publish(who, "post/file", world.channel(channel),
                         {"channel": channel, "text": text, "files": files}, **kw)


def test_reads_threads_and_search_carry_the_files(tmp_path, world, people):
    alice = people["alice"]
    rep = new_replica(tmp_path / "r.sqlite", world)
    d = _file(rep, os.urandom(1000), world.ws)
    post = _with_files(world, alice, "quarterly numbers", [d])
    reply = world.reply(alice, post, "thanks")
    add(rep, post, reply)
    (shown,) = rep.messages("general")
    assert [(f.name, f.size, f.media_type, f.list) for f in shown.files] == [
        ("notes.txt", 1000, "text/plain", d["list"])]
    assert shown.files[0].complete is False and shown.files[0].mine is False
    assert rep.thread(post.id)[0].files == shown.files and rep.thread(post.id)[1].files == ()
    assert rep.search("quarterly")[0].files == shown.files
    assert rep.message(post.id).files == shown.files


def test_a_read_says_which_files_are_pinned_here(tmp_path, world, people):
    alice = people["alice"]
    rep = new_replica(tmp_path / "r.sqlite", world)
    kept, other = _file(rep, os.urandom(1000), world.ws), _file(rep, os.urandom(10), world.ws)
    post = _with_files(world, alice, "two files", [kept, other])
    add(rep, post)
    assert [f.pinned for f in rep.message(post.id).files] == [False, False]
    rep.files.set(kept["list"], pinned=1)
    assert [f.pinned for f in rep.message(post.id).files] == [True, False]
    assert [f.pinned for f in rep.messages("general")[0].files] == [True, False]
    rep.files.set(kept["list"], pinned=0)
    assert [f.pinned for f in rep.message(post.id).files] == [False, False]


def test_a_deleted_messages_chunks_go_unless_another_names_the_file(tmp_path, world, people):
    alice, bob = people["alice"], people["bob"]
    rep = new_replica(tmp_path / "r.sqlite", world)
    same = os.urandom(300_000)
    d = _file(rep, same, world.ws)
    other = _file(rep, os.urandom(10), world.ws)
    first = _with_files(world, alice, "", [d, other])
    second = _with_files(world, bob, "again", [_file(rep, same, world.ws)])
    add(rep, first, second)
    held = set(rep.chunks.ids())
    assert len(held) == 2 + 1 + 2  # two chunks and a list; one chunk and a list
    add(rep, world.delete(alice, first))
    assert rep.files.state(other["list"]) is None
    assert not rep.chunks.has(other["list"])
    assert rep.chunks.has(d["list"]) and len(set(rep.chunks.ids())) == 3  # bob's names it
    add(rep, world.delete(bob, second))
    assert list(rep.chunks.ids()) == [] and rep.files.all() == []


def test_a_list_made_of_another_files_chunks_takes_none_of_them(tmp_path, world, people):
    alice, bob = people["alice"], people["bob"]
    rep = new_replica(tmp_path / "r.sqlite", world)
    real = _file(rep, os.urandom(3 * CHUNK_SIZE), world.ws)
    ids = parse_list(rep.chunks.read(real["list"]), real["size"])
    borrowed = b"".join(ids[:2])  # bob's list names two chunks of alice's file
    rep.chunks.put(chunk_id(borrowed), borrowed)
    forged = dict(real, list=chunk_id(borrowed), size=2 * CHUNK_SIZE)
    first, second = _with_files(world, alice, "", [real]), _with_files(world, bob, "", [forged])
    add(rep, first, second)
    add(rep, world.delete(bob, second))
    assert set(rep.chunks.ids()) == {real["list"], *ids}
    listed = b"".join([real["list"]])  # a list naming alice's list chunk itself
    rep.chunks.put(chunk_id(listed), listed)
    third = _with_files(world, bob, "", [dict(real, list=chunk_id(listed), size=1)])
    add(rep, third, world.delete(alice, first))
    assert set(rep.chunks.ids()) == {chunk_id(listed), real["list"]}  # third names both
    add(rep, world.delete(bob, third))
    assert list(rep.chunks.ids()) == []


def test_only_stale_temporary_chunks_are_cleaned(tmp_path):
    store = ChunkStore(tmp_path / "chunks")
    tmp = store.folder / "tmp"
    tmp.mkdir(parents=True)
    stale, writing = tmp / "stale", tmp / "writing"
    stale.write_bytes(b"left by a crash")
    writing.write_bytes(b"being written by a running Node")
    old = time.time() - STALE_TMP_S - 1
    os.utime(stale, (old, old))
    store.clean()
    assert not stale.exists() and writing.exists()

def test_only_a_channels_own_stream_lists_files(tmp_path, world, people):
    rep = new_replica(tmp_path / "r.sqlite", world)
    d = _file(rep, b"x", world.ws)
    stray = world.publish(people["alice"], "post/file", world.channel("random"),
                          {"channel": "general", "text": "", "files": [d]})
    add(rep, stray)
    assert rep.files.all() == [] and rep.files.ref(stray.id, 0) is None


def test_the_files_view_does_not_depend_on_arrival_order(tmp_path, world, people):
    alice, bob = people["alice"], people["bob"]
    scratch = new_replica(tmp_path / "scratch.sqlite", world)
    d = _file(scratch, b"same", world.ws)
    one = _with_files(world, alice, "a", [d])
    two = _with_files(world, bob, "b", [d])
    objects = [one, two, world.delete(alice, one),
               _with_files(world, bob, "c", [_file(scratch, b"other", world.ws)])]
    digests = set()
    for n in range(4):
        shuffled = objects[:]
        random.Random(n).shuffle(shuffled)
        rep = new_replica(tmp_path / f"r{n}.sqlite", world)
        add(rep, *shuffled)
        digests.add(rep.digest())
        assert sorted(s.list for s in rep.files.all()) == sorted(
            [d["list"], objects[-1].body["files"][0]["list"]])
    assert len(digests) == 1


def test_a_version_11_file_gains_the_files_tables(tmp_path, world, people):
    """A version-11 Hearth stored a post/file from a newer peer without reading it (unknown
    kinds are kept and relayed); version 12 shows it, with its file."""
    path = tmp_path / "v11.sqlite"
    rep = new_replica(path, world)
    add(rep, world.text(people["alice"], "general", "before files"))
    early = _file(rep, b"sent by a newer peer", world.ws)
    newer = _with_files(world, people["bob"], "from a newer version", [early])
    add(rep, newer)
    rep.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DELETE FROM messages WHERE id = ?", (newer.id,))  # held, never shown
    conn.execute("DROP TABLE file_refs")
    conn.execute("DROP TABLE files")
    conn.execute("PRAGMA user_version = 11")
    conn.close()
    with Replica(path, clock=FakeClock(T0)) as upgraded:
        assert upgraded.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        shown = upgraded.messages("general")
        assert [m.text for m in shown] == ["before files", "from a newer version"]
        assert [[f.list for f in m.files] for m in shown] == [[], [early["list"]]]
        assert [m.text for m in upgraded.search("newer")] == ["from a newer version"]
        d = _file(upgraded, b"after", world.ws)
        add(upgraded, _with_files(world, people["alice"], "", [d]))
        assert sorted(s.list for s in upgraded.files.all()) == sorted([early["list"],
                                                                        d["list"]])
