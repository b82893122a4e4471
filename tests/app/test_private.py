"""Private channels and direct messages (app/private.py, core/private.py, storage/_private.py)
with real replicas whose objects travel as sync and bundles move them: members read, everyone
else holds ciphertext only (not even the name), in any order; a direct message reaches only
its recipient; taking someone out, or removing them from the workspace, gives the others a key
they never get, so the marker written after is absent from every file of theirs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from app.workspace import Workspace, WorkspaceError
from core.membership import MembershipView
from core.private import PrivateView
from storage import Replica
from tests.support import members_in_step, share

MARKER = "MARKER-7f3a-the-launch-date"


def _raws(ws: Workspace) -> list[bytes]:
    return [row[0] for row in ws.replica.conn.execute("SELECT raw FROM objects ORDER BY oid")]


def _files_hold(folder: Path, text: str) -> list[str]:
    """The files under `folder` whose bytes contain `text` (a replica's WAL too)."""
    needle = text.encode()
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.fixture
def team(tmp_path):
    with members_in_step(tmp_path, ("ada", "bob", "cat", "dan")) as spaces:
        yield spaces


def test_members_read_everyone_else_holds_ciphertext_only(team, tmp_path):
    ada, bob, cat, dan = team
    channel = ada.private.create("launch-plans", [bob.key])
    ada.private.post(channel, MARKER)
    share(ada, bob, cat, dan)
    assert [m.text for m in bob.private.read(channel)] == [MARKER]
    assert [(c.name, c.members) for c in bob.private.channels()] == [
        ("launch-plans", (ada.key, bob.key))]
    assert dan.private.channels() == [] and dan.private.resolve("launch-plans") is None
    with pytest.raises(WorkspaceError, match="not in that private channel"):
        dan.private.read(channel)
    assert dan.replica.private.objects(channel)  # dan holds them, and relays them
    dan.replica.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert _files_hold(tmp_path / "dan", MARKER) == []
    assert _files_hold(tmp_path / "dan", "launch-plans") == []
    assert "launch-plans" not in [c.name for c in dan.channels()]


def test_a_direct_message_reaches_only_its_recipient(team, tmp_path):
    ada, bob, cat, dan = team
    ada.private.direct_message(bob.key, "just between us")
    share(ada, bob, cat)
    bob.private.direct_message(ada.key, "agreed")  # the same conversation, not a second one
    share(bob, ada, cat)
    (dm,) = bob.private.channels()
    assert dm.dm and dm.name == "ada" and ada.private.dm_channel(bob.key) == dm.id
    assert [m.text for m in ada.private.read(dm.id)] == ["just between us", "agreed"]
    assert cat.private.channels() == []
    cat.replica.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert _files_hold(tmp_path / "cat", "just between us") == []


def test_taken_out_or_removed_they_read_nothing_written_after(team, tmp_path):
    ada, bob, cat, dan = team
    channel = ada.private.create("core-team", [bob.key, cat.key, dan.key])
    ada.private.post(channel, "before")
    share(ada, bob, cat, dan)
    ada.private.remove_member(channel, dan.key)  # out of the channel
    ada.members.remove(cat.key)  # out of the workspace: a new key for the channel too
    ada.private.post(channel, MARKER)
    share(ada, bob, cat, dan)  # even if they get every object (a bundle someone handed them)
    assert [m.text for m in bob.private.read(channel)] == ["before", MARKER]
    for gone in (cat, dan):
        assert gone.private.resolve("core-team") is None
        gone.replica.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert _files_hold(tmp_path / "cat", MARKER) == []
    assert _files_hold(tmp_path / "dan", MARKER) == []
    with pytest.raises(WorkspaceError, match="only the channel's creator or an admin"):
        bob.private.add_member(channel, dan.key)


def test_the_view_is_the_same_whatever_the_order(team, tmp_path):
    ada, bob, cat, dan = team
    channel = ada.private.create("ops", [bob.key])
    ada.private.post(channel, "one")
    share(ada, bob)
    bob.private.post(channel, "two")
    ada.private.add_member(channel, cat.key)
    share(bob, ada)
    ada.private.post(channel, "three")
    ada.private.remove_member(channel, bob.key)
    everything = sorted(set(_raws(ada)) | set(_raws(bob)))
    rng = random.Random(5)
    seen = None
    for n in range(5):
        rng.shuffle(everything)
        with Replica.create(tmp_path / f"r{n}.sqlite3", ada.id,
                            ada.replica.workspace.root) as replica:
            for start in range(0, len(everything), 4):
                replica.ingest(everything[start:start + 4])
            objects = replica.private.objects(channel)
            creation = next(o for o in objects if o.id == channel)
            authority = MembershipView.compute(replica.membership.objects(),
                                               ada.replica.workspace.root, 0)
            view = PrivateView.compute(creation, [o for o in objects if o is not creation],
                                       authority)
            now = (view.members, view.current, view.checks, view.recipients,
                   [p.id for p in view.posts], view.name.id)
        seen = seen or now
        assert now == seen
    assert seen[0] == {ada.key, cat.key} and len(seen[4]) == 3 and max(seen[2]) == 1
    share(ada, cat)
    assert [m.text for m in cat.private.read(channel)] == ["one", "two", "three"]  # history
    assert bob.key not in cat.private.view(channel).current
