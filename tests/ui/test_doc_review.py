"""The diff view and the merge dialog over real nodes, offscreen: what changed, highlighted in its
authors' colours, and a merge previewed with its conflicts, committed only once every conflict
has a choice."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QColor, QPalette  # noqa: E402
from PySide6.QtWidgets import QLabel  # noqa: E402

from app.doc_views import document_view  # noqa: E402
from app.documents import on_document  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui import _rows  # noqa: E402
from ui.doc_diff import INSERT_ALPHA, DocDiffView  # noqa: E402
from ui.merge_dialog import MergeDialog  # noqa: E402


def shared_roadmap(qtbot, pair, main: str, alt: str, base: str = "# Roadmap\n") -> bytes:
    """A document ada wrote (`base`) and forked as alt; bob, made an editor, writes `alt` on
    alt and ada `main` on main. Ada's node holds all of it when this returns."""
    node_a, node_b = pair
    doc = bytes.fromhex(result(node_a.facade.run(lambda ws: ws.documents.new("Roadmap").id)))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, base))))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.fork(d, "main", "alt"))))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.add_editor(d, node_b.key.hex()))))
    qtbot.waitUntil(lambda: _reads(node_b, doc, "alt", base)
                    and node_b.key in result(node_b.facade.run(on_document(doc, lambda docs, d: sorted(d.editors())))), timeout=WAIT_MS)
    result(node_b.facade.run(on_document(doc, lambda docs, d: docs.write(d, alt, branch="alt"))))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, main))))
    qtbot.waitUntil(lambda: _reads(node_a, doc, "alt", alt), timeout=WAIT_MS)
    return doc


def _reads(node, doc: bytes, branch: str, text: str) -> bool:
    try:
        return result(node.facade.run(on_document(doc, lambda docs, d: d.text(d.heads(branch))))) == text
    except Exception:  # not arrived yet
        return False


def tint(key: bytes) -> QColor:
    colour = QColor(*_rows.avatar_rgb(key))
    colour.setAlpha(INSERT_ALPHA)
    return colour


def test_the_diff_view_highlights_each_change_in_its_authors_colour(qtbot, pair, bridges):
    node_a, node_b = pair
    doc = shared_roadmap(qtbot, pair, "# Roadmap\n\nQ1: ship it\n",
                         "# Roadmap ALT\n", base="# Roadmap\n")
    view = DocDiffView(bridges[0])
    qtbot.addWidget(view)
    view.show()
    with qtbot.waitSignal(view.shown, timeout=WAIT_MS):
        view.show_diff(doc, "main", "alt")
    ada, bob = node_a.key.hex(), node_b.key.hex()
    assert view.heading.text() == "Changes from main to alt"
    shown = view.changes()
    # The newer text with what was removed left in place (removed line breaks as pilcrows).
    assert "".join(text for op, text, _ in shown if op != "-") == "# Roadmap ALT\n"
    assert "".join(text for op, text, _ in shown if op == "-") == \
        "\N{PILCROW SIGN}\N{PILCROW SIGN}Q1: ship it"
    assert "".join(text for _, text, _ in shown) == view.view.toPlainText()
    assert sorted((op, text.strip(), who) for op, text, who in shown if op != "=") == [
        ("+", "ALT", bob), ("-", "\N{PILCROW SIGN}\N{PILCROW SIGN}Q1: ship it", ada)]
    assert "ada" in view.legend.text() and "bob" in view.legend.text()
    # Bob's insertion is tinted with his colour; ada's deletion is struck through in hers.
    document = view.view.document()
    inserted = document.find("ALT").charFormat()
    removed = document.find("ship").charFormat()
    assert inserted.background().color() == tint(node_b.key)
    assert not inserted.fontStrikeOut() and removed.fontStrikeOut()
    base = view.view.palette().color(QPalette.ColorRole.Base)
    assert removed.foreground().color() == QColor(*_rows.name_rgb(
        node_a.key, (base.red(), base.green(), base.blue())))
    assert inserted.toolTip() == "added by bob" and removed.toolTip() == "deleted by ada"


def test_what_changed_since_i_last_looked_at_a_branch(qtbot, pair, bridges):
    node_a = pair[0]
    doc = bytes.fromhex(result(node_a.facade.run(lambda ws: ws.documents.new("Notes").id)))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, "one\ntwo\n"))))
    seen = result(node_a.facade.run(on_document(doc, lambda docs, d: document_view(docs, d)))).heads  # what the pane showed when I last looked
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, "one\ntwo\nthree\n"))))
    view = DocDiffView(bridges[0])
    qtbot.addWidget(view)
    with qtbot.waitSignal(view.shown, timeout=WAIT_MS):
        view.show_since(doc, "main", seen)
    assert view.heading.text() == "What changed on main since you last looked"
    assert view.changes() == [("=", "one\ntwo\n", ""), ("+", "three\n", node_a.key.hex())]
    with qtbot.waitSignal(view.shown, timeout=WAIT_MS):
        view.show_diff(doc, "main", "main")
    assert view.heading.text() == "Changes from main to main: none"
    assert view.changes() == [("=", "one\ntwo\nthree\n", "")]
    view.show_diff(doc, "nonexistent", "main")
    qtbot.waitUntil(lambda: "no branch or tag" in view.heading.text(), timeout=WAIT_MS)
    assert view.view.toPlainText() == ""


