"""A relay link's view of the replica (sync.relay_client.HeldEnvelopes), kept up to date as
objects are stored and deleted, is always the one a fresh link would compute."""

from __future__ import annotations

from pathlib import Path

from app.workspace import Workspace
from core.relay_seal import EpochKeys
from sync.relay_client import HeldEnvelopes
from tests.support import channels, create_workspace


def same(kept: HeldEnvelopes, ws: Workspace, keys: EpochKeys) -> None:
    fresh = HeldEnvelopes(ws.replica, keys)
    assert kept.items() == fresh.items()
    a, b = kept.storage(), fresh.storage()
    assert a.size() == b.size() and a.fingerprint(0, a.size()) == b.fingerprint(0, b.size())


def test_a_kept_view_follows_posts_deletes_and_a_burst(tmp_path: Path) -> None:
    with Workspace.open(create_workspace(tmp_path, "ada", "ada")) as ws:
        channels(ws, "general")
        keys = EpochKeys.derive(*ws.members.newest_secret())
        kept = HeldEnvelopes(ws.replica, keys)
        same(kept, ws, keys)
        posts = [ws.post("general", f"hello {n}") for n in range(3)]
        same(kept, ws, keys)  # a few new: inserted in order
        ws.conversation.delete(posts[1].id)
        same(kept, ws, keys)  # a delete: read again
        for n in range(100):
            ws.post("general", f"burst {n}")
        same(kept, ws, keys)  # many new: appended, then sorted
        newest = ws.post("general", "soon gone")
        same(kept, ws, keys)
        ws.conversation.delete(newest.id)  # the newest row goes: its row id may be used again
        ws.post("general", "after the delete")
        same(kept, ws, keys)
        assert len(kept.items()) == ws.replica.count()  # every object held (not the deleted post)
