"""Private channels and direct messages in the window (issue #18) over real Nodes, offscreen:
ada makes one with bob in the dialog, both sidebars list it with a lock, what ada writes in the
composer reaches bob's window, carol (a member outside it) lists nothing though her computer
holds its ciphertext, bob's direct message shows under ada's Direct messages by his name, a private message has
reactions, a thread and edits as a public one (issue #32), and nothing offered on a private
message could post a public object about it."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from tests.support import node_call, node_post  # noqa: E402
from tests.ui.support import WAIT_MS, result, type_and_send  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.private_dialog import NewPrivateChannelDialog  # noqa: E402
from ui.sidebar import NameRole  # noqa: E402


@pytest.fixture
def window_c(qtbot, node_c):
    """carol's window: a member of the workspace, in no private channel."""
    win = MainWindow(node_c)
    qtbot.addWidget(win)
    win.show()
    yield win
    win.close()


def listed(rows) -> list[str]:
    """The names a sidebar list shows (without the unread badge after them)."""
    return [rows.item(i).data(NameRole) for i in range(rows.count())]


def shown(win: MainWindow) -> list[str]:
    return [m.text for m in win.private.model.messages]


def make_channel(qtbot, win: MainWindow, name: str, members: list[str]) -> bytes:
    """Through "New private channel…": a name, members ticked, Create."""
    win.sidebar.findChild(type(win.sidebar.mentions), "newPrivateChannel").click()
    dialog = win.findChild(NewPrivateChannelDialog)
    assert dialog is not None and dialog.isVisible()
    qtbot.waitUntil(lambda: set(members) <= set(dialog.members.names()), timeout=WAIT_MS)
    assert not dialog.ok.isEnabled()  # a name first
    qtbot.keyClicks(dialog.name, name)
    for member in members:
        dialog.members.tick(member)
    with qtbot.waitSignal(dialog.created, timeout=WAIT_MS) as created:
        dialog.ok.click()
    return created.args[0]


def has_rows(win: MainWindow, *names: str) -> bool:
    """The member pane shows exactly these people (rows start with their names)."""
    rows = win.member_pane.list
    texts = [rows.item(i).text() for i in range(rows.count())]
    return len(texts) == len(names) and all(
        any(t.startswith(name) for t in texts) for name in names)


def member_action(win: MainWindow, name: str, text: str):
    """The action `text` of `name`'s row in the member pane's menu (None: not offered)."""
    rows = win.member_pane.list
    item = next(rows.item(i) for i in range(rows.count())
                if rows.item(i).text().startswith(name))
    menu = win.member_pane.context_menu(item)
    return next((a for a in menu.actions() if a.text() == text), None) if menu else None


def test_a_private_channel_made_in_the_dialog_reaches_its_members_only(
        qtbot, window, window_b, window_c, pair, node_c):
    node_a, node_b = pair
    qtbot.waitUntil(lambda: window_c.peer_status.text().startswith("1 peer"), timeout=WAIT_MS)
    channel = make_channel(qtbot, window, "launch", ["bob"])

    # ada's window opens it: a lock in the sidebar and the header, its members beside it.
    qtbot.waitUntil(lambda: window.private.channel_id == channel, timeout=WAIT_MS)
    assert listed(window.sidebar.private_list) == ["launch"]
    assert not window.sidebar.private_list.item(0).icon().isNull()
    assert window.reading.currentWidget() is window.private
    assert window.header.title.text() == "launch" and window.header.lock.isVisible()
    assert window.header.private_line == "Private · ada, bob"
    assert window.channel_list.selectedIndexes() == []
    qtbot.waitUntil(lambda: window.member_pane.list.count() == 2, timeout=WAIT_MS)
    assert window.member_pane.add_people.isVisible()  # the creator may add people

    type_and_send(qtbot, window, "launch on friday, keep it quiet")
    qtbot.waitUntil(lambda: shown(window) == ["launch on friday, keep it quiet"],
                    timeout=WAIT_MS)
    assert window.composer.toPlainText() == ""

    # bob's sidebar lists it after sync, with the lock; clicking it shows ada's message.
    qtbot.waitUntil(lambda: listed(window_b.sidebar.private_list) == ["launch"],
                    timeout=WAIT_MS)
    item = window_b.sidebar.private_list.item(0)
    assert not item.icon().isNull()
    window_b.sidebar.private_list.itemClicked.emit(item)
    qtbot.waitUntil(lambda: shown(window_b) == ["launch on friday, keep it quiet"],
                    timeout=WAIT_MS)
    assert window_b.header.private_line == "Private · ada, bob"
    assert not window_b.member_pane.add_people.isVisible()  # neither its creator nor an admin

    # The library agrees, and nothing of it is in a public channel.
    for node in (node_a, node_b):
        assert [m.text for m in result(node.facade.run(lambda ws: ws.private.read(channel)))] == \
            ["launch on friday, keep it quiet"]
        assert "launch on friday, keep it quiet" not in \
            [m.text for m in result(node.facade.run(lambda ws: ws.read("general")))]

    # carol's computer holds the channel (as ciphertext) but her window lists nothing of it.
    qtbot.waitUntil(lambda: node_call(node_c,
        lambda: len(node_c.workspace.replica.private.objects(channel)) >= 5),
        timeout=WAIT_MS)
    with qtbot.waitSignal(window_c.private.listed, timeout=WAIT_MS):
        window_c.private.refresh()
    assert listed(window_c.sidebar.private_list) == []
    assert listed(window_c.sidebar.dm_list) == []
    assert result(node_c.facade.run(lambda ws: ws.private.channels())) == []


