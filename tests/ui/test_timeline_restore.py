"""Restoring a version from the history: which entries may be restored (no display needed), and
the entry's context menu, "Restore this version", enabled only for an editor and an entry other
than the newest, naming the commit it restores."""

from __future__ import annotations

import os
from datetime import date, datetime

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from app.records import BranchInfo, CommitInfo, DocumentView  # noqa: E402
from ui.timeline import RESTORE, Timeline, restore_refusal, timeline_entries  # noqa: E402

ADA = b"\xaa" * 32
MAIN = "01" * 32


def _entries():
    day = datetime(2026, 3, 10, 9, 0)
    history = [CommitInfo(f"c{i}", MAIN, (f"c{i - 1}",) if i > 1 else (), ADA,
                          int(day.timestamp() * 1000) + i, "edit") for i in (1, 2, 3)]
    view = DocumentView("doc", "Plan", "main", [BranchInfo(MAIN, "main", None, (), (), True,
                                                           True)],
                        ["c3"], "text", history, {}, {ADA: "ada"})
    return timeline_entries(view, date(2026, 3, 10))


def test_only_an_editor_restores_and_never_the_newest_version():
    assert restore_refusal(1, 3, True) is None
    assert restore_refusal(2, 3, True) is None
    assert restore_refusal(0, 3, True) == ("This is the latest version: the branch reads like "
                                           "this now")
    assert restore_refusal(1, 3, False) == "Only the document's editors can restore a version"
    assert restore_refusal(-1, 3, True) == "Pick a version in the history to restore it"
    assert restore_refusal(3, 3, True) is not None


def test_the_context_menu_restores_an_older_version_for_an_editor(qtbot):
    timeline = Timeline()
    qtbot.addWidget(timeline)
    timeline.set_entries(_entries())
    assert timeline.commits() == ["c3", "c2", "c1"]

    timeline.set_editable(True)
    menu = timeline.context_menu(2)
    (action,) = menu.actions()
    assert action.text() == RESTORE == "Restore this version" and action.isEnabled()
    with qtbot.waitSignal(timeline.restoreRequested, timeout=1000) as restored:
        action.trigger()
    assert restored.args == ["c1"]

    (newest,) = timeline.context_menu(0).actions()
    assert not newest.isEnabled()
    assert newest.toolTip().startswith("This is the latest version")

    timeline.set_editable(False)  # a reader, or no key
    (reader,) = timeline.context_menu(2).actions()
    assert not reader.isEnabled()
    assert reader.toolTip() == "Only the document's editors can restore a version"
