"""Bundle files (`hearth export` / `hearth import`, docs/ARCHITECTURE.md "Sync", "Out of band"): the layout
on disk, round trips through a fresh replica, and files refused before anything is stored.

Real replicas in tmp_path; objects take the one path (Replica.ingest). The memory bound of a
streamed import is checked in test_bundle_memory.py.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from app import sharing
from app.paths import Paths
from app.sharing import BundleError
from app.workspace import Workspace, WorkspaceError, load_or_create_identity
from core import encoding, kinds
from core.identity import Identity
from core.objects import build
from storage import Replica
from tests.support import two_members

from .conftest import ROOT, Hearth

KILL_TIMEOUT_S = 60  # how long the killed import may take to get going, at most
KILL_BATCH = 1000  # the killed import's batch size: six of them, so the kill lands mid-way


# Helpers --------------------------------------------------------------------------------------

def make_paths(root: Path, name: str) -> Paths:
    return Paths.resolve(root / name, "default")


def fresh_member(root: Path, name: str, source: Paths) -> Paths:
    """A member with an empty replica of `source`'s workspace (no genesis, no nick, nothing)."""
    paths = make_paths(root, name)
    load_or_create_identity(paths)
    with Replica(source.replica) as replica:
        workspace = replica.workspace
    Replica.create(paths.replica, workspace.id, workspace.root).close()
    return paths


def digest(paths: Paths) -> str:
    with Replica(paths.replica) as replica:
        return replica.digest()


def count(paths: Paths) -> int:
    with Replica(paths.replica) as replica:
        return replica.count()


def rows(paths: Paths) -> list[tuple[bytes, bytes]]:
    """(id, raw) of every object, in the order export writes them."""
    with Replica(paths.replica) as replica:
        return replica.conn.execute("SELECT id, raw FROM objects ORDER BY ts, id").fetchall()


def old_bundle(paths: Paths, *, order: str = "ts, id") -> bytes:
    """A bundle the way Hearth wrote it before export streamed: one `encoding.dumps`."""
    with Replica(paths.replica) as replica:
        found = replica.conn.execute(f"SELECT id, raw FROM objects ORDER BY {order}").fetchall()
        workspace = replica.workspace.id
    return encoding.dumps({"kind": sharing.BUNDLE_KIND, "v": 1, "workspace": workspace,
                           "ids": [r[0] for r in found], "objects": [r[1] for r in found]})


def posts(ws: Workspace, channel: str, n: int, *, start: int = 0) -> list[bytes]:
    """`n` signed posts by `ws`'s identity in `channel`, each linking to the one before."""
    stream = kinds.channel_stream(ws.id, channel)
    out, previous = [], None
    for k in range(start, start + n):
        obj = build(ws.identity, "post/text", stream=stream,
                    body={"channel": channel, "text": f"bundled post {k}"},
                    ts=1_700_000_000_000 + k, links=[previous] if previous else [])
        out.append(obj.raw)
        previous = obj.id
    return out


def refused(paths: Paths, bundle: Path) -> str:
    """Import `bundle`, which must be refused with a one-line BundleError; returns the line."""
    with pytest.raises(BundleError) as caught:
        sharing.import_bundle(paths, bundle)
    message = str(caught.value)
    assert "\n" not in message and message.strip() == message and message
    return message


def layout(data: bytes) -> dict[str, int]:
    """Offsets of the parts of a bundle, found by their key's encoding."""
    where = {name: data.index(encoding.dumps(name)) for name in ("ids", "kind", "objects")}
    where["workspace"] = data.rindex(encoding.dumps("workspace"))
    return where


# A source workspace with a bit of everything ----------------------------------------------------

@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Paths:
    root = tmp_path_factory.mktemp("bundle-source")
    alice_paths, bob_paths = two_members(root)
    with Workspace.open(alice_paths) as alice:
        alice.topic("general", "plans")
        alice.create_channel("random")
        gone = alice.post("random", "this one is deleted")
        alice.post("random", "random talk")
        alice.conversation.delete(gone.id)
        alice.replica.ingest(posts(alice, "general", 300))
        with Workspace.open(bob_paths) as bob:
            bob.post("general", "hello from bob")
            alice.replica.ingest([raw for _, raw in rows(bob_paths)])
        alice.nick("alice the second")
    return alice_paths