def test_a_direct_message_shows_under_direct_messages_by_the_senders_name(
        qtbot, window, window_b, pair):
    node_a, node_b = pair
    # bob messages ada from the member pane of a channel they share.
    result(node_a.facade.run(lambda ws: ws.join("general").id))
    window_b.show_channel("general")
    qtbot.waitUntil(lambda: any(window_b.member_pane.list.item(i).text().startswith("ada")
                                for i in range(window_b.member_pane.list.count())),
                    timeout=WAIT_MS)
    action = member_action(window_b, "ada", "Message ada…")
    assert action is not None
    action.trigger()
    qtbot.waitUntil(lambda: window_b.private.dm_to is not None, timeout=WAIT_MS)
    assert window_b.header.title.text() == "ada"
    assert window_b.private.view.empty_state.isVisible()
    type_and_send(qtbot, window_b, "psst, ada: lunch?")

    # bob's window moves to the direct messages now made; ada's lists them by bob's name.
    qtbot.waitUntil(lambda: listed(window_b.sidebar.dm_list) == ["ada"]
                    and shown(window_b) == ["psst, ada: lunch?"], timeout=WAIT_MS)
    qtbot.waitUntil(lambda: listed(window.sidebar.dm_list) == ["bob"], timeout=WAIT_MS)
    assert listed(window.sidebar.private_list) == []  # not among the channels
    window.sidebar.dm_list.itemClicked.emit(window.sidebar.dm_list.item(0))
    qtbot.waitUntil(lambda: shown(window) == ["psst, ada: lunch?"], timeout=WAIT_MS)
    assert window.header.title.text() == "bob"
    assert window.header.private_line == "Private · bob, ada"  # who started them first
    assert not window.member_pane.add_people.isVisible()  # two people, always

    # The reply goes into the same direct messages, not a second pair.
    type_and_send(qtbot, window, "12:30?")
    qtbot.waitUntil(lambda: shown(window_b) == ["psst, ada: lunch?", "12:30?"],
                    timeout=WAIT_MS)
    channel = result(node_a.facade.run(lambda ws: ws.private.dm_channel(node_b.key)))
    assert channel is not None and channel == result(node_b.facade.run(lambda ws: ws.private.dm_channel(node_a.key)))
    assert [m.text for m in result(node_a.facade.run(lambda ws: ws.private.read(channel)))] == \
        ["psst, ada: lunch?", "12:30?"]
    assert len(result(node_a.facade.run(lambda ws: ws.private.channels()))) == 1


def test_a_private_message_has_threads_reactions_and_edits_but_nothing_public(
        qtbot, window, window_b, pair):
    """The same menu as a public message's but moderation (a public object); a reaction, a
    reply in the thread pane and an edit made in ada's window reach bob's."""
    node_a, node_b = pair
    # A public message of mine, which Up would edit in #general.
    node_post(node_a, "general", "hello everyone")
    qtbot.waitUntil(lambda: [m.text for m in window.messages.messages] == ["hello everyone"],
                    timeout=WAIT_MS)
    channel = result(node_a.facade.run(lambda ws: ws.private.create("plans", [node_b.key])))
    window.private.open(channel)
    qtbot.waitUntil(lambda: window.private.channel_id == channel, timeout=WAIT_MS)
    type_and_send(qtbot, window, "the secret plan")
    qtbot.waitUntil(lambda: shown(window) == ["the secret plan"], timeout=WAIT_MS)

    view = window.private.view
    menu = view.context_menu(window.private.model.index(0))
    entries = [a.text() for a in menu.actions() if not a.isSeparator()]
    assert entries == ["Copy text", "Reply in thread", "Add reaction…", "Edit", "Delete"]
    first = window.private.model.messages[0]
    window.private.actions.toggle_reaction(first.id, "🎉")
    qtbot.waitUntil(lambda: [r.emoji for r in window.private.model.messages[0].reactions]
                    == ["🎉"], timeout=WAIT_MS)
    view.replyRequested.emit(first.id)
    qtbot.waitUntil(lambda: window.thread_pane.isVisible()
                    and len(window.thread_pane.model.messages) == 1, timeout=WAIT_MS)
    assert window.thread_pane.where.text() == "plans"
    window.thread_pane.composer.setPlainText("a reply in private")
    window.thread_pane.reply("a reply in private")
    qtbot.waitUntil(lambda: [m.text for m in window.thread_pane.model.messages]
                    == ["the secret plan", "a reply in private"], timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.private.model.messages[0].replies == 1, timeout=WAIT_MS)
    window.thread_pane.close_thread()
    window.private.actions.begin_edit(window.private.model.messages[0])
    window.composer.setPlainText("the secret plan, moved")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: shown(window) == ["the secret plan, moved"], timeout=WAIT_MS)
    assert window.private.model.messages[0].edited
    window_b.private.open(channel)
    qtbot.waitUntil(lambda: [(m.text, m.replies, [r.emoji for r in m.reactions])
                             for m in window_b.private.model.messages]
                    == [("the secret plan, moved", 1, ["🎉"])], timeout=WAIT_MS)
    assert result(node_a.facade.run(lambda ws: ws.read("general")))[0].text == "hello everyone"

    # Up in the empty composer edits my last message here (not my last in #general).
    type_and_send(qtbot, window, "sent lsat")
    qtbot.waitUntil(lambda: shown(window)[-1:] == ["sent lsat"], timeout=WAIT_MS)
    qtbot.keyClick(window.composer, Qt.Key.Key_Up)
    assert window.composer.editing() == window.private.model.messages[-1].id
    assert window.composer.toPlainText() == "sent lsat"
    window.composer.setPlainText("sent last")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: shown(window)[-1:] == ["sent last"], timeout=WAIT_MS)
    assert window.composer.editing() is None and window.private.model.messages[-1].edited

    # A command is refused in words.
    type_and_send(qtbot, window, "/topic our secret plans")
    qtbot.waitUntil(lambda: "not available in private channels yet"
                    in window.statusBar().currentMessage(), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.composer.toPlainText() == "/topic our secret plans",
                    timeout=WAIT_MS)  # given back
    window.composer.clear()
    type_and_send(qtbot, window, "/me whispers")
    qtbot.waitUntil(lambda: shown(window) == ["the secret plan, moved", "sent last",
                                              "/me whispers"], timeout=WAIT_MS)
    assert [m.text for m in result(node_a.facade.run(lambda ws: ws.private.read(channel)))] == \
        ["the secret plan, moved", "sent last", "/me whispers"]
    state = result(node_a.facade.run(lambda ws: ws.state("general")))
    assert state.topic != "our secret plans"
    assert [m.text for m in result(node_a.facade.run(lambda ws: ws.read("general")))] == ["hello everyone"]


