"""`hearth screenshot --out DIR`: the window's main views over a demonstration workspace,
rendered offscreen to PNG files, so a reviewer can look at them without a display.

Three people (ada, whose window it is, bob and carol) talk over two days, with an edited
message, reactions, a thread and Markdown; bob's computer is connected to ada's while the
pictures are taken, so the peers dialog lists an incoming peer; bob and carol joined with
personal codes ada made, as the Members dialog says (where ada, an admin, may remove either),
and ada makes an invite for one more. They review a roadmap too: its comments (a reply, one
resolved) beside the editor with bob's cursor in it, what bob changed since ada last looked,
and merging bob's branch into main with the conflict it makes. ada and bob also plan the
launch in a private channel, and carol sends ada a direct message: every picture's sidebar
lists both, and private-channel.png shows the channel open; private-thread.png its thread
beside it, with the reactions on its first message (sealed under the channel's key too). In
#design ada posts a chart (an image, shown inline) and bob the release plan (a PDF, a file
card; both drawn by ui/screenshot_files.py), which ada's computer fetches from bob's and ada
keeps there: attachment.png. slack-import.png is a channel brought in from a Slack export
(ui/screenshot_slack.py). syncing-history.png is #general as a computer joining a big
workspace shows it while history streams in (the bar, "Loading older messages…"; the progress
is the demonstration's, handed to the window as the Node's events are), with #ideas not kept on
this computer and dimmed."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from concurrent.futures import Future  # noqa: E402

from PySide6.QtCore import QEventLoop, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QListWidget, QWidget  # noqa: E402

from app import joining, notifying, relays, sharing  # noqa: E402
from app.doc_views import comments_view, document_view  # noqa: E402
from app.documents import on_document  # noqa: E402
from app.node import Node  # noqa: E402
from app.notify_rules import parse_schedule  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.records import HistoryProgress  # noqa: E402
from app.relay_thread import RelayThread  # noqa: E402
from app.workspace import Workspace, load_or_create_identity  # noqa: E402

from . import emoji_font, theme  # noqa: E402
from .collector import GuiThreadCollector  # noqa: E402
from .data_settings import DataPage  # noqa: E402
from .dialogs import SettingsDialog  # noqa: E402
from .main_window import MainWindow  # noqa: E402
from .screenshot_files import release_plan, signups_chart  # noqa: E402
from .screenshot_slack import import_demo  # noqa: E402

if TYPE_CHECKING:
    from app.documents import Document, Documents

SETTLE_MS = 1500
TIMEOUT_MS = 60_000  # what each view waits for; a loaded machine (a test run on every core) is slow
SIZE = (1180, 740)
WIDE = 1480  # the documents view with its preview
HOUR_S = 3600
NOTES = "Hearth 0.1\n\n- chat in channels\n- documents with branches\n"


class _Clock:
    """A clock set back in time while the demonstration is written."""

    def __init__(self) -> None:
        self.at = time.time()

    def __call__(self) -> float:
        return self.at


ROADMAP = ("# Roadmap\n\nWhere Hearth goes this year.\n\n## Spring\n"
           "- documents with branches and merges\n- comments in the margin\n"
           "- a preview of the Markdown\n\n## Summer\n"
           "- presence: who is where in a document\n- search across documents\n"
           "- themes, maybe\n")
# What each changes: bob's branch alt and ada's main the same words (a conflict), bob also the
# introduction on alt; and later main, while ada looks elsewhere.
ROADMAP_ALT = ROADMAP.replace("in the margin", "anchored to their words").replace(
    "this year.", "this year, and why.")
ROADMAP_MAIN = ROADMAP.replace("in the margin", "beside the text, with replies")
ROADMAP_LATER = ROADMAP_MAIN.replace("## Summer", "## Summer and autumn").replace(
    "- themes, maybe\n", "- export to PDF\n")

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
        ws.topic("general", "Planning the spring release")
        morning = ws.post("general", "Morning! The sync between our laptops works without a "
                                     "server.")
        clock.at += 30
        ws.conversation.edit(morning.id, "Morning! The sync between our laptops works without a server now.")
        clock.at += 60
        ws.post("general", "The design notes are at https://example.org/hearth/design")
        ws.create_channel("design")  # a post never makes a channel
        ws.post("design", "Sketches for the new sidebar are in the document")
        ws.create_channel("ideas")
        docs = ws.documents
        notes = docs.new("Release notes")
        docs.write(notes, NOTES)
        docs.tag(notes, "v0.1", None, "main")
        docs.fork(notes, "main", "draft")
        clock.at = now - 2 * HOUR_S
        docs.write(notes, NOTES + "- sync over the LAN, encrypted\n", branch="draft")
        docs.merge(notes, "draft", "main")
        roadmap = docs.new("Roadmap")
        docs.write(roadmap, ROADMAP)
        docs.fork(roadmap, "main", "alt")
        docs.comment(roadmap, "a preview of the Markdown", "Tables too, or only text?")
        docs.comment(roadmap, "presence: who is where in a document",
                     "Say what others see of us, and for how long.")
        clock.at = now - 40 * 60
        ws.post("general", CHECKLIST)
        ws.post("general", "Search is fast too: try the box at the top.")
        ws.post("general", "/me is writing the release notes")
    for paths, nick in ((bob, "bob"), (carol, "carol")):
        sharing.join_workspace(paths, sharing.invite_for(ada, joining.identity_key(paths)), nick=nick)
    with Workspace.open(ada, clock=clock) as ws:
        docs = ws.documents
        docs.add_editor(docs.open(roadmap.id), load_or_create_identity(bob).public_key.hex())
    clock.at = now - 25 * HOUR_S
    with Workspace.open(carol, clock=clock) as ws:
        welcome = ws.post("general", "Welcome aboard! Three things for today:\n"
                                     "1. the release checklist\n2. the new sidebar\n3. lunch")
    return ada, bob, carol, {"morning": morning.id, "welcome": welcome.id,
                             "roadmap": bytes.fromhex(roadmap.id)}


def _done(future: Future) -> Any:
    return future.result(TIMEOUT_MS / 1000)


def _on(node: Node, doc: bytes, action: Callable[[Documents, Document], Any]) -> Any:
    """action(the node's documents, document `doc`) on its thread, waited for."""
    return _done(node.facade.run(on_document(doc, action)))


def _react(node: Node, message: bytes, emoji: str) -> None:
    _done(node.facade.run(lambda ws: ws.conversation.react(message, emoji)))


def _reply(node: Node, message: bytes, text: str) -> None:
    _done(node.facade.run(lambda ws: ws.conversation.reply(message, text)))


def _converse(ada: Node, bob: Node, carol: Node, ids: dict[str, bytes]) -> None:
    """What bob and carol add once the three are connected: reactions and a thread."""
    morning, welcome = ids["morning"], ids["welcome"]
    for node in (bob, carol):
        _wait(lambda n=node: {morning, welcome} <= {
            m.id for m in _done(n.facade.run(lambda ws: ws.read("general")))})
    _react(bob, morning, "👍")
    _react(bob, morning, "🎉")
    _react(carol, morning, "👍")
    _reply(bob, welcome, "I'll take the new sidebar.")
    _reply(ada, welcome, "Lunch at **12:30**? The usual place.")
    _reply(carol, welcome, "12:30 works for me.")
    _react(ada, welcome, "❤️")


def _private(ada: Node, bob: Node, carol: Node) -> tuple[bytes, bytes]:
    """A private channel of ada's with bob, where both wrote, reacted and replied in a thread
    (sealed like its messages), and carol's direct message to ada; the channel's id and its
    first message's."""
    channel = _done(ada.facade.run(lambda ws: ws.private.create("launch-plans", [bob.key])))
    first = _done(ada.facade.run(lambda ws: ws.private.post(
        channel, "Only the two of us read this: the launch date stays here until Friday."))).id
    _must(lambda: any(c.id == channel
                      for c in _done(bob.facade.run(lambda ws: ws.private.channels()))),
          "the private channel at bob's")
    _must(lambda: bool(_done(bob.facade.run(lambda ws: ws.private.read(channel)))),
          "the private message at bob's")
    _done(bob.facade.run(lambda ws: ws.conversation.reply(
        first, "Friday works. Shall we tell carol on Thursday?")))
    _done(bob.facade.run(lambda ws: ws.conversation.react(first, "👍")))
    _done(bob.facade.run(lambda ws: ws.private.post(
        channel, "Agreed. I'll draft the announcement here first.")))
    _must(lambda: any(m.replies for m in _done(ada.facade.run(
        lambda ws: ws.private.read(channel)))), "bob's private reply at ada's")
    _done(ada.facade.run(lambda ws: ws.conversation.react(first, "🚀")))
    _done(ada.facade.run(lambda ws: ws.conversation.reply(
        first, "Thursday, after the **demo**.")))
    _must(lambda: {carol.key, ada.key} <= {
        m.key for m in _done(carol.facade.run(lambda ws: ws.members.all()))},
          "the members at carol's")
    _done(carol.facade.run(lambda ws: ws.private.direct_message(
        ada.key, "Can we talk about the sidebar later?")))
    _must(lambda: len(_done(ada.facade.run(lambda ws: ws.private.channels()))) == 2
          and len(_done(ada.facade.run(lambda ws: ws.private.read(channel)))) == 2,
          "the private messages at ada's")
    return channel, first


def _reads(node: Node, doc: bytes, branch: str, text: str) -> bool:
    try:
        return _on(node, doc, lambda _, d: d.text(d.heads(branch))) == text
    except Exception:  # not arrived yet
        return False


def _review(ada: Node, bob: Node, carol: Node, doc: bytes) -> None:
    """What bob and carol do to the roadmap: bob writes on alt while ada changes the same line
    on main; bob replies to ada's comment and resolves one, carol comments."""
    def comments(node: Node) -> list:
        return list(_on(node, doc, lambda docs, d: comments_view(docs, d)).comments)

    _must(lambda: _reads(bob, doc, "alt", ROADMAP) and _reads(carol, doc, "main", ROADMAP)
          and bob.key in _on(bob, doc, lambda _, d: sorted(d.editors()))
          and len(comments(bob)) == 2, "the roadmap at bob's and carol's")
    _on(bob, doc, lambda docs, d: docs.write(d, ROADMAP_ALT, branch="alt"))
    _on(ada, doc, lambda docs, d: docs.write(d, ROADMAP_MAIN))
    tables, presence = comments(bob)
    _on(bob, doc, lambda docs, d: docs.reply(d, tables.id,
                                             "Tables too: GitHub's dialect, as in chat."))
    _on(bob, doc, lambda docs, d: docs.resolve_comment(d, presence.id))
    _must(lambda: _reads(carol, doc, "main", ROADMAP_MAIN), "ada's change at carol's")
    _on(carol, doc, lambda docs, d: docs.comment(d, "search across documents",
                                                 "And across the chat?"))
    _must(lambda: _reads(ada, doc, "alt", ROADMAP_ALT) and len(comments(ada)) == 3,
          "bob's branch and comments")


def _cursor(bob: Node, doc: bytes, word: str) -> None:
    """Bob's selection of `word` in main, shown live in ada's editor."""
    view = _on(bob, doc, lambda docs, d: document_view(docs, d))
    start = view.text.index(word)
    bob.facade.presence(doc, "main", view.heads, start, start + len(word))


def _wait(condition: Callable[[], bool]) -> bool:
    """Run the window until `condition` holds (True) or TIMEOUT_MS pass (False)."""
    loop = QEventLoop()
    timer = QTimer(interval=50)
    deadline = QTimer(singleShot=True, interval=TIMEOUT_MS)
    timer.timeout.connect(lambda: condition() and loop.quit())
    deadline.timeout.connect(loop.quit)
    timer.start()
    deadline.start()
    loop.exec()
    return bool(condition())


def _must(condition: Callable[[], bool], what: str) -> None:
    """As `_wait`, but a picture that would not show `what` is not taken."""
    if not _wait(condition):
        raise RuntimeError(f"screenshot: {what} did not show")


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


def _document(window: MainWindow, title: str) -> str:
    items = [window.document_list.item(i) for i in range(window.document_list.count())]
    return next(item.data(0x0100) for item in items if item.text() == title)


def _documents(window: MainWindow, ada: Node, bob: Node, doc: bytes, out: Path,
               written: list[Path]) -> None:
    """The roadmap: its comments with bob's cursor, what bob changed since ada looked, and
    merging alt into main."""
    pane = window.document_pane
    window.open_document(doc.hex())
    pane.comments.show_resolved.setChecked(True)
    _must(lambda: pane.editor.toPlainText() == ROADMAP_MAIN
          and len(pane.comments.comment_cards()) == 3
          and any(c.card.replies for c in pane.comments.comment_cards()), "the comments")
    _cursor(bob, doc, "Summer")
    _must(lambda: bool(pane.presence.overlay.people()), "bob's cursor")
    _settle()
    _save(window, out / "doc-comments.png", written)

    window.show_channel("general")
    _on(bob, doc, lambda docs, d: docs.write(d, ROADMAP_LATER))
    _must(lambda: _reads(ada, doc, "main", ROADMAP_LATER), "bob's change at ada's")
    window.open_document(doc.hex())
    _must(lambda: pane.changed_notice.isVisible(), "changed since you last looked")
    pane.changed_notice.show_button.click()
    _must(lambda: pane.versions.diff.diff is not None, "the changes")
    _settle()
    _save(window, out / "doc-diff.png", written)

    pane.branch_selector.activated.emit(pane.branch_selector.findData("alt"))
    _must(lambda: pane.branch == "alt" and pane.merge_button.isEnabled(), "the branch alt")
    pane.merge_button.click()
    dialog = pane.merge_dialog
    _must(lambda: dialog is not None and dialog.preview is not None
          and len(dialog.preview.conflicts) == 1, "the merge's conflict")
    _settle()
    _save(dialog, out / "doc-merge-conflict.png", written)
    dialog.reject()


def _syncing(window: MainWindow, ada: Node) -> None:
    """#general while a big workspace's history arrives, #ideas not kept here."""
    _done(ada.facade.keep(["ideas"], drop=True))
    window.kept.load()
    window.show_channel("general")
    window.bridge.historyProgress.emit(
        HistoryProgress(412_000, 1_000_000, False, frozenset({"general", "design"})))
    _must(lambda: window.history_bar.isVisible() and window.loading_older.isVisible()
          and not window.kept.is_kept("ideas"), "history arriving")


def _synced(window: MainWindow, ada: Node) -> None:
    """History is all here, and every channel kept again."""
    _done(ada.facade.keep_all())
    window.kept.load()
    window.bridge.historyProgress.emit(HistoryProgress(1_000_000, 1_000_000, True))
    _must(lambda: not window.history_bar.isVisible() and window.kept.is_kept("ideas"),
          "history over")


def _files(window: MainWindow, ada: Node, bob: Node, root: Path) -> None:
    """#design with ada's chart shown inline and bob's PDF as a card, fetched from bob's
    computer (its Open and Save as… show once it is here) and kept there by ada ("Kept
    here")."""
    _done(ada.facade.attach("design", [signups_chart(root / "signups.png")],
                            "Sign-ups this week: Friday's post did it"))
    plan = _done(bob.facade.attach("design", [release_plan(root / "release-plan.pdf")],
                                   "The release plan, as we agreed"))
    window.show_channel("design")

    def shown() -> bool:
        files = [f for m in window.messages.messages for f in m.files]
        return len(files) == 2 and all(f.complete for f in files)

    _must(shown, "the chart and the fetched PDF in #design")
    _done(ada.facade.run(lambda ws: ws.files.pin(plan, 0)))
    window.messages.reload()
    _must(lambda: any(f.pinned for m in window.messages.messages for f in m.files),
          "the PDF kept on ada's computer")


def _notification_settings(window: MainWindow, ada: Node) -> SettingsDialog:
    """Ada's Notifications page: #ideas muted until tomorrow, every message of #design,
    keywords, and evenings without notifications."""
    def settle(ws) -> None:
        notifying.set_level(ws, "ideas", "none", notifying.parse_until("08:00", time.time()))
        notifying.set_level(ws, "design", "all")
        notifying.set_keywords(ws, ["release", "on call"])
        notifying.set_schedule(ws, parse_schedule("22:00-08:00"))
    _done(ada.facade.run(settle))
    settings = window.show_settings()
    page = settings.findChild(QWidget, "settingsNotifications")
    settings.pages.setCurrentIndex(settings.pages.indexOf(page))
    levels = page.findChild(QListWidget, "notifyLevels")
    _must(lambda: levels.count() == 2 and "#design" in levels.item(0).text(),
          "the Notifications page's levels")
    settings.adjustSize()
    return settings


def render(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    emoji_font.install()
    theme.apply(app, "light")
    written: list[Path] = []
    collector = GuiThreadCollector(app)
    try:
        with tempfile.TemporaryDirectory() as tmp, RelayThread(Path(tmp) / "relay") as relay:
            ada, bob, carol, ids = _demo(Path(tmp))
            node = Node(ada, interfaces=["127.0.0.1"], mdns=False).start()
            peers = [("127.0.0.1", node.port)]
            third = Node(carol, interfaces=["127.0.0.1"], mdns=False, peers=peers).start()
            peer = Node(bob, interfaces=["127.0.0.1"], mdns=False, peers=peers).start()
            try:
                _done(peer.facade.run(lambda ws: ws.post(
                    "general", "Hi ada, bob here: your messages reached my laptop.")))
                _done(node.facade.run(lambda ws: relays.add_relay(
                    ws, f"127.0.0.1:{relay.port}", relay.server.key.hex())))
                _converse(node, peer, third, ids)
                _review(node, peer, third, ids["roadmap"])
                private, private_first = _private(node, peer, third)
                window = _window(node)
                _wait(lambda: len(window.messages.messages) >= 7
                      and window.peer_status.text().startswith("2 peers")
                      and any(m.replies == 3 for m in window.messages.messages)
                      and sum(len(m.reactions) for m in window.messages.messages) >= 3
                      and window.sidebar.dm_list.count() == 1)
                _wait(lambda: _done(third.run(lambda ws: relays.named(ws))))
                third.stop()  # carol's laptop goes home; bob's stays connected
                _wait(lambda: window.peer_status.text().startswith("1 peer"))
                # At home, carol's laptop reaches the office through the relay alone (the
                # office's addresses it remembers are out of reach there).
                (carol.workspace_dir / "peers.json").unlink(missing_ok=True)
                third = Node(carol, interfaces=["127.0.0.1"], mdns=False).start()
                _must(lambda: window.peer_status.text() == "2 peers connected (1 via relay)",
                      "carol reached through the relay")
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

                _syncing(window, node)
                _settle()
                _save(window, out / "syncing-history.png", written)
                _synced(window, node)

                window.private.open(private)
                _must(lambda: len(window.private.model.messages) == 2
                      and window.member_pane.list.count() == 2, "the private channel")
                _settle()
                _save(window, out / "private-channel.png", written)

                window.open_thread(private_first)
                _wait(lambda: len(window.thread_pane.model.messages) == 3
                      and len(window.private.model.messages[0].reactions) == 2)
                _settle()
                _save(window, out / "private-thread.png", written)
                window.thread_pane.close_thread()

                _files(window, node, peer, Path(tmp))
                _settle()
                _save(window, out / "attachment.png", written)

                window.show_channel("ideas")
                _settle()
                _save(window, out / "empty-channel.png", written)

                window.search_box.setText("release")
                window.header.searchRequested.emit("release")
                _wait(lambda: window.reading.currentWidget() is window.search_results)
                _settle()
                _save(window, out / "search.png", written)
                window.search_box.clear()
                window.show_channel("general")

                _wait(lambda: window.document_list.count() >= 2)
                pane = window.document_pane
                window.open_document(_document(window, "Release notes"))
                _wait(lambda: pane.history.count() >= 2 and "LAN" in pane.editor.toPlainText())
                # The Markdown rendered beside the editor and its comments: room for all three.
                pane.markdown.preview_button.setChecked(True)
                window.resize(WIDE, SIZE[1])
                _settle()
                _save(window, out / "documents.png", written)
                pane.markdown.preview_button.setChecked(False)
                window.resize(*SIZE)
                _documents(window, node, peer, ids["roadmap"], out, written)

                members = window.show_members()
                _must(lambda: [r.split(" · ")[0] for r in members.rows()]
                      == ["ada (you)", "bob", "carol"], "the three members")
                _must(lambda: all(members.remove_button(key) is not None
                                  for key in (peer.key, third.key)), "Remove… on bob and carol")
                _save(members, out / "members.png", written)
                members.close()
                invite = window.show_invite()
                invite.people.setValue(1)
                invite.expiry.setCurrentIndex(invite.expiry.findText("24 hours"))
                invite.create.click()
                _must(lambda: invite.code.text().startswith("hearth-")
                      and len(invite.rows()) == 1, "the new invite")
                _save(invite, out / "invite.png", written)
                invite.close()

                settings = window.show_settings()
                _wait(lambda: settings.nick.text() == "ada")
                settings.adjustSize()
                _save(settings, out / "settings.png", written)
                settings.pages.setCurrentIndex(settings.pages.indexOf(
                    settings.findChild(QWidget, "settingsPrivacy")))
                _save(settings, out / "settings-privacy.png", written)
                settings.pages.setCurrentWidget(settings.relays)
                settings.relays.refresh()
                _wait(lambda: "connected" in settings.relays.list.item(0).text())
                _save(settings, out / "settings-relays.png", written)
                data = settings.findChild(DataPage, "settingsData")
                settings.pages.setCurrentWidget(data)
                data.set_daily(Path(tmp) / "backups", "a demo passphrase")  # writes the first
                _must(lambda: "the last: none" not in data.daily_label.text()
                      and data.status.text().startswith("daily backup written"),
                      "the daily backup")
                _save(settings, out / "settings-data.png", written)
                settings.close()
                settings = _notification_settings(window, node)
                _save(settings, out / "settings-notifications.png", written)
                settings.close()
                dialog = window.show_peers()
                _wait(lambda: any("through the relays: carol" in dialog.list.item(i).text()
                                  for i in range(dialog.list.count())))
                dialog.resize(620, 320)
                _save(dialog, out / "peers.png", written)
                dialog.close()

                window.show_channel(import_demo(node, Path(tmp)))
                _must(lambda: len(window.messages.messages) == 4 and not any(
                    window.messages.row(n)[4] for n in range(4)), "the imported channel, sent")
                _settle()
                _save(window, out / "slack-import.png", written)
                window.close()

                welcome = _window(node, first_run=True)
                _wait(lambda: welcome.first_run.nick.text() == "ada"
                      and len(welcome.messages.messages) >= 7)
                _settle()
                _save(welcome, out / "welcome.png", written)
                welcome.close()
            finally:
                peer.stop()
                third.stop()
                node.stop()
        app.processEvents()
    finally:
        collector.stop()
    return written
