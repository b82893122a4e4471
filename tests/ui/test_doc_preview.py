"""A document's Markdown (issue #16; ui/doc_outline.py, ui/doc_preview.py): the outline's
headings decided without a display, then the pane over real Nodes offscreen: the preview
renders headings and loads nothing (a local HTTP server counts the requests it would make), and
clicking a heading in the outline takes the editor there."""

from __future__ import annotations

import http.server
import os
import threading

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402

from app.documents import on_document  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.doc_outline import Heading, headings  # noqa: E402
from ui.doc_preview import NO_HEADINGS  # noqa: E402

from .test_documents_pane import open_written  # noqa: E402

# The outline, without a display ---------------------------------------------------------------


def test_atx_headings_with_their_levels_titles_and_line_starts():
    text = "# Roadmap\n\nIntro\n## Goals ##\n###   Spaced   out   \n####### not one\n#no"
    assert headings(text) == [
        Heading(1, "Roadmap", 0),
        Heading(2, "Goals", text.index("## Goals")),
        Heading(3, "Spaced out", text.index("###")),
    ]
    assert headings("   ## indented three\n") == [Heading(2, "indented three", 0)]
    assert headings("#\n## #\n") == []  # no title, nothing to list


def test_setext_headings_and_rules():
    text = "Title line\n===\n\nA paragraph\nof two lines\n---\n\n---\nafter a rule"
    assert headings(text) == [
        Heading(1, "Title line", 0),
        Heading(2, "A paragraph of two lines", text.index("A paragraph")),
    ]
    assert headings("- item\n---\n") == []  # a list item and a rule
    assert headings("> quoted\n===\n") == []


def test_code_blocks_hold_no_headings():
    text = "```\n# not a heading\n```\n~~~~\n## nor this\n~~~\n~~~~\n\n    # indented code\n\n# Real"
    assert headings(text) == [Heading(1, "Real", text.index("# Real"))]
    assert headings("```python\n# comment\n") == []  # a fence never closed runs to the end


def test_positions_are_codepoints():
    text = "😀 emoji first\n# Après 😀\nbody"
    assert headings(text) == [Heading(1, "Après 😀", len("😀 emoji first\n"))]


# The pane, over real Nodes -------------------------------------------------------------------


class Requests:
    """A local HTTP server that counts the requests made to it (none should come)."""

    def __init__(self) -> None:
        counter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                counter.count += 1
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.count = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def requests():
    server = Requests()
    yield server
    server.close()


def blocks(doc):
    block = doc.begin()
    while block.isValid():
        yield block
        block = block.next()


def fragments(doc):
    for block in blocks(doc):
        it = block.begin()
        while not it.atEnd():
            yield it.fragment()
            it += 1


def test_the_preview_renders_headings_and_loads_nothing(qtbot, window, ada_node, requests):
    text = (f"# Roadmap\n\nSome *words* and a [site](https://example.org).\n\n"
            f"![logo]({requests.url}/logo.png)\n\n![chart](/etc/hostname)\n\n"
            f"<img src=\"{requests.url}/raw.png\">\n\n[run](javascript:alert(1))\n")
    open_written(qtbot, window, ada_node, "Roadmap", text)
    pane = window.document_pane
    assert not pane.preview.isVisible()
    pane.markdown.preview_button.click()
    preview = pane.preview
    assert preview.isVisible() and preview.objectName() == "docPreview"
    qtbot.waitUntil(lambda: "Roadmap" in preview.toPlainText(), timeout=WAIT_MS)
    doc = preview.document()

    heading = doc.begin()
    assert heading.text() == "Roadmap" and heading.blockFormat().headingLevel() == 1
    body = next(b for b in blocks(doc) if b.text().startswith("Some words"))
    doc.documentLayout().blockBoundingRect(heading)  # laid out, as shown
    assert heading.layout().lineAt(0).height() > body.layout().lineAt(0).height()  # larger
    shown = preview.toPlainText()
    assert "Some words and a site." in shown  # emphasis rendered, not typed out

    # Images are their alt text; raw HTML shows as typed; only web links are links.
    assert "logo" in shown and "chart" in shown and "<img src=" in shown
    assert not any(f.charFormat().isImageFormat() for f in fragments(doc))
    links = {f.text(): f.charFormat().anchorHref() for f in fragments(doc)
             if f.charFormat().isAnchor()}
    assert links == {"site": "https://example.org", "logo": f"{requests.url}/logo.png"}
    assert "run" in shown
    qtbot.wait(300)  # room for a request, had anything been asked for
    assert requests.count == 0

    # It follows the editor's text, typed and not committed yet.
    pane.editor.setPlainText("## Next steps\n\nmore")
    qtbot.waitUntil(lambda: doc.begin().text() == "Next steps", timeout=WAIT_MS)
    assert doc.begin().blockFormat().headingLevel() == 2
    pane.markdown.preview_button.click()
    assert not preview.isVisible()


