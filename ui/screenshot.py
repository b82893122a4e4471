"""`hearth screenshot --out DIR`: the window's main views over a demonstration workspace,
rendered offscreen to PNG files, so a reviewer can look at them without a display.

Three people (ada, whose window it is, bob and carol) talk over two days, with an edited
message, reactions, a thread and Markdown; bob's computer is connected to ada's while the
pictures are taken, so the peers dialog lists an incoming peer."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from concurrent.futures import Future  # noqa: E402

from PySide6.QtCore import QEventLoop, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QWidget  # noqa: E402

from app import sharing  # noqa: E402
from app.documents import Documents  # noqa: E402
from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402

from . import theme  # noqa: E402
from .main_window import MainWindow  # noqa: E402

SETTLE_MS = 1500
TIMEOUT_MS = 20_000
SIZE = (1180, 740)
HOUR_S = 3600
NOTES = "Hearth 0.1\n\n- chat in channels\n- documents with branches\n"


class _Clock:
    """A clock set back in time while the demonstration is written."""

    def __init__(self) -> None:
        self.at = time.time()

    def __call__(self) -> float:
        return self.at


CHECKLIST = ("Release checklist for **Friday**:\n- run `make test` on a clean clone\n"
             "- tag the release\n\n> Ship small, ship often.")


def _demo(root: Path) -> tuple[Paths, Paths, Paths, dict[str, bytes]]:
    """ada's workspace with a conversation over two days (an edited message, Markdown), a
    channel nobody wrote in yet, and a document with a tag, a branch and a merge; bob and
    carol joined it. Returns their paths and the ids of the messages others answer."""
    ada, bob, carol = (Paths.resolve(root / name, "default") for name in ("ada", "bob", "carol"))
    clock = _Clock()
    now = clock.at
    clock.at = now - 26 * HOUR_S
    with Workspace.init(ada, "ada", name="Hearth demo", clock=clock) as ws:
        code = sharing.invite(ada).encode()
        ws.topic("general", "Planning the spring release")
        morning = ws.post("general", "Morning! The sync between our laptops works without a "
                                     "server.")
        clock.at += 30
        ws.edit(morning.id, "Morning! The sync between our laptops works without a server now.")
        clock.at += 60
        ws.post("general", "The design notes are at https://example.org/hearth/design")
        ws.post("design", "Sketches for the new sidebar are in the document")
        ws.join("ideas")
        docs = Documents(ws)
        notes = docs.new("Release notes")
        docs.write(notes, NOTES)
        docs.tag(notes, "v0.1", None, "main")
        docs.fork(notes, "main", "draft")
        clock.at = now - 2 * HOUR_S
        docs.write(notes, NOTES + "- sync over the LAN, encrypted\n", branch="draft")
        docs.merge(notes, "draft", "main")
        clock.at = now - 40 * 60
        ws.post("general", CHECKLIST)
        ws.post("general", "Search is fast too: try the box at the top.")
        ws.post("general", "/me is writing the release notes")
    for paths, nick in ((bob, "bob"), (carol, "carol")):
        sharing.join_workspace(paths, code, nick=nick)
    clock.at = now - 25 * HOUR_S
    with Workspace.open(carol, clock=clock) as ws:
        welcome = ws.post("general", "Welcome aboard! Three things for today:\n"
                                     "1. the release checklist\n2. the new sidebar\n3. lunch")
    return ada, bob, carol, {"morning": morning.id, "welcome": welcome.id}


def _done(future: Future) -> object:
    return future.result(TIMEOUT_MS / 1000)


def _converse(ada: Node, bob: Node, carol: Node, ids: dict[str, bytes]) -> None:
    """What bob and carol add once the three are connected: reactions and a thread."""
    for node in (bob, carol):
        _wait(lambda n=node: set(ids.values()) <= {m.id for m in _done(n.facade.read("general"))})
    morning, welcome = ids["morning"], ids["welcome"]
    _done(bob.facade.react(morning, "👍"))
    _done(bob.facade.react(morning, "🎉"))
    _done(carol.facade.react(morning, "👍"))
    _done(bob.facade.reply(welcome, "I'll take the new sidebar."))
    _done(ada.facade.reply(welcome, "Lunch at **12:30**? The usual place."))
    _done(carol.facade.reply(welcome, "12:30 works for me."))
    _done(ada.facade.react(welcome, "❤️"))


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


def _save(widget: QWidget, path: Path, written: list[Path]) -> None:
    widget.grab().save(str(path))
    written.append(path)


def _window(node: Node, *, first_run: bool = False) -> MainWindow:
    window = MainWindow(node, first_run=first_run)
    window.resize(*SIZE)
    window.show()
    return window


def render(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    theme.apply(app, "light")
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        ada, bob, carol, ids = _demo(Path(tmp))
        node = Node(ada, interfaces=["127.0.0.1"], mdns=False).start()
        peers = [("127.0.0.1", node.port)]
        third = Node(carol, interfaces=["127.0.0.1"], mdns=False, peers=peers).start()
        peer = Node(bob, interfaces=["127.0.0.1"], mdns=False, peers=peers).start()
        try:
            peer.post("general", "Hi ada, bob here: your messages reached my laptop.")
            _converse(node, peer, third, ids)
            window = _window(node)
            _wait(lambda: len(window.messages.messages) >= 7
                  and window.peer_status.text().startswith("2 peers")
                  and any(m.replies == 3 for m in window.messages.messages)
                  and sum(len(m.reactions) for m in window.messages.messages) >= 3)
            third.stop()  # carol's laptop goes home; bob's stays connected
            _wait(lambda: window.peer_status.text().startswith("1 peer"))
            _settle()
            _save(window, out / "channel.png", written)

            window.open_thread(ids["welcome"])
            _wait(lambda: len(window.thread_pane.model.messages) == 4)
            _settle()
            _save(window, out / "thread.png", written)
            window.thread_pane.close_thread()

            theme.apply(app, "dark")
            _settle()
            _save(window, out / "channel-dark.png", written)
            theme.apply(app, "light")

            window.show_channel("ideas")
            _settle()
            _save(window, out / "empty-channel.png", written)

            window.search_box.setText("release")
            window.header.searchRequested.emit("release")
            _wait(lambda: window.reading.currentWidget() is window.search_results)
            _settle()
            _save(window, out / "search.png", written)
            window.show_channel("general")

            _wait(lambda: window.document_list.count() >= 1)
            window.open_document(window.document_list.item(0).data(0x0100))
            _wait(lambda: window.document_pane.history.count() >= 4
                  and "LAN" in window.document_pane.editor.toPlainText())
            _settle()
            _save(window, out / "documents.png", written)

            settings = window.show_settings()
            _wait(lambda: settings.invite.text().startswith("hearth-"))
            settings.adjustSize()
            _save(settings, out / "settings.png", written)
            settings.close()
            dialog = window.show_peers()
            _wait(lambda: any("connected" in dialog.list.item(i).text()
                              for i in range(dialog.list.count())))
            dialog.resize(620, 320)
            _save(dialog, out / "peers.png", written)
            dialog.close()
            window.close()

            welcome = _window(node, first_run=True)
            _wait(lambda: welcome.first_run.invite.text().startswith("hearth-")
                  and len(welcome.messages.messages) >= 7)
            _settle()
            _save(welcome, out / "welcome.png", written)
            welcome.close()
        finally:
            peer.stop()
            third.stop()
            node.stop()
    app.processEvents()
    return written
