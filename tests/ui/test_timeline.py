"""The document history as a timeline: what each entry says (no display needed), and what the
pane shows over real nodes: authors, tag chips, merges named by their source branch, and
entries that fit a narrow pane with no sideways scrolling."""

from __future__ import annotations

import os
from datetime import date, datetime

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtGui import QPalette  # noqa: E402

from app.documents import on_document
from app.names import suffixed  # noqa: E402
from app.records import BranchInfo, CommitInfo, DocumentView  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui._rows import name_rgb  # noqa: E402
from ui.timeline import Timeline, timeline_entries  # noqa: E402

from .test_documents_pane import doc_text, open_written, type_into  # noqa: E402

ADA, BOB, EVE = b"\xaa" * 32, b"\xbb" * 32, b"\xee" * 32
MAIN, DRAFT = "01" * 32, "02" * 32


def _ts(day: date, hour: int, minute: int) -> int:
    return int(datetime(day.year, day.month, day.day, hour, minute).timestamp() * 1000)


def _view(history: list[CommitInfo], **kwargs) -> DocumentView:
    branches = [BranchInfo(MAIN, "main", None, (), (), True, True),
                BranchInfo(DRAFT, "draft", MAIN, ("c1",), (), False, True)]
    defaults = {"tags": {}, "names": {ADA: "ada", BOB: "bob"}}
    defaults.update(kwargs)
    return DocumentView("doc", "Plan", "main", branches, [history[-1].id], "text", history,
                        defaults["tags"], defaults["names"],
                        merged_from=defaults.get("merged_from", {}))


def test_entries_are_newest_first_and_say_who_when_what_and_tags():
    today = date(2026, 3, 10)
    yesterday = date(2026, 3, 9)
    history = [
        CommitInfo("c1", MAIN, (), ADA, _ts(yesterday, 9, 5), "edit"),
        CommitInfo("c2", DRAFT, ("c1",), BOB, _ts(today, 10, 0), "snapshot"),
        CommitInfo("c3", MAIN, ("c1",), EVE, _ts(today, 14, 3), "merge", ("c2",)),
        CommitInfo("c4", MAIN, ("c3",), ADA, _ts(today, 14, 4), "merge", ("gone",)),
        CommitInfo("c5", MAIN, ("c4",), BOB, _ts(today, 14, 5), "?"),
    ]
    view = _view(history, tags={"v1": "c1", "alpha": "c1", "v2": "c3"},
                 merged_from={"c3": ("draft",), "c4": ()})
    entries = timeline_entries(view, today)
    assert [e.commit for e in entries] == ["c5", "c4", "c3", "c2", "c1"]
    assert [(e.name, e.when, e.what, e.tags) for e in entries] == [
        ("bob", "14:05", "a change (cannot be read here)", ()),
        ("ada", "14:04", "merged", ()),
        (suffixed("anonymous", EVE), "14:03", "merged from draft", ("v2",)),
        ("bob", "10:00", "snapshot of main", ()),
        ("ada", "Yesterday 09:05", "edited", ("alpha", "v1")),
    ]
    assert entries[2].summary == f"{suffixed('anonymous', EVE)} · 14:03 · merged from draft · v2"


def test_authors_whose_nicknames_look_alike_are_told_apart():
    history = [CommitInfo("c1", MAIN, (), ADA, 0, "edit"), CommitInfo("c2", MAIN, ("c1",),
                                                                       BOB, 1, "edit")]
    entries = timeline_entries(_view(history, names={ADA: "ada", BOB: "аda"}))  # Cyrillic а
    assert {e.name for e in entries} == {suffixed("ada", ADA), suffixed("аda", BOB)}


def _merged_draft(qtbot, window, node, branch: str = "draft") -> str:
    """A document written, tagged v1, forked to `branch`, edited there and merged into main;
    the pane shows main again. Returns the document's id."""
    doc_id = open_written(qtbot, window, node, "Plan", "step one")
    pane = window.document_pane
    pane.tag("v1")
    qtbot.waitUntil(lambda: any("v1" in e.tags for e in pane.history.entries()),
                    timeout=WAIT_MS)
    pane.fork(branch)
    qtbot.waitUntil(lambda: pane.branch == branch and pane.editor.toPlainText() == "step one",
                    timeout=WAIT_MS)
    type_into(pane, "step one, step two")
    qtbot.waitUntil(lambda: doc_text(node, doc_id, branch) == "step one, step two",
                    timeout=WAIT_MS)
    pane.merge(branch, "main")
    qtbot.waitUntil(lambda: pane.branch == "main" and pane.history.count() == 2,
                    timeout=WAIT_MS)
    return doc_id