def test_the_creator_takes_someone_out_and_their_window_closes_it(
        qtbot, window, window_b, pair):
    node_a, node_b = pair
    channel = result(node_a.facade.run(lambda ws: ws.private.create("ops", [node_b.key])))
    qtbot.waitUntil(lambda: listed(window_b.sidebar.private_list) == ["ops"], timeout=WAIT_MS)
    window_b.sidebar.private_list.itemClicked.emit(window_b.sidebar.private_list.item(0))
    qtbot.waitUntil(lambda: window_b.private.channel_id == channel, timeout=WAIT_MS)
    # bob may not take ada out: no such entry for him.
    qtbot.waitUntil(lambda: has_rows(window_b, "ada", "bob"), timeout=WAIT_MS)
    assert member_action(window_b, "ada", "Remove ada from ops…") is None

    window.private.open(channel)
    qtbot.waitUntil(lambda: window.private.channel_id == channel
                    and has_rows(window, "ada", "bob"), timeout=WAIT_MS)
    action = member_action(window, "bob", "Remove bob from ops…")
    assert action is not None
    action.trigger()
    box = window.findChild(QMessageBox, "confirmPrivateRemove")
    assert box is not None and box.text() == "Take bob out of ops?"
    next(b for b in box.buttons() if b.text() == "Remove").click()

    qtbot.waitUntil(lambda: window.header.private_line == "Private · ada", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: listed(window_b.sidebar.private_list) == []
                    and not window_b.private.is_open, timeout=WAIT_MS)
    assert window_b.reading.currentWidget() is window_b.message_view
    assert "no longer in ops" in window_b.statusBar().currentMessage()


def test_search_and_mentions_find_a_private_message_and_open_it(qtbot, window, pair):
    """Search over what ada's computer opened, and her Mentions, list bob's direct message;
    choosing it opens the direct messages with it selected."""
    node_a, node_b = pair
    result(node_a.facade.run(lambda ws: ws.nick("ada")))
    sent = result(node_b.facade.run(
        lambda ws: ws.private.direct_message(node_a.key, "@ada the zephyr numbers")))
    qtbot.waitUntil(lambda: len(result(node_a.facade.run(lambda ws: ws.private.channels())))
                    == 1, timeout=WAIT_MS)
    window.search.run("zephyr")
    qtbot.waitUntil(lambda: window.search_results.results is not None
                    and [m.id for m in window.search_results.results.messages] == [sent.id],
                    timeout=WAIT_MS)
    window.search.show_mentions()
    qtbot.waitUntil(lambda: window.search_results.results is not None
                    and [m.id for m in window.search_results.results.messages] == [sent.id],
                    timeout=WAIT_MS)
    window.search_results.messageChosen.emit(window.search_results.results.messages[0])
    qtbot.waitUntil(lambda: window.private.channel_id == sent.stream
                    and window.private.view.currentIndex().isValid(), timeout=WAIT_MS)
    assert window.private.model.messages[window.private.view.currentIndex().row()].id == sent.id
