"""`hearth screenshot --out DIR`: the window's main views over a demonstration workspace,
rendered offscreen to PNG files, so a reviewer can look at them without a display."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEventLoop, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app import sharing  # noqa: E402
from app.documents import Documents  # noqa: E402
from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402

from .main_window import MainWindow  # noqa: E402

SETTLE_MS = 1500
TIMEOUT_MS = 20_000


def _demo(root: Path) -> tuple[Paths, Paths]:
    """Two members of a workspace with a conversation and a document with a branch."""
    ada = Paths.resolve(root / "ada", "default")
    bob = Paths.resolve(root / "bob", "default")
    with Workspace.init(ada, "ada", name="Hearth demo") as ws:
        ws.topic("general", "Planning the spring release")
        for text in ("Morning! The sync between our laptops works without a server now.",
                     "Search is fast too: try the box at the top.",
                     "/me is writing the release notes"):
            ws.post("general", text)
        ws.post("design", "Sketches for the new sidebar are in the doc")
        docs = Documents(ws)
        notes = docs.new("Release notes")
        docs.write(notes, "Hearth 0.1\n\n- chat in channels\n- documents with branches\n")
        docs.fork(notes, "main", "draft")
        docs.write(notes, "Hearth 0.1\n\n- chat in channels\n- documents with branches\n"
                          "- sync over the LAN, encrypted\n", branch="draft")
    sharing.join_workspace(bob, sharing.invite(ada).encode(), nick="bob")
    return ada, bob


def _wait(condition: Callable[[], bool]) -> None:
    loop = QEventLoop()
    timer = QTimer(interval=50)
    deadline = QTimer(singleShot=True, interval=TIMEOUT_MS)
    timer.timeout.connect(lambda: condition() and loop.quit())
    deadline.timeout.connect(loop.quit)
    timer.start()
    deadline.start()
    loop.exec()


def _settle() -> None:
    loop = QEventLoop()
    QTimer.singleShot(SETTLE_MS, loop.quit)
    loop.exec()


def render(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        ada, bob = _demo(Path(tmp))
        node = Node(ada, interfaces=["127.0.0.1"], mdns=False).start()
        peer = Node(bob, interfaces=["127.0.0.1"], mdns=False,
                    peers=[("127.0.0.1", node.port)]).start()
        try:
            peer.post("general", "Hi ada, bob here: your messages reached my laptop.")
            window = MainWindow(node)
            window.resize(1100, 700)
            window.show()
            _wait(lambda: len(window.messages.messages) >= 4
                  and window.peer_status.text().startswith("1 peer"))
            _settle()
            written.append(out / "channel.png")
            window.grab().save(str(written[-1]))
            _wait(lambda: window.document_list.count() >= 1)
            window.open_document(window.document_list.item(0).data(0x0100))
            _wait(lambda: window.document_pane.history.count() >= 1)
            window.document_pane.open(window.document_pane.doc_id, "draft")
            _wait(lambda: "LAN" in window.document_pane.editor.toPlainText())
            _settle()
            written.append(out / "documents.png")
            window.grab().save(str(written[-1]))
            settings = window.show_settings()
            _wait(lambda: settings.invite.text().startswith("hearth-"))
            settings.adjustSize()
            written.append(out / "settings.png")
            settings.grab().save(str(written[-1]))
            settings.close()
            peers = window.show_peers()
            _wait(lambda: peers.list.count() >= 1)
            peers.resize(560, 300)
            written.append(out / "peers.png")
            peers.grab().save(str(written[-1]))
            peers.close()
            window.close()
            written.append(out / "welcome.png")
            welcome = MainWindow(node, first_run=True)
            welcome.resize(1100, 700)
            welcome.show()
            _wait(lambda: welcome.first_run.invite.text().startswith("hearth-")
                  and len(welcome.messages.messages) >= 4)
            _settle()
            welcome.grab().save(str(written[-1]))
            welcome.close()
        finally:
            peer.stop()
            node.stop()
    app.processEvents()
    return written
