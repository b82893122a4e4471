"""`hearth keep` (issue #20): which channels and documents this computer keeps. It prints what
is kept, each change shows in what it prints next, a name it does not know is refused, and
between two real nodes on 127.0.0.1 only what is kept arrives, a channel kept later with its
history."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Hearth
from .test_sync_cli import member_folders, serving

UNKNOWN = ("hearth: no channel named 'nope' here; creating it (`hearth channel create nope "
           "--data {data}`) joins the one others have, keeps it and fetches its history")
ALWAYS = ("(the workspace's own objects (members, admins, policies, nicknames), private "
          "channels and direct messages always sync)")


@pytest.fixture
def folder(hearth: Hearth, tmp_path: Path) -> Path:
    """A workspace with channels general, random and Design, and a document "Plan"."""
    data = tmp_path / "ada"
    hearth("init", "--nick", "ada", data=data)
    hearth.channels("random", "Design", data=data)
    for channel in ("general", "random", "Design"):
        hearth("post", channel, f"hello {channel}", data=data)
    hearth("doc", "new", "Plan", data=data)
    return data


def test_keep_prints_what_is_kept_and_each_change_shows_next(hearth: Hearth, folder: Path):
    assert hearth("keep", data=folder).line == "keeping all channels and documents"

    only = hearth("keep", "--only", "#general", data=folder).stdout.splitlines()
    assert only == ["keeping #general; no documents", ALWAYS]
    assert hearth("keep", data=folder).stdout.splitlines()[0] == "keeping #general; no documents"

    # Names compare as channels do (DESIGN is #Design); a document by its title.
    assert hearth("keep", "DESIGN", "--doc", "Plan", data=folder).stdout.splitlines()[0] == \
        "keeping #Design, #general; documents: Plan"
    assert hearth("keep", "--drop", "general", data=folder).stdout.splitlines()[0] == \
        "keeping #Design; documents: Plan"
    doc_id = hearth("doc", "list", "--json", data=folder).json()[0]["id"]
    assert hearth("keep", "--json", data=folder).json() == \
        {"all": False, "channels": ["Design"], "documents": [doc_id]}
    assert hearth("keep", "--drop", "--doc", doc_id[:8], data=folder).stdout.splitlines() == \
        ["keeping #Design; no documents", ALWAYS]

    assert hearth("keep", "--all", data=folder).line == "keeping all channels and documents"
    assert hearth("keep", data=folder).line == "keeping all channels and documents"

    # Dropping one channel from all keeps every other.
    assert hearth("keep", "--drop", "random", data=folder).stdout.splitlines()[0] == \
        "keeping #Design, #general; documents: Plan"


def test_keep_refuses_names_it_does_not_know_and_keeps_what_it_kept(
        hearth: Hearth, folder: Path):
    hearth("keep", "--only", "general", data=folder)
    assert hearth.fails("keep", "nope", data=folder) == UNKNOWN.format(data=folder)
    assert hearth.fails("keep", "--drop", "general", "nope", data=folder) == \
        UNKNOWN.format(data=folder)
    assert "no document 'Nope'" in hearth.fails("keep", "--doc", "Nope", data=folder)
    assert hearth("keep", data=folder).stdout.splitlines()[0] == "keeping #general; no documents"

    assert hearth.fails("keep", "--all", "random", data=folder) == \
        "hearth: --all keeps every channel and document: give it without names"
    assert hearth.fails("keep", "--drop", data=folder) == \
        "hearth: name the channels (or --doc documents) to stop keeping"
    assert "not allowed with argument --drop" in \
        hearth.fails("keep", "--drop", "--only", "general", data=folder)
    assert hearth("keep", data=folder).stdout.splitlines()[0] == "keeping #general; no documents"


def test_a_refused_keep_only_changes_nothing(hearth: Hearth, folder: Path):
    hearth("keep", "--only", "general", "--doc", "Plan", data=folder)
    assert hearth.fails("keep", "--only", "nope", data=folder) == \
        UNKNOWN.format(data=folder)
    assert hearth("keep", data=folder).stdout.splitlines()[0] == \
        "keeping #general; documents: Plan"


def _texts(hearth: Hearth, data: Path, channel: str) -> set[str]:
    return {m["text"] for m in hearth("read", channel, "--json", "--limit", "1000",
                                      data=data).json()}


def test_a_member_keeping_only_general_syncs_general_alone_until_it_keeps_random(
        hearth: Hearth, tmp_path: Path):
    a, b = member_folders(tmp_path)
    general = {f"general {n}" for n in range(5)}
    random = {f"random {n}" for n in range(5)}
    for text in sorted(general):
        hearth("post", "general", text, data=a)
    hearth.channels("random", data=a)
    for text in sorted(random):
        hearth("post", "random", text, data=a)
    # bob knows both channels by name (he joins them here: nothing has arrived on his
    # computer yet, so he makes random, confirming it is public), and keeps general alone.
    hearth("join", "general", data=b)
    hearth.channels("random", data=b)
    hearth("keep", "--only", "general", data=b)

    with serving(hearth, a) as serve:
        hearth("sync", "--peer", serve.address, "--once", data=b)
        assert general <= _texts(hearth, b, "general")
        assert not _texts(hearth, b, "random") & random
        # The workspace itself arrived: alice's nickname and the workspace's name.
        assert "alice" in hearth("workspace", "members", data=b).stdout

        assert hearth("keep", "random", data=b).stdout.splitlines()[0] == \
            "keeping #general, #random; no documents"
        hearth("sync", "--peer", serve.address, "--once", data=b)
        assert random <= _texts(hearth, b, "random")
        assert general <= _texts(hearth, b, "general")
        assert serve.terminate() == 0


def test_a_member_who_joins_a_channel_keeps_it_and_its_history_arrives(
        hearth: Hearth, tmp_path: Path):
    a, b = member_folders(tmp_path)
    random = {f"random {n}" for n in range(5)}
    hearth("post", "general", "hello", data=a)
    hearth.channels("random", data=a)
    for text in sorted(random):
        hearth("post", "random", text, data=a)
    hearth("join", "general", data=b)
    hearth("keep", "--only", "general", data=b)

    with serving(hearth, a) as serve:
        hearth("sync", "--peer", serve.address, "--once", data=b)
        assert "no channel #random here" in hearth.fails("read", "random", data=b)
        # bob has never held a post of random, so his computer does not know it: `join`
        # refuses it (it never makes a channel), and creating it joins the channel the
        # others have, which is how he comes to keep it.
        refused = hearth.fails("join", "random", data=b)
        assert "keeps only some channels" in refused and "`hearth channel create random" \
            in refused
        hearth("channel", "create", "random", data=b)
        assert hearth("keep", data=b).stdout.splitlines()[0] == \
            "keeping #general, #random; no documents"
        hearth("sync", "--peer", serve.address, "--once", data=b)
        assert random <= _texts(hearth, b, "random")
        assert serve.terminate() == 0