@pytest.fixture(scope="module")
def bundle(source: Paths, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bundle-file") / "workspace.bundle"
    assert sharing.export_bundle(source, path) == count(source)
    return path


# The layout -------------------------------------------------------------------------------------

def test_export_writes_the_one_canonical_map_every_version_reads(source: Paths, bundle: Path):
    data = bundle.read_bytes()
    assert data == old_bundle(source)  # byte for byte what Hearth wrote before streaming
    whole = encoding.loads(data)  # so earlier versions, which decode it whole, still read it
    assert whole["kind"] == "hearth/bundle" and whole["v"] == 1
    assert whole["ids"] == [encoding.object_id(raw) for raw in whole["objects"]]
    assert bundle.stat().st_mode & 0o777 == 0o600
    assert not bundle.with_name(bundle.name + ".tmp").exists()


def test_export_refuses_an_existing_file_or_a_leftover_temporary(source: Paths, tmp_path: Path):
    target = tmp_path / "out.bundle"
    target.write_bytes(b"mine")
    with pytest.raises(WorkspaceError, match="already exists"):
        sharing.export_bundle(source, target)
    assert target.read_bytes() == b"mine"
    other = tmp_path / "other.bundle"
    leftover = tmp_path / "other.bundle.tmp"
    leftover.write_bytes(b"half")
    with pytest.raises(WorkspaceError, match="interrupted export"):
        sharing.export_bundle(source, other)
    assert leftover.read_bytes() == b"half" and not other.exists()


# Round trips ------------------------------------------------------------------------------------

def test_round_trip_to_a_fresh_replica_gives_the_same_digest(
        source: Paths, bundle: Path, tmp_path: Path):
    target = fresh_member(tmp_path, "fresh", source)
    counts = sharing.import_bundle(target, bundle)
    assert counts == {"added": count(source), "duplicate": 0, "rejected": 0, "refused": 0}
    assert digest(target) == digest(source)
    with Workspace.open(target) as ws:
        assert ws.state("general").topic == "plans"
        texts = [m.text for m in ws.read("random")]
        assert "random talk" in texts and "this one is deleted" not in texts

    again = sharing.import_bundle(target, bundle)
    assert again == {"added": 0, "duplicate": count(source), "rejected": 0, "refused": 0}
    assert digest(target) == digest(source)


def test_round_trip_of_one_channel(source: Paths, tmp_path: Path):
    path = tmp_path / "random.bundle"
    written = sharing.export_bundle(source, path, channel="random")
    target = fresh_member(tmp_path, "fresh", source)
    counts = sharing.import_bundle(target, path)
    assert counts["added"] == written == count(target) and counts["rejected"] == 0
    with Workspace.open(target) as ws:
        assert [m.text for m in ws.read("random")] == ["random talk"]
        assert ws.read("general") == []
        assert ws.nickname(ws.replica.workspace.root) == "alice the second"
    with pytest.raises(WorkspaceError, match="no channel"):
        sharing.export_bundle(source, tmp_path / "none.bundle", channel="no-such-channel")
    assert not (tmp_path / "none.bundle.tmp").exists()


def test_bundle_written_before_streaming_still_imports(source: Paths, tmp_path: Path):
    """Earlier versions wrote the same map with one `dumps`; any object order is accepted."""
    path = tmp_path / "old.bundle"
    path.write_bytes(old_bundle(source, order="id DESC"))
    target = fresh_member(tmp_path, "fresh", source)
    assert sharing.import_bundle(target, path)["added"] == count(source)
    assert digest(target) == digest(source)


def test_a_bundle_without_its_list_of_ids_imports(source: Paths, tmp_path: Path):
    """The old reader did not need "ids"; neither does this one (it checks them when there)."""
    whole = encoding.loads(old_bundle(source))
    del whole["ids"]
    path = tmp_path / "no-ids.bundle"
    path.write_bytes(encoding.dumps(whole))
    target = fresh_member(tmp_path, "fresh", source)
    assert sharing.import_bundle(target, path)["added"] == count(source)
    assert digest(target) == digest(source)


def test_invalid_objects_in_a_sound_bundle_are_counted_as_rejected(
        source: Paths, tmp_path: Path):
    """70,000 objects: list heads take their 4-byte form; each object stands alone."""
    with Replica(source.replica) as replica:
        workspace = replica.workspace.id
    junk = [n.to_bytes(3, "big") for n in range(70_000)]
    path = tmp_path / "junk.bundle"
    path.write_bytes(encoding.dumps({"v": 1, "ids": [encoding.object_id(r) for r in junk],
                                     "kind": sharing.BUNDLE_KIND, "objects": junk,
                                     "workspace": workspace}))
    assert path.read_bytes().count(b"\x9a\x00\x01\x11\x70") == 2  # two lists of 70,000
    target = fresh_member(tmp_path, "fresh", source)
    assert sharing.import_bundle(target, path) == {"added": 0, "duplicate": 0,
                                                    "rejected": 70_000, "refused": 0}
    assert count(target) == 0


# Refusals: nothing is stored ----------------------------------------------------------------------

@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 16 objects: an import that stored batches before it found the fault (in a
    ~300-object bundle) would show it."""
    monkeypatch.setattr(sharing, "IMPORT_BATCH", 16)


def cut_points(data: bytes) -> dict[str, int]:
    at = layout(data)
    first_object = at["objects"] + len(encoding.dumps("objects")) + 3  # after a 0x99 list head
    second_object = first_object + len(encoding.dumps(encoding.loads(data)["objects"][0]))
    return {
        "empty": 0,
        "in the map head": 3,
        "in the ids": at["ids"] + 40,
        "between ids and kind": at["kind"],
        "in the kind": at["kind"] + 8,
        "at the objects key": at["objects"],
        "in the objects list head": first_object - 1,
        "in the first object": first_object + 20,
        "between two objects": second_object,
        "in the middle": len(data) // 2 + 7,
        "before the workspace": at["workspace"],
        "in the workspace id": len(data) - 10,
        "the last byte": len(data) - 1,
    }


@pytest.mark.parametrize("where", [
    "empty", "in the map head", "in the ids", "between ids and kind", "in the kind",
    "at the objects key", "in the objects list head", "in the first object",
    "between two objects", "in the middle", "before the workspace", "in the workspace id",
    "the last byte"])
def test_truncated_bundle_is_refused_before_anything_is_stored(
        source: Paths, bundle: Path, tmp_path: Path, where: str, small_batches: None):
    data = bundle.read_bytes()
    cut = cut_points(data)[where]
    path = tmp_path / "cut.bundle"
    path.write_bytes(data[:cut])
    target = fresh_member(tmp_path, "fresh", source)
    before = digest(target)
    message = refused(target, path)
    if cut >= 4:  # past {"v": 1: recognised as a bundle
        assert "damaged Hearth bundle" in message and "nothing was imported" in message
        assert "truncated" in message
    else:
        assert "not a Hearth bundle" in message
    assert count(target) == 0 and digest(target) == before


def flip(data: bytes, at: int, value: int | None = None) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01 if value is None else value]) + data[at + 1:]


def damaged_versions(data: bytes) -> dict[str, tuple[bytes, str]]:
    at = layout(data)
    first_object = at["objects"] + len(encoding.dumps("objects")) + 3
    return {
        "a changed byte in an object": (flip(data, first_object + 30),
                                        "do not match its list of ids"),
        "a changed id": (flip(data, at["ids"] + 10), "do not match its list of ids"),
        "a trailing byte": (data + b"\x00", "bytes after the end"),
        "a trailing copy": (data + data, "bytes after the end"),
        "one object too many claimed": (
            data[:first_object - 2] + (int.from_bytes(data[first_object - 2:first_object],
                                                      "big") + 1).to_bytes(2, "big")
            + data[first_object:], "not a byte string"),
        "an id of the wrong size": (flip(data, at["ids"] + 7, 0x57), "not 32 bytes"),
        "an indefinite list": (flip(data, at["objects"] + 8, 0x9F), "indefinite"),
        "a long form of a short length": (
            data[:at["kind"]] + b"\x78\x04kind" + data[at["kind"] + 5:],
            "shortest form"),
        "a key out of place": (data[:at["kind"]] + b"\x64kinc" + data[at["kind"] + 5:],
                               "unexpected or misplaced key"),
    }


@pytest.mark.parametrize("case", [
    "a changed byte in an object", "a changed id", "a trailing byte", "a trailing copy",
    "one object too many claimed", "an id of the wrong size", "an indefinite list",
    "a long form of a short length", "a key out of place"])
def test_damaged_bundle_is_refused_before_anything_is_stored(
        source: Paths, bundle: Path, tmp_path: Path, case: str, small_batches: None):
    data, reason = damaged_versions(bundle.read_bytes())[case]
    path = tmp_path / "damaged.bundle"
    path.write_bytes(data)
    target = fresh_member(tmp_path, "fresh", source)
    message = refused(target, path)
    assert "damaged Hearth bundle" in message and reason in message, message
    assert count(target) == 0


HEAD = b"\xa5\x61v\x01\x63ids"  # {"v": 1, "ids": ...


@pytest.mark.parametrize(("name", "data", "reason"), [
    ("2**64-1 ids", HEAD + b"\x9b" + b"\xff" * 8, "truncated"),
    ("an id of 2**62 bytes", HEAD + b"\x81\x5b" + (1 << 62).to_bytes(8, "big"), "not 32 bytes"),
    ("an object of 2**40 bytes", b"\xa4\x61v\x01\x64kind\x6dhearth/bundle\x67objects\x81\x5b"
     + (1 << 40).to_bytes(8, "big"), "over 65536"),
    ("2**32 empty objects claimed", b"\xa4\x61v\x01\x64kind\x6dhearth/bundle\x67objects\x9b"
     + (1 << 32).to_bytes(8, "big") + b"\x40" * 100_000, "truncated"),
    ("a nested list for an object", b"\xa4\x61v\x01\x64kind\x6dhearth/bundle\x67objects\x81"
     + b"\x81" * 10_000, "not a byte string"),
    ("a text key of 2**63 bytes", b"\xa5\x61v\x01\x7b" + (1 << 63).to_bytes(8, "big"),
     "not short text"),
])
def test_bundle_bombs_are_refused_in_little_memory(
        source: Paths, tmp_path: Path, name: str, data: bytes, reason: str):
    path = tmp_path / "bomb.bundle"
    path.write_bytes(data)
    target = fresh_member(tmp_path, "fresh", source)
    tracemalloc.start()
    try:
        message = refused(target, path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert reason in message, message
    assert peak < 3 * sharing.READ_CHUNK + (1 << 20), f"{name}: {peak} bytes"
    assert count(target) == 0


@pytest.mark.parametrize(("data", "reason"), [
    (b"", "not a Hearth bundle"),
    (os.urandom(4096), "not a Hearth bundle"),
    (b"\xa1\x64kind\x63foo", "not a Hearth bundle"),
    (encoding.dumps({"v": 1, "kind": "something/else", "objects": [], "workspace": b""}),
     "not a Hearth bundle"),
    (encoding.dumps([1, 2, 3]), "not a Hearth bundle"),
    (encoding.dumps({"v": 1, "kind": "hearth/bundle"}), "not a Hearth bundle"),
    (build(Identity.from_seed(bytes(32)), "workspace/genesis", stream=kinds.GENESIS_STREAM,
           body={"name": "one object", "nonce": bytes(16)}, ts=1).raw, "not a Hearth bundle"),
    (encoding.dumps({"v": 2, "kind": "hearth/bundle"}), "bundle of version 2; upgrade Hearth"),
])
def test_other_files_are_refused(source: Paths, tmp_path: Path, data: bytes, reason: str):
    path = tmp_path / "other.bundle"
    path.write_bytes(data)
    target = fresh_member(tmp_path, "fresh", source)
    assert reason in refused(target, path)
    assert count(target) == 0


def test_another_workspaces_bundle_is_refused(source: Paths, tmp_path: Path):
    other = make_paths(tmp_path, "other")
    Workspace.init(other, "mallory").close()
    path = tmp_path / "other.bundle"
    sharing.export_bundle(other, path)
    target = fresh_member(tmp_path, "fresh", source)
    assert "belongs to another workspace" in refused(target, path)
    assert count(target) == 0


def test_size_bound_and_special_files(source: Paths, bundle: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch):
    target = fresh_member(tmp_path, "fresh", source)
    huge = tmp_path / "huge.bundle"
    with open(huge, "wb") as f:  # sparse: no disk used
        f.truncate(sharing.MAX_BUNDLE_BYTES + 1)
    assert "larger than a bundle may be" in refused(target, huge)
    assert "cannot read" in refused(target, tmp_path / "missing.bundle")
    assert "not a regular file" in refused(target, tmp_path)
    if hasattr(os, "mkfifo"):  # refused at once: opening it must not wait for a writer
        fifo = tmp_path / "fifo.bundle"
        os.mkfifo(fifo)
        assert "not a regular file" in refused(target, fifo)
    monkeypatch.setattr(sharing, "MAX_BUNDLE_BYTES", bundle.stat().st_size - 1)
    assert "larger than a bundle may be" in refused(target, bundle)
    assert count(target) == 0


def test_a_file_changed_between_the_two_walks_is_noticed(
        source: Paths, bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        small_batches: None):
    """The file is rewritten in place after the check: the second walk (which ingests)
    notices, and what it stored is whole."""
    data = bundle.read_bytes()
    first_object = layout(data)["objects"] + len(encoding.dumps("objects")) + 3
    path = tmp_path / "changing.bundle"
    replacement: list[bytes] = []
    real_walk = sharing._walk

    def walk(reader, sink, *, check_ids):
        if sink is not None and replacement:  # the second walk
            path.write_bytes(replacement.pop())
        return real_walk(reader, sink, check_ids=check_ids)

    monkeypatch.setattr(sharing, "_walk", walk)
    for name, changed, expected in [
            ("same-size", flip(data, first_object + 30), "changed while it was being imported"),
            ("cut-short", data[:len(data) // 2], "could not be read to the end")]:
        path.write_bytes(data)
        replacement.append(changed)
        target = fresh_member(tmp_path, name, source)
        message = refused(target, path)
        assert expected in message, message
        if name == "cut-short":  # whole batches were stored before the cut, and said so
            assert count(target) > 0 and f"the {count(target)} objects added" in message
        with Replica(target.replica) as replica:
            assert replica.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        path.write_bytes(data)
        sharing.import_bundle(target, path)
        assert digest(target) == digest(source)


# The command line ---------------------------------------------------------------------------------

def test_cli_refuses_a_truncated_bundle_in_one_line(
        hearth: Hearth, source: Paths, bundle: Path, tmp_path: Path):
    target = fresh_member(tmp_path, "fresh", source)
    cut = tmp_path / "cut.bundle"
    data = bundle.read_bytes()
    cut.write_bytes(data[:len(data) // 2])
    line = hearth.fails("import", cut, data=target.data)
    assert "damaged Hearth bundle" in line and "nothing was imported" in line
    assert count(target) == 0
    counts = hearth("import", bundle, "--json", data=target.data).json()
    assert counts["added"] == count(source) and digest(target) == digest(source)


# A kill in the middle ---------------------------------------------------------------------------

KILLED_IMPORT = """
import sys
from pathlib import Path
from app import sharing
from app.paths import Paths
sharing.IMPORT_BATCH = int(sys.argv[3])
sharing.import_bundle(Paths.resolve(sys.argv[1], "default"), Path(sys.argv[2]))
"""


def test_sigkill_during_import_leaves_whole_batches(tmp_path: Path):
    """Each batch is its own transaction: a killed import leaves whole batches, and importing
    again finishes the job (ingest is idempotent)."""
    a = make_paths(tmp_path, "a")
    with Workspace.init(a, "alice") as ws:
        base = ws.replica.count()
        ws.replica.ingest(posts(ws, "general", 6 * KILL_BATCH - base))
    total = count(a)
    assert total == 6 * KILL_BATCH
    path = tmp_path / "big.bundle"
    sharing.export_bundle(a, path)
    target = fresh_member(tmp_path, "fresh", a)

    child = subprocess.Popen([sys.executable, "-c", KILLED_IMPORT, str(target.data), str(path),
                              str(KILL_BATCH)], cwd=ROOT)
    watcher = sqlite3.connect(f"file:{target.replica}?mode=ro", uri=True)
    try:
        deadline = time.monotonic() + KILL_TIMEOUT_S
        stored = 0
        while stored == 0:
            assert time.monotonic() < deadline and child.poll() is None, "no batch stored"
            time.sleep(0.005)
            stored = watcher.execute("SELECT COUNT(*) FROM objects").fetchone()[0]
        child.send_signal(signal.SIGKILL)
        child.wait(KILL_TIMEOUT_S)
    finally:
        watcher.close()
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL

    with Replica(target.replica) as replica:
        assert replica.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        kept = replica.count()
    assert 0 < kept < total and kept % KILL_BATCH == 0
    counts = sharing.import_bundle(target, path)
    assert counts == {"added": total - kept, "duplicate": kept, "rejected": 0, "refused": 0}
    assert digest(target) == digest(a)