def test_the_merge_dialog_resolves_a_conflict_per_choice_and_commits_only_then(
        qtbot, pair, bridges):
    node_a, node_b = pair
    doc = shared_roadmap(qtbot, pair, "# Roadmap MAIN\n\nQ1: editor\n",
                         "# Roadmap ALT\n\nQ1: editor\nQ2: merges\n",
                         base="# Roadmap\n\nQ1: editor\n")
    dialog = MergeDialog(bridges[0], doc, "alt", "main")
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.previewed, timeout=WAIT_MS):
        dialog.show()
    assert dialog.summary.text().startswith("1 conflict: alt and main changed the same text")
    assert not dialog.merge_button.isEnabled()
    # Unresolved, the conflict shows both sides, marked and highlighted; the rest is merged.
    marked = "<<<<<<< main\n# Roadmap MAIN\n=======\n# Roadmap ALT\n>>>>>>> alt\n"
    assert dialog.conflict_texts() == {0: marked}
    highlight = dialog.result.document().find("Roadmap ALT").charFormat().background().color()
    assert highlight.rgb() == dialog.palette().color(QPalette.ColorRole.Highlight).rgb()
    plain = dialog.result.document().find("Q1").charFormat().background().style()
    assert plain == Qt.BrushStyle.NoBrush
    assert dialog.result.toPlainText() == marked + "\nQ1: editor\nQ2: merges\n"
    labels = [w.text() for w in dialog.conflict_rows.findChildren(QLabel)]
    assert any("main" in t and "ada" in t for t in labels)
    assert any("alt" in t and "bob" in t for t in labels)

    dialog.choose(0, "theirs")
    assert dialog.conflict_texts() == {0: "# Roadmap ALT\n"}
    assert dialog.merge_button.isEnabled()
    dialog.choose(0, "ours")
    assert dialog.result.toPlainText() == "# Roadmap MAIN\n\nQ1: editor\nQ2: merges\n"
    assert result(node_a.facade.run(on_document(doc, lambda docs, d: d.text(d.heads("main"))))) == "# Roadmap MAIN\n\nQ1: editor\n"  # nothing committed

    dialog.choose(0, "theirs")
    with qtbot.waitSignal(dialog.merged, timeout=WAIT_MS) as merged:
        dialog.merge_button.click()
    expected = "# Roadmap ALT\n\nQ1: editor\nQ2: merges\n"
    assert result(node_a.facade.run(on_document(doc, lambda docs, d: d.text(d.heads("main"))))) == expected
    assert result(node_a.facade.run(on_document(doc, lambda docs, d: d.history("main"))))[-1].id == merged.args[0]
    assert not dialog.isVisible()
    qtbot.waitUntil(lambda: _reads(node_b, doc, "main", expected), timeout=WAIT_MS)


def test_the_merge_dialog_without_conflicts_merges_at_once(qtbot, pair, bridges):
    doc = shared_roadmap(qtbot, pair, "# Roadmap\n\nmain's part\n", "# Roadmap, alt\n",
                         base="# Roadmap\n")
    dialog = MergeDialog(bridges[0], doc, "alt", "main")
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.previewed, timeout=WAIT_MS):
        dialog.show()
    assert dialog.summary.text().startswith("No conflicts")
    assert dialog.conflict_texts() == {}
    assert dialog.result.toPlainText() == "# Roadmap, alt\n\nmain's part\n"
    assert dialog.merge_button.isEnabled()
    with qtbot.waitSignal(dialog.merged, timeout=WAIT_MS):
        dialog.merge_button.click()
    assert result(pair[0].facade.run(on_document(doc, lambda docs, d: d.text(d.heads("main"))))) == "# Roadmap, alt\n\nmain's part\n"


def test_a_branch_that_moved_since_the_preview_is_not_merged_unseen(qtbot, pair, bridges):
    node_a = pair[0]
    doc = bytes.fromhex(result(node_a.facade.run(lambda ws: ws.documents.new("Roadmap").id)))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, "# Roadmap"))))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.fork(d, "main", "alt"))))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, "# Roadmap MAIN"))))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, "# Roadmap ALT", branch="alt"))))
    dialog = MergeDialog(bridges[0], doc, "alt", "main")
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.previewed, timeout=WAIT_MS):
        dialog.show()
    dialog.choose(0, "theirs")
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, "# Roadmap ALT, revised", branch="alt"))))  # after the preview
    with qtbot.waitSignal(dialog.previewed, timeout=WAIT_MS):
        dialog.merge_button.click()
    assert dialog.error.isVisible() and "changed since" in dialog.error.text()
    assert result(node_a.facade.run(on_document(doc, lambda docs, d: d.text(d.heads("main"))))) == "# Roadmap MAIN"
    assert dialog.conflict_texts() == {0: "<<<<<<< main\n# Roadmap MAIN\n=======\n"
                                          "# Roadmap ALT, revised\n>>>>>>> alt"}
    assert not dialog.merge_button.isEnabled()  # the choice is made again, on what is there now