def test_the_outline_lists_the_headings_and_a_click_goes_there(qtbot, window, ada_node):
    filler = "\n".join(f"line {n}" for n in range(200))
    text = f"# Plan\n{filler}\n## Risks ✨\n{filler}\n### Budget\nthe end"
    open_written(qtbot, window, ada_node, "Plan", text)
    pane = window.document_pane
    pane.markdown.outline_button.click()
    outline = pane.outline
    assert outline.isVisible() and outline.objectName() == "docOutline"
    qtbot.waitUntil(lambda: outline.count() == 3, timeout=WAIT_MS)
    assert [t.strip() for t in outline.titles()] == ["Plan", "Risks ✨", "Budget"]
    assert outline.titles()[2].startswith(" " * 8)  # indented under its parents
    assert outline.item(0).font().bold() and not outline.item(1).font().bold()

    # "Risks" is far down, out of sight; a click puts the cursor on it, at the top.
    editor = pane.editor
    risks = text.index("## Risks")
    risks_utf16 = len(text[:risks].encode("utf-16-le")) // 2
    cursor = editor.textCursor()
    cursor.setPosition(risks_utf16)
    assert editor.cursorRect(cursor).top() > editor.viewport().height()
    item = outline.item(1)
    qtbot.mouseClick(outline.viewport(), Qt.MouseButton.LeftButton,
                     pos=outline.visualItemRect(item).center())
    assert editor.textCursor().position() == risks_utf16
    shown_at = editor.cursorRect().top()
    assert 0 <= shown_at < editor.fontMetrics().height() * 2  # its line is at the top
    assert editor.textCursor().block().text() == "## Risks ✨"

    # Headings typed later show; with none left, it says how to make one.
    editor.setPlainText("no headings at all")
    qtbot.waitUntil(lambda: outline.titles() == [NO_HEADINGS], timeout=WAIT_MS)
    assert not outline.item(0).flags() & Qt.ItemFlag.ItemIsEnabled


def test_a_reader_gets_the_preview_and_outline_too(qtbot, window, pair):
    # Made by the other member: ada reads it but may not edit it.
    node_a, node_b = pair
    doc_id = result(node_b.facade.run(lambda ws: ws.documents.new("Theirs", editing="listed").id))
    result(node_b.facade.run(on_document(bytes.fromhex(doc_id), lambda docs, d: docs.write(d, "# Theirs\n\nread only"))))
    qtbot.waitUntil(lambda: window.document_list.count() == 1, timeout=WAIT_MS)
    window.open_document(doc_id)
    pane = window.document_pane
    qtbot.waitUntil(lambda: pane.editor.toPlainText() == "# Theirs\n\nread only",
                    timeout=WAIT_MS)
    assert pane.editor.isReadOnly()
    pane.markdown.outline_button.click()
    pane.markdown.preview_button.click()
    qtbot.waitUntil(lambda: pane.outline.titles() == ["Theirs"], timeout=WAIT_MS)
    assert pane.preview.document().begin().blockFormat().headingLevel() == 1
    pane.outline.jumpRequested.emit(0)
    assert pane.editor.textCursor().position() == 0
    assert node_a.key not in result(node_a.facade.run(on_document(bytes.fromhex(doc_id), lambda docs, d: sorted(d.editors()))))