def _painted(pane, row: int) -> dict[str, list[str]]:
    pieces: dict[str, list[str]] = {}
    for piece in pane.history.entry_pieces(row):
        pieces.setdefault(piece.role, []).append(piece.text)
    return pieces


def test_the_timeline_shows_author_tag_chips_and_the_merged_branch(qtbot, window, ada_node):
    doc_id = _merged_draft(qtbot, window, ada_node)
    pane = window.document_pane
    merge, first = pane.history.entries()
    assert (merge.name, merge.what, merge.tags) == ("ada", "merged from draft", ())
    assert (first.name, first.what, first.tags) == ("ada", "edited", ("v1",))
    # What the entries paint: the author, the time, what happened and the tag as a chip.
    assert _painted(pane, 0) == {"avatar": [""], "author": ["ada"], "time": [merge.when],
                                 "what": ["merged from draft"]}
    assert _painted(pane, 1) == {"avatar": [""], "author": ["ada"], "time": [first.when],
                                 "what": ["edited"], "tag": ["v1"]}
    # The name in the colour of ada's key, as the message list shows it.
    base = pane.history.palette().color(QPalette.ColorRole.Base)
    assert pane.history.author_color(0).getRgb()[:3] == \
        name_rgb(ada_node.key, (base.red(), base.green(), base.blue()))
    history = result(ada_node.facade.run(on_document(bytes.fromhex(doc_id), lambda docs, d: d.history("main"))))
    assert pane.history.commits() == [c.id for c in reversed(history)]


def test_the_timeline_fits_a_narrow_pane_with_no_sideways_scrolling(qtbot, window, ada_node):
    long_name = "release-candidate-2-for-the-spring-with-everything-in-it"
    _merged_draft(qtbot, window, ada_node, long_name)
    pane = window.document_pane
    timeline = pane.history
    timeline.setFixedWidth(260)
    qtbot.waitUntil(lambda: timeline.width() == 260, timeout=WAIT_MS)
    width = timeline.viewport().width()

    def fits() -> bool:
        return all(timeline.visualItemRect(timeline.item(row)).right() < width
                   for row in range(timeline.count()))

    qtbot.waitUntil(fits, timeout=WAIT_MS)
    assert not timeline.horizontalScrollBar().isVisible()
    assert timeline.horizontalScrollBar().maximum() == 0
    for row in range(timeline.count()):
        item = timeline.visualItemRect(timeline.item(row))
        for piece in timeline.entry_pieces(row):
            assert piece.rect.left() >= 0 and piece.rect.right() < width, piece
            assert piece.rect.bottom() < item.height(), piece
    # The long branch name wraps onto more lines, all of it shown; the chip stays whole.
    what = [p for p in timeline.entry_pieces(0) if p.role == "what"]
    assert len(what) > 1
    assert "".join(p.text for p in what).replace(" ", "") == \
        f"merged from {long_name}".replace(" ", "")
    assert [p.text for p in timeline.entry_pieces(1) if p.role == "tag"] == ["v1"]

    # Wider, it wraps onto fewer lines again.
    timeline.setFixedWidth(1000)
    qtbot.waitUntil(lambda: len([p for p in timeline.entry_pieces(0) if p.role == "what"])
                    < len(what), timeout=WAIT_MS)


def test_new_commits_come_in_at_the_top_and_the_rest_stays(qtbot):
    timeline = Timeline()
    qtbot.addWidget(timeline)
    history = [CommitInfo("c1", MAIN, (), ADA, 0, "edit"),
               CommitInfo("c2", MAIN, ("c1",), BOB, 1, "edit")]
    assert timeline.set_entries(timeline_entries(_view(history), date(2026, 3, 10)))
    kept = [timeline.item(0), timeline.item(1)]
    timeline.setCurrentRow(1)
    history.append(CommitInfo("c3", MAIN, ("c2",), ADA, 2, "edit"))
    assert timeline.set_entries(timeline_entries(_view(history), date(2026, 3, 10)))
    assert timeline.commits() == ["c3", "c2", "c1"]
    assert [timeline.item(1), timeline.item(2)] == kept  # not made again
    assert timeline.currentItem() is kept[1]
    assert not timeline.set_entries(timeline.entries())  # nothing new: nothing redone
