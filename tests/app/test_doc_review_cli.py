"""Reviewing documents end to end: `hearth doc diff` and conflict-aware `hearth doc merge` on real
data folders (two people's folders exchange objects by `hearth export` / `hearth import`), the
library under them (app/documents.py, app/review.py), and the Node's facade counting merge
conflicts for usage analytics.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import pytest

from analytics.events import validate
from analytics.recorder import Recorder
from app import doc_records, review, unified_diff
from app.documents import Documents, MergeConflicts, on_document
from app.workspace import Workspace, WorkspaceError
from tests.support import TIMEOUT_S, Cluster, create_workspace

from .conftest import Hearth, personal_code

HEX64 = re.compile(r"^[0-9a-f]{64}$")
CONFLICT_EXIT = 3


def _id(line: str) -> str:
    assert HEX64.match(line), f"not a 64-hex id: {line!r}"
    return line


@pytest.fixture
def ada(hearth: Hearth, tmp_path: Path) -> Path:
    data = tmp_path / "ada"
    _id(hearth("init", "--nick", "ada", data=data).line)
    return data


def _ship(hearth: Hearth, src: Path, dst: Path, tmp_path: Path, name: str) -> None:
    bundle = tmp_path / f"{name}.hearth"
    hearth("export", bundle, data=src)
    assert hearth("import", bundle, "--json", data=dst).json().get("rejected", 0) == 0


def _show(hearth: Hearth, data: Path, doc: str, branch: str = "main") -> str:
    return hearth("doc", "show", doc, "--branch", branch, "--json", data=data).json()["text"]


def roadmap(hearth: Hearth, data: Path, main: str, alt: str, base: str = "# Roadmap") -> str:
    """A document whose main reads `main` and whose branch alt, forked from `base`, `alt`."""
    doc = _id(hearth("doc", "new", "Roadmap", data=data).line)
    hearth("doc", "write", doc, "--text", base, data=data)
    hearth("doc", "fork", doc, "--from", "main", "--name", "alt", data=data)
    hearth("doc", "write", doc, "--text", main, data=data)
    hearth("doc", "write", doc, "--branch", "alt", "--text", alt, data=data)
    return doc


# hearth doc merge ------------------------------------------------------------------------------

def test_a_merge_where_both_changed_the_same_words_lists_the_conflict_and_changes_nothing(
        hearth: Hearth, ada: Path) -> None:
    doc = roadmap(hearth, ada, "# Roadmap MAIN", "# Roadmap ALT")
    heads = hearth("doc", "show", doc, "--json", data=ada).json()["heads"]
    run = hearth("doc", "merge", doc, "--from", "alt", "--into", "main", data=ada, ok=False)
    assert run.returncode == CONFLICT_EXIT
    assert "Traceback" not in run.stderr
    assert run.stdout.splitlines() == [
        "conflict 1 of 1: main line 1",
        "  main (ours), by ada:",
        "    | # Roadmap MAIN",
        "  alt (theirs), by ada:",
        "    | # Roadmap ALT",
    ]
    assert run.stderr.startswith("hearth: alt and main changed the same text in 1 place; "
                                 "nothing was merged")
    assert "--prefer ours|theirs|both" in run.stderr
    assert _show(hearth, ada, doc) == "# Roadmap MAIN"  # not "# Roadmap MAINALT"
    assert hearth("doc", "show", doc, "--json", data=ada).json()["heads"] == heads

    merged = _id(hearth("doc", "merge", doc, "--from", "alt", "--into", "main", "--prefer",
                        "theirs", data=ada).line)
    assert _show(hearth, ada, doc) == "# Roadmap ALT"
    assert hearth("doc", "show", doc, "--json", data=ada).json()["heads"] == [merged]
    assert hearth("doc", "history", doc, "--json", data=ada).json()[-1]["kind"] == "merge"
    assert _show(hearth, ada, doc, "alt") == "# Roadmap ALT"  # the source is unchanged


def test_merge_json_names_the_conflicts_and_how_each_was_resolved(hearth: Hearth,
                                                                   ada: Path) -> None:
    doc = roadmap(hearth, ada, "intro\n# Roadmap MAIN\nend\n", "intro\n# Roadmap ALT\nend\n",
                  base="intro\n# Roadmap\nend\n")
    me = hearth("whoami", "--json", data=ada).json()["key"]
    refused = hearth("doc", "merge", doc, "--from", "alt", "--into", "main", "--json",
                     data=ada, ok=False)
    assert refused.returncode == CONFLICT_EXIT
    expected = {"index": 1, "lines": [2, 2], "base": "# Roadmap\n",
                "ours": {"text": "# Roadmap MAIN\n", "authors": [{"key": me, "nick": "ada"}]},
                "theirs": {"text": "# Roadmap ALT\n", "authors": [{"key": me, "nick": "ada"}]},
                "resolution": None}
    assert refused.json() == {"commit": None, "conflicts": [expected], "already_merged": False}

    made = hearth("doc", "merge", doc, "--from", "alt", "--into", "main", "--prefer", "both",
                  "--json", data=ada).json()
    assert HEX64.match(made["commit"])
    assert made["conflicts"] == [{**expected, "resolution": "both"}]
    assert _show(hearth, ada, doc) == (
        "intro\n<<<<<<< main\n# Roadmap MAIN\n=======\n# Roadmap ALT\n>>>>>>> alt\nend\n")


def test_edits_in_different_paragraphs_merge_with_no_conflict(hearth: Hearth,
                                                              ada: Path) -> None:
    base = "First paragraph, about spring.\n\nSecond paragraph, about summer.\n"
    doc = roadmap(hearth, ada, base.replace("spring", "the spring release"),
                  base.replace("summer", "the summer break"), base=base)
    merged = hearth("doc", "merge", doc, "--from", "alt", "--into", "main", "--json",
                    data=ada).json()
    assert merged["conflicts"] == []
    assert _show(hearth, ada, doc) == ("First paragraph, about the spring release.\n\n"
                                       "Second paragraph, about the summer break.\n")


def test_the_same_change_on_both_branches_is_no_conflict_and_reads_once(hearth: Hearth,
                                                                        ada: Path) -> None:
    doc = roadmap(hearth, ada, "the plan\nmore\n", "the plan\nmore\n", base="teh plan\nmore\n")
    assert hearth("doc", "merge", doc, "--from", "alt", "--into", "main", "--json",
                  data=ada).json()["conflicts"] == []
    assert _show(hearth, ada, doc) == "the plan\nmore\n"  # the CRDT alone: "thethe plan"


def test_merging_a_branch_already_merged_adds_nothing(hearth: Hearth, ada: Path) -> None:
    """Issue #29: a second merge of alt added an empty "merged from alt" version. Once main
    holds all of alt, merging again commits nothing, says so and succeeds, even after main
    moved on; once alt moves, it merges again."""
    doc = roadmap(hearth, ada, "# Roadmap MAIN\n", "# Roadmap\nQ2: merges\n",
                  base="# Roadmap\n")
    merge = ("doc", "merge", doc, "--from", "alt", "--into", "main")
    _id(hearth(*merge, "--prefer", "theirs", data=ada).line)
    history = hearth("doc", "history", doc, "--json", data=ada).json()
    text = _show(hearth, ada, doc)

    assert hearth(*merge, data=ada).line == "already merged, nothing to do"
    assert hearth(*merge, "--json", data=ada).json() == {
        "commit": None, "conflicts": [], "already_merged": True}
    assert hearth("doc", "history", doc, "--json", data=ada).json() == history
    assert _show(hearth, ada, doc) == text

    hearth("doc", "write", doc, "--text", text + "main moved on\n", data=ada)
    assert hearth(*merge, "--prefer", "ours", data=ada).line == "already merged, nothing to do"
    assert len(hearth("doc", "history", doc, "--json", data=ada).json()) == len(history) + 1

    hearth("doc", "write", doc, "--branch", "alt", "--text", "# Roadmap 2026\nQ2: merges\n",
           data=ada)
    made = hearth(*merge, "--prefer", "theirs", "--json", data=ada).json()
    assert HEX64.match(made["commit"]) and made["already_merged"] is False
    assert _show(hearth, ada, doc).startswith("# Roadmap 2026\n")


def test_both_members_read_the_same_text_after_the_merge_syncs(hearth: Hearth, ada: Path,
                                                               tmp_path: Path) -> None:
    doc = _id(hearth("doc", "new", "Roadmap", data=ada).line)
    hearth("doc", "write", doc, "--text", "# Roadmap\n\nQ1: editor\n", data=ada)
    hearth("doc", "fork", doc, "--from", "main", "--name", "alt", data=ada)
    bob = tmp_path / "bob"
    hearth("join-workspace", personal_code(hearth, ada, bob), "--nick", "bob", data=bob)
    bob_key = hearth("whoami", "--json", data=bob).json()["key"]
    hearth("doc", "editors", doc, "--add", bob_key, data=ada)
    _ship(hearth, ada, bob, tmp_path, "one")
    hearth("doc", "write", doc, "--branch", "alt", "--text",
           "# Roadmap ALT\n\nQ1: editor\nQ2: merges\n", data=bob)
    hearth("doc", "write", doc, "--text", "# Roadmap MAIN\n\nQ1: the editor\n", data=ada)
    _ship(hearth, bob, ada, tmp_path, "two")

    listed = hearth("doc", "merge", doc, "--from", "alt", "--into", "main", data=ada,
                    ok=False)
    assert listed.returncode == CONFLICT_EXIT
    assert "  main (ours), by ada:" in listed.stdout
    assert "  alt (theirs), by bob:" in listed.stdout
    assert listed.stdout.count("conflict ") == 1
    made = hearth("doc", "merge", doc, "--from", "alt", "--into", "main", "--prefer", "both",
                  "--json", data=ada).json()
    expected = ("<<<<<<< main\n# Roadmap MAIN\n=======\n# Roadmap ALT\n>>>>>>> alt\n\n"
                "Q1: the editor\nQ2: merges\n")
    assert _show(hearth, ada, doc) == expected
    _ship(hearth, ada, bob, tmp_path, "three")
    assert _show(hearth, bob, doc) == expected
    assert hearth("doc", "show", doc, "--json", data=bob).json()["heads"] == [made["commit"]]


def test_merge_refusals_are_one_line(hearth: Hearth, ada: Path) -> None:
    doc = roadmap(hearth, ada, "# Roadmap MAIN", "# Roadmap ALT")
    assert "invalid choice" in hearth.fails("doc", "merge", doc, "--from", "alt", "--into",
                                            "main", "--prefer", "mine", data=ada)
    assert "no branch" in hearth.fails("doc", "merge", doc, "--from", "nope", "--into",
                                       "main", data=ada)


# hearth doc diff -------------------------------------------------------------------------------

def test_diff_between_refs_prints_a_unified_diff_and_json_hunks_with_authors(
        hearth: Hearth, ada: Path, tmp_path: Path) -> None:
    doc = _id(hearth("doc", "new", "Notes", data=ada).line)
    first = _id(hearth("doc", "write", doc, "--text", "alpha\nbeta\ngamma\n", data=ada).line)
    hearth("doc", "tag", doc, "v1", data=ada)
    bob = tmp_path / "bob"
    hearth("join-workspace", personal_code(hearth, ada, bob), "--nick", "bob", data=bob)
    bob_key = hearth("whoami", "--json", data=bob).json()["key"]
    ada_key = hearth("whoami", "--json", data=ada).json()["key"]
    hearth("doc", "editors", doc, "--add", bob_key, data=ada)
    _ship(hearth, ada, bob, tmp_path, "one")
    hearth("doc", "write", doc, "--text", "alpha\nBETA by bob\ngamma\n", data=bob)
    _ship(hearth, bob, ada, tmp_path, "two")
    hearth("doc", "write", doc, "--text", "alpha\nBETA by bob\ngamma\ndelta\n", data=ada)

    unified = hearth("doc", "diff", doc, "--from", "v1", "--to", "main", data=ada).stdout
    assert unified.splitlines() == [
        "--- v1", "+++ main", "@@ -1,3 +1,4 @@", " alpha", "-beta", "+BETA by bob", " gamma",
        "+delta"]
    same = hearth("doc", "diff", doc, "--from", f"main@{first[:10]}", "--to", "main",
                  data=ada).stdout
    assert same.splitlines()[2:] == unified.splitlines()[2:]

    hunks = hearth("doc", "diff", doc, "--from", "v1", "--to", "main", "--json",
                   data=ada).json()["hunks"]
    bob_is = {"author": bob_key, "nick": "bob"}
    assert hunks == [
        {"from_line": 2, "from_lines": 1, "to_line": 2, "to_lines": 1,
         "authors": [{"key": bob_key, "nick": "bob"}],
         "segments": [{"op": "-", "text": "beta", **bob_is},
                      {"op": "+", "text": "BETA by bob", **bob_is}]},
        {"from_line": 4, "from_lines": 0, "to_line": 4, "to_lines": 1,
         "authors": [{"key": ada_key, "nick": "ada"}],
         "segments": [{"op": "+", "text": "delta\n", "author": ada_key, "nick": "ada"}]}]
    assert hearth("doc", "diff", doc, "--from", "main", "--to", "main", data=ada).stdout == ""
    assert "no branch or tag" in hearth.fails("doc", "diff", doc, "--from", "v9", "--to",
                                              "main", data=ada)


def test_diff_between_branches_names_the_changes_on_either_side(hearth: Hearth,
                                                               ada: Path) -> None:
    doc = roadmap(hearth, ada, "# Roadmap MAIN", "# Roadmap ALT")
    me = hearth("whoami", "--json", data=ada).json()["key"]
    [hunk] = hearth("doc", "diff", doc, "--from", "main", "--to", "alt", "--json",
                    data=ada).json()["hunks"]
    assert [(s["op"], s["text"], s["author"]) for s in hunk["segments"]] == [
        ("-", "MAIN", me), ("+", "ALT", me)]


# The review functions --------------------------------------------------------------------------

def _preview(base: str, ours: str, theirs: str, merged: str) -> doc_records.MergePreview:
    regions = review.regions(base, ours, theirs, merged)
    return doc_records.MergePreview("d" * 64, "alt", "main", (), (), merged, tuple(regions), ())


def test_regions_conflict_where_both_sides_touch_the_same_text_and_nowhere_else():
    base = "one\ntwo\nthree\n"
    # Both inserted at the same point; the CRDT interleaves them.
    preview = _preview(base, "one\ntwo!\nthree\n", "one\ntwo?\nthree\n", "one\ntwo!?\nthree\n")
    assert [(r.base, r.ours, r.theirs) for r in preview.regions] == [
        ("two\n", "two!\n", "two?\n")]
    assert preview.parts == ["one\n", 0, "three\n"]
    assert preview.text(["ours"]) == "one\ntwo!\nthree\n"
    assert preview.text(["theirs"]) == "one\ntwo?\nthree\n"
    assert preview.text(["both"]) == (
        "one\n<<<<<<< main\ntwo!\n=======\ntwo?\n>>>>>>> alt\nthree\n")
    # Apart: no region, the CRDT merge stands.
    assert review.regions(base, "ONE\ntwo\nthree\n", "one\ntwo\nTHREE\n",
                          "ONE\ntwo\nTHREE\n") == []
    # One side removed a line, the other inserted just before it: apart too.
    assert review.regions(base, "one\nthree\n", "one\nnew\ntwo\nthree\n",
                          "one\nnew\nthree\n") == []
    # The same change on both sides is a region (the CRDT doubled the insert), no conflict.
    [same] = review.regions("teh\n", "the\n", "the\n", "thethe\n")
    assert not same.conflict and _preview("teh\n", "the\n", "the\n", "thethe\n").text([]) \
        == "the\n"


def test_a_conflict_at_the_end_of_a_text_without_a_final_line_break():
    preview = _preview("# Roadmap", "# Roadmap MAIN", "# Roadmap ALT", "# Roadmap MAINALT")
    assert preview.text(["theirs"]) == "# Roadmap ALT"
    assert preview.text(["both"]) == \
        "<<<<<<< main\n# Roadmap MAIN\n=======\n# Roadmap ALT\n>>>>>>> alt"
    assert preview.replacements(["ours"]) == [(0, 17, "# Roadmap MAIN")]
    with pytest.raises(ValueError, match="one choice per conflict"):
        preview.replacements([])


@pytest.mark.parametrize("old,new", [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("".join(f"line {n}\n" for n in range(30)), "".join(f"line {n}\n" for n in range(30)
                                                        if n not in (3, 17)) + "tail\n"),
    ("x\n", "y\n"),
    ("", "new\n"),
])
def test_unified_reads_as_diff_u_prints_it(old: str, new: str):
    expected = list(difflib.unified_diff(old.splitlines(keepends=True),
                                         new.splitlines(keepends=True), "a", "b", n=3,
                                         lineterm=""))
    assert unified_diff.unified(old, new, "a", "b") == [line.rstrip("\n") for line in expected]


def test_a_diff_s_segments_rebuild_both_texts():
    old, new = "héllo 😀 world\nbye\n", "héllo there world\nbye now 🌍\n"
    found = review.diff(old, new)
    assert "".join(s.text for s in found.segments if s.op != "-") == new
    assert "".join(s.text for s in found.segments if s.op != "+") == old
    assert [(h.old_line, h.new_line) for h in found.hunks] == [(1, 1), (2, 2)]


# The library and the facade --------------------------------------------------------------------

def test_a_merge_refuses_when_a_branch_moved_since_its_preview(tmp_path: Path) -> None:
    paths = create_workspace(tmp_path, "ada", "ada")
    with Workspace.open(paths) as ws:
        docs = Documents(ws)
        document = docs.new("Roadmap")
        docs.write(document, "# Roadmap")
        docs.fork(document, "main", "alt")
        docs.write(document, "# Roadmap MAIN")
        docs.write(document, "# Roadmap ALT", branch="alt")
        preview = docs.merge_preview(document, "alt", "main")
        assert [c.ours for c in preview.conflicts] == ["# Roadmap MAIN"]
        with pytest.raises(MergeConflicts) as refused:
            docs.merge(document, "alt", "main")
        assert refused.value.preview.conflicts == preview.conflicts
        docs.write(document, "# Roadmap ALT!", branch="alt")
        with pytest.raises(WorkspaceError, match="changed since"):
            docs.merge(document, "alt", "main", resolutions=["theirs"],
                       expect=(preview.source_heads, preview.target_heads))
        with pytest.raises(WorkspaceError, match="one resolution per conflict"):
            docs.merge(document, "alt", "main", resolutions=[])
        commit = docs.merge(document, "alt", "main", resolutions=["theirs"])
        assert document.text([commit]) == "# Roadmap ALT!"


def test_the_library_merges_a_branch_already_merged_into_nothing(tmp_path: Path) -> None:
    paths = create_workspace(tmp_path, "ada", "ada")
    with Workspace.open(paths) as ws:
        docs = Documents(ws)
        document = docs.new("Roadmap")
        docs.write(document, "# Roadmap\n")
        docs.fork(document, "main", "alt")
        docs.write(document, "# Roadmap\nQ2\n", branch="alt")
        assert not docs.merge_preview(document, "alt", "main").already_merged
        assert docs.merge(document, "alt", "main") is not None
        commits = document.history("main")
        preview = docs.merge_preview(document, "alt", "main")
        assert preview.already_merged and preview.conflicts == ()
        made = docs.merged(document, "alt", "main", prefer="theirs")
        assert made.commit is None and made.conflicts == () and made.resolutions == ()
        assert document.history("main") == commits
        assert document.text(document.heads("main")) == "# Roadmap\nQ2\n"


def test_a_merge_through_the_facade_counts_its_conflicts_for_analytics(tmp_path: Path) -> None:
    paths = create_workspace(tmp_path, "ada", "ada")
    Recorder(paths.data).enable()
    with Cluster(tmp_path) as cluster:
        node = cluster.start(paths)
        doc = node.facade.run(lambda ws: ws.documents.new("Roadmap").id).result(TIMEOUT_S)
        node.facade.run(on_document(doc, lambda docs, d: docs.write(d, "intro\n# Roadmap\nend\n"))).result(TIMEOUT_S)
        node.facade.run(on_document(doc, lambda docs, d: docs.fork(d, "main", "alt"))).result(TIMEOUT_S)
        node.facade.run(on_document(doc, lambda docs, d: docs.write(d, "INTRO\n# Roadmap MAIN\nend\n"))).result(TIMEOUT_S)
        node.facade.run(on_document(doc, lambda docs, d: docs.write(d, "Intro\n# Roadmap ALT\nend\n", branch="alt"))).result(TIMEOUT_S)
        preview = node.facade.run(on_document(doc, lambda docs, d: docs.merge_preview(d, "alt", "main"))).result(TIMEOUT_S)
        assert len(preview.conflicts) == 2
        with pytest.raises(MergeConflicts):
            node.facade.run(on_document(doc, lambda docs, d: docs.merge(d, "alt", "main"))).result(TIMEOUT_S)
        node.facade.run(on_document(doc, lambda docs, d: docs.merge(d, "alt", "main", resolutions=["ours", "theirs"], expect=(preview.source_heads, preview.target_heads)))).result(TIMEOUT_S)
        assert node.facade.run(on_document(doc, lambda docs, d: d.text(d.heads("main")))).result(TIMEOUT_S) == "INTRO\n# Roadmap ALT\nend\n"
    taken = Recorder(paths.data).take_batch(1000)
    events = [json.loads(line) for line in (taken[1] if taken else [])]
    for event in events:
        validate(event)
        assert "Roadmap" not in json.dumps(event)
    conflicts = [(e["kind"], e["heads"]) for e in events if e["event"] == "conflict"]
    assert conflicts == [("concurrent_doc_edit", 2)] * 2
    assert sum(e["event"] == "doc_merge" for e in events) == 1
