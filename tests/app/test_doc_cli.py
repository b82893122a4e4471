"""`hearth doc ...` end to end: every document command on real data folders.

Commands run as `hearth ... --data DIR` through `app.cli.main` in this process
(tests/app/conftest.py; test_cli_smoke.py runs `hearth doc` as a process too). Two
people's folders exchange objects with `hearth export` / `hearth import`, the out-of-band path.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import Hearth, personal_code

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _id(line: str) -> str:
    assert HEX64.match(line), f"not a 64-hex id: {line!r}"
    return line


def _key(hearth: Hearth, data: Path) -> str:
    return hearth("whoami", "--json", data=data).json()["key"]


def _ship(hearth: Hearth, src: Path, dst: Path, tmp_path: Path, name: str) -> None:
    """Everything `src` holds reaches `dst` through a bundle file."""
    bundle = tmp_path / f"{name}.hearth"
    hearth("export", bundle, data=src)
    counts = hearth("import", bundle, "--json", data=dst).json()
    assert counts.get("rejected", 0) == 0, counts


@pytest.fixture
def alice(hearth: Hearth, tmp_path: Path) -> Path:
    data = tmp_path / "alice"
    _id(hearth("init", "--nick", "alice", data=data).line)
    return data


def test_doc_commands_round_trip(hearth: Hearth, alice: Path, tmp_path: Path) -> None:
    assert "no documents yet" in hearth("doc", "list", data=alice).stdout
    assert hearth("doc", "list", "--json", data=alice).json() == []
    doc = _id(hearth("doc", "new", "Team notes", data=alice).line)
    me = _key(hearth, alice)
    listed = hearth("doc", "list", "--json", data=alice).json()
    assert [(d["id"], d["title"], d["creator"]) for d in listed] == [(doc, "Team notes", me)]
    assert "Team notes" in hearth("doc", "list", data=alice).stdout

    first = _id(hearth("doc", "write", doc, "--text", "hello 😀", data=alice).line)
    assert hearth("doc", "write", "Team notes", "--text", "hello 😀", data=alice).line == \
        "unchanged"
    source = tmp_path / "notes.txt"
    source.write_text("hello 😀\nsecond line, 日本語\n", encoding="utf-8")
    second = _id(hearth("doc", "write", "Team notes", "--file", source, data=alice).line)

    shown = hearth("doc", "show", doc, "--json", data=alice).json()
    assert shown == {"id": doc, "title": "Team notes", "branch": "main", "heads": [second],
                     "text": "hello 😀\nsecond line, 日本語\n"}
    assert hearth("doc", "show", doc[:10], data=alice).stdout == "hello 😀\nsecond line, 日本語\n"
    assert hearth("doc", "show", doc, "--at", first, data=alice).stdout == "hello 😀\n"
    history = hearth("doc", "history", doc, "--json", data=alice).json()
    assert [(c["id"], c["parents"], c["kind"], c["author"]) for c in history] == [
        (first, [], "edit", me), (second, [first], "edit", me)]
    assert first[:12] in hearth("doc", "history", doc, data=alice).stdout

    draft = _id(hearth("doc", "fork", doc, "--from", f"main@{first}", "--name", "draft",
                       data=alice).line)
    assert hearth("doc", "show", doc, "--branch", "draft", data=alice).stdout == "hello 😀\n"
    d1 = _id(hearth("doc", "write", doc, "--branch", "draft", "--text", "DRAFT: hello 😀",
                    data=alice).line)
    merged = _id(hearth("doc", "merge", doc, "--from", "draft", "--into", "main",
                        data=alice).line)
    assert hearth("doc", "show", doc, data=alice).stdout == \
        "DRAFT: hello 😀\nsecond line, 日本語\n"
    last = hearth("doc", "history", doc, "--json", data=alice).json()[-1]
    assert (last["id"], last["kind"], last["merged"], last["parents"]) == \
        (merged, "merge", [d1], [second])

    assert hearth("doc", "tag", doc, "v1", data=alice).line == merged
    assert hearth("doc", "tag", doc, "v0", "--at", first, data=alice).line == first
    assert hearth("doc", "tag", doc, "v0", "--at", second, data=alice).line == second  # moves
    branches = hearth("doc", "branches", doc, "--json", data=alice).json()
    assert branches["tags"] == {"v0": second, "v1": merged}
    by_name = {b["name"]: b for b in branches["branches"]}
    main = by_name["main"]["id"]
    assert by_name["main"]["main"] and not by_name["draft"]["main"]
    assert by_name["draft"] == {"id": draft, "name": "draft", "source": main, "at": [first],
                                "heads": [d1], "main": False, "readable": True}
    assert by_name["main"]["heads"] == [merged]
    text_branches = hearth("doc", "branches", doc, data=alice).stdout
    assert "main (main)" in text_branches and "tag v1 -> " + merged[:12] in text_branches

    assert hearth("doc", "set-main", doc, "draft", data=alice).stdout == ""
    branches = hearth("doc", "branches", doc, "--json", data=alice).json()["branches"]
    assert [b["name"] for b in branches if b["main"]] == ["draft"]
    assert hearth("doc", "show", doc, data=alice).stdout == "DRAFT: hello 😀\n"
    assert hearth("doc", "show", doc, "--branch", main, data=alice).stdout == \
        "DRAFT: hello 😀\nsecond line, 日本語\n"

    hearth("doc", "rename", doc, "Renamed notes", data=alice)
    assert [d["title"] for d in hearth("doc", "list", "--json", data=alice).json()] == \
        ["Renamed notes"]
    assert hearth("doc", "show", "Renamed notes", "--json", data=alice).json()["title"] == \
        "Renamed notes"
    assert hearth("doc", "editors", doc, data=alice).line == f"alice  {me}"

    cap = hearth("doc", "share", doc, data=alice).line
    assert cap.startswith("hearthcap1-")
    assert hearth("doc", "share", doc, "--branch", main, data=alice).line != cap
    assert hearth("doc", "open-cap", cap, data=alice).line == f"{doc}  Renamed notes"


def test_sharing_a_branch_and_editing_rights_between_people(hearth: Hearth, alice: Path,
                                                             tmp_path: Path) -> None:
    doc = _id(hearth("doc", "new", "Plans", "--private", data=alice).line)
    hearth("doc", "write", doc, "--text", "public plan", data=alice)
    hearth("doc", "fork", doc, "--from", "main", "--name", "private", data=alice)
    hearth("doc", "write", doc, "--branch", "private", "--text", "private plan", data=alice)
    bob = tmp_path / "bob"
    code = personal_code(hearth, alice, bob)
    hearth("join-workspace", code, "--nick", "bob", data=bob)
    bob_key = _key(hearth, bob)
    _ship(hearth, alice, bob, tmp_path, "one")

    assert [d["id"] for d in hearth("doc", "list", "--json", data=bob).json()] == [doc]
    assert "read key" in hearth.fails("doc", "show", doc, data=bob)
    readable = {b["name"]: b["readable"] for b in
                hearth("doc", "branches", doc, "--json", data=bob).json()["branches"]}
    assert readable == {"main": False, "private": False}
    assert "creator" in hearth.fails("doc", "rename", doc, "Bob's now", data=bob)
    # Without a key bob cannot even read what he would change.
    assert "read key" in hearth.fails("doc", "write", doc, "--text", "bob", data=bob)
    assert "creator" in hearth.fails("doc", "editors", doc, "--add", bob_key, data=bob)

    cap = hearth("doc", "share", doc, data=alice).line
    assert hearth("doc", "open-cap", cap, data=bob).line == f"{doc}  Plans"
    assert hearth("doc", "show", doc, data=bob).stdout == "public plan\n"
    assert "read key" in hearth.fails("doc", "show", doc, "--branch", "private", data=bob)
    assert "editors" in hearth.fails("doc", "write", doc, "--text", "bob", data=bob)

    editors = hearth("doc", "editors", doc, "--add", bob_key, data=alice).stdout
    assert bob_key in editors and _key(hearth, alice) in editors
    assert "already" in hearth.fails("doc", "editors", doc, "--add", bob_key, data=alice)
    _ship(hearth, alice, bob, tmp_path, "two")
    assert hearth("doc", "show", doc, "--branch", "private", data=bob).stdout == \
        "private plan\n"
    bob_commit = _id(hearth("doc", "write", doc, "--text", "public plan, by bob",
                            data=bob).line)
    assert "creator" in hearth.fails("doc", "rename", doc, "Bob's now", data=bob)
    _ship(hearth, bob, alice, tmp_path, "three")
    assert hearth("doc", "show", doc, "--json", data=alice).json()["heads"] == [bob_commit]
    assert hearth("doc", "show", doc, data=alice).stdout == "public plan, by bob\n"


def test_visibility_asking_to_edit_accepting_and_restoring(hearth: Hearth, alice: Path,
                                                          tmp_path: Path) -> None:
    doc = _id(hearth("doc", "new", "Minutes", "--editors", "only-me", data=alice).line)
    secret = _id(hearth("doc", "new", "Pay", "--private", data=alice).line)
    assert hearth("doc", "visibility", doc, data=alice).line == "workspace"
    assert hearth("doc", "visibility", secret, data=alice).line == "private"
    first = _id(hearth("doc", "write", doc, "--text", "agenda", data=alice).line)
    hearth("doc", "write", secret, "--text", "figures", data=alice)
    bob = tmp_path / "bob"
    code = personal_code(hearth, alice, bob)
    hearth("join-workspace", code, "--nick", "bob", data=bob)
    bob_key = _key(hearth, bob)
    _ship(hearth, alice, bob, tmp_path, "one")

    # Bob reads the workspace document with no capability, not the private one.
    assert hearth("doc", "show", doc, data=bob).stdout == "agenda\n"
    assert "read key" in hearth.fails("doc", "show", secret, data=bob)
    assert "editors" in hearth.fails("doc", "write", doc, "--text", "bob", data=bob)
    assert "creator" in hearth.fails("doc", "visibility", doc, "private", data=bob)
    assert "asked" in hearth("doc", "ask-edit", doc, "--note", "I take notes", data=bob).line
    assert "already" in hearth.fails("doc", "ask-edit", doc, data=bob)
    _ship(hearth, bob, alice, tmp_path, "two")

    [request] = hearth("doc", "requests", doc, "--json", data=alice).json()
    assert (request["key"], request["nick"], request["note"]) == (bob_key, "bob",
                                                                  "I take notes")
    assert "bob" in hearth("doc", "requests", doc, data=alice).stdout
    assert "no open request" in hearth.fails("doc", "accept", doc, "alice", data=alice)
    assert hearth("doc", "accept", doc, "bob", data=alice).line == "bob is an editor now"
    assert hearth("doc", "requests", doc, "--json", data=alice).json() == []
    _ship(hearth, alice, bob, tmp_path, "three")
    bobs = _id(hearth("doc", "write", doc, "--text", "agenda, notes", data=bob).line)
    _ship(hearth, bob, alice, tmp_path, "four")
    assert hearth("doc", "show", doc, "--json", data=alice).json()["heads"] == [bobs]

    restored = _id(hearth("doc", "restore", doc, "--at", first[:12], data=alice).line)
    assert hearth("doc", "show", doc, data=alice).stdout == "agenda\n"
    assert hearth("doc", "history", doc, "--json", data=alice).json()[-1]["kind"] == "restore"
    assert hearth("doc", "show", doc, "--json", data=alice).json()["heads"] == [restored]
    assert "already reads" in hearth.fails("doc", "restore", doc, "--at", first, data=alice)

    # The creator makes it private (refused when it is already).
    assert hearth("doc", "visibility", doc, "private", data=alice).line == "private"
    assert "already" in hearth.fails("doc", "visibility", doc, "private", data=alice)


# Refusals ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def folder(module_hearth: Hearth, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    data = tmp_path_factory.mktemp("docs")
    _id(module_hearth("init", "--nick", "sam", data=data).line)
    doc = _id(module_hearth("doc", "new", "Doc", data=data).line)
    module_hearth("doc", "write", doc, "--text", "text", data=data)
    return data, doc


REFUSED = {
    "unknown document": (["doc", "show", "nope"], "no document"),
    "unknown document for write": (["doc", "write", "0" * 64, "--text", "x"], "no document"),
    "unknown branch": (["doc", "show", "{doc}", "--branch", "nobranch"], "no branch"),
    "merge into an unknown branch": (["doc", "merge", "{doc}", "--from", "main", "--into",
                                      "nobranch"], "no branch"),
    "merge a branch into itself": (["doc", "merge", "{doc}", "--from", "main", "--into",
                                    "main"], "itself"),
    "text and file together": (["doc", "write", "{doc}", "--text", "a", "--file", "{file}"],
                               "exactly one"),
    "neither text nor file": (["doc", "write", "{doc}"], "exactly one"),
    "unreadable file": (["doc", "write", "{doc}", "--file", "/nonexistent/x.txt"],
                        "cannot read"),
    "garbage capability": (["doc", "open-cap", "garbage"], "capability"),
    "damaged capability": (["doc", "open-cap", "hearthcap1-" + "a" * 40], "damaged"),
    "unknown commit": (["doc", "show", "{doc}", "--at", "ab" * 32], "no commit"),
    "fork at an unknown commit": (["doc", "fork", "{doc}", "--from", "main@" + "cd" * 32,
                                   "--name", "x"], "no commit"),
    "bad editor key": (["doc", "editors", "{doc}", "--add", "zz"], "64 hexadecimal"),
    "removing the creator": (["doc", "editors", "{doc}", "--remove", "{me}"], "creator"),
    "empty title": (["doc", "new", ""], "title"),
    "empty rename": (["doc", "rename", "{doc}", ""], "title"),
    "control character in a tag": (["doc", "tag", "{doc}", "bad\x01tag"], "control"),
}


@pytest.mark.parametrize("args, reason", REFUSED.values(), ids=REFUSED.keys())
def test_bad_input_gets_one_line_and_no_traceback(module_hearth: Hearth, folder, tmp_path: Path,
                                                 args: list[str], reason: str) -> None:
    data, doc = folder
    file = tmp_path / "text.txt"
    file.write_text("from a file", encoding="utf-8")
    me = _key(module_hearth, data) if "{me}" in args else ""
    argv = [a.format(doc=doc, file=file, me=me) if "{" in a else a for a in args]
    line = module_hearth.fails(*argv, data=data)
    assert reason in line, line


def test_refused_commands_changed_nothing(module_hearth: Hearth, folder) -> None:
    """Runs after the refusals above (file order): the folder holds what the fixture made."""
    data, doc = folder
    assert [d["id"] for d in module_hearth("doc", "list", "--json", data=data).json()] == [doc]
    assert len(module_hearth("doc", "history", doc, "--json", data=data).json()) == 1
    branches = module_hearth("doc", "branches", doc, "--json", data=data).json()
    assert [b["name"] for b in branches["branches"]] == ["main"] and branches["tags"] == {}
    assert module_hearth("doc", "show", doc, data=data).stdout == "text\n"


def test_doc_commands_need_a_workspace(hearth: Hearth, tmp_path: Path) -> None:
    assert "no workspace" in hearth.fails("doc", "list", data=tmp_path / "empty")


BAD_COMMIT_IDS = {
    "show --at": ["doc", "show", "{doc}", "--at", "zz"],
    "tag --at": ["doc", "tag", "{doc}", "v1", "--at", "not-hex"],
    "fork --from main@": ["doc", "fork", "{doc}", "--from", "main@xyz", "--name", "x"],
    "odd-length hex": ["doc", "show", "{doc}", "--at", "abc"],
}


@pytest.mark.parametrize("args", BAD_COMMIT_IDS.values(), ids=BAD_COMMIT_IDS.keys())
def test_commit_ids_that_are_not_hex_get_one_line(module_hearth: Hearth, folder,
                                                  args: list[str]) -> None:
    data, doc = folder
    line = module_hearth.fails(*[a.format(doc=doc) for a in args], data=data)
    assert "commit" in line
