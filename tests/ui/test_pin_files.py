"""Keeping someone else's file on this computer from the window (issue #19), over real Nodes on
127.0.0.1, offscreen: the message menu's "Keep on this computer" pins the file in the replica
(the storage quota then never evicts it) and its card says "Kept here"; "Let storage limits
remove it" undoes both; a message of several files offers each by name; my own uploads are
always kept, so their menu has no such entry."""

from __future__ import annotations

import dataclasses
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from app.records import Attachment, Message  # noqa: E402
from tests.support import node_post  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.file_boxes import file_tip, kept_label  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402

from .test_attachments_window import row_parts, with_files  # noqa: E402


def message_of(win: MainWindow, message_id: bytes) -> Message:
    return next(m for m in win.messages.messages if m.id == message_id)


def menu_of(win: MainWindow, message_id: bytes):
    row_parts(win, message_id)  # scrolled into sight, as a right click would need
    return win.message_view.context_menu(win.messages.index(win.messages.row_of(message_id)))


def entries(win: MainWindow, message_id: bytes) -> list[tuple[str, str]]:
    """The menu's keep entries: (object name, what it says)."""
    return [(a.objectName(), a.text()) for a in menu_of(win, message_id).actions()
            if a.objectName() in ("pinFile", "unpinFile")]


def choose(qtbot, win: MainWindow, message_id: bytes, text: str) -> None:
    """Pick a menu entry by what it says, and wait until the facade has done it."""
    action = next(a for a in menu_of(win, message_id).actions() if a.text() == text)
    with qtbot.waitSignal(win.attachments.pinned, timeout=WAIT_MS):
        action.trigger()


def card_says(win: MainWindow, file: Attachment) -> str:
    return win.message_view.delegate.files.card_detail(file)


def arrived(qtbot, win: MainWindow, message_id: bytes, count: int = 1) -> None:
    qtbot.waitUntil(lambda: any(m.id == message_id and len(m.files) == count
                                and all(f.complete for f in m.files)
                                for m in with_files(win)), timeout=WAIT_MS)


def test_keeping_a_peers_file_pins_it_and_its_card_says_so(
        qtbot, window, pair, tmp_path):
    node_a, node_b = pair
    (tmp_path / "handbook.pdf").write_bytes(os.urandom(300_000))
    sent = result(node_b.facade.attach("general", [tmp_path / "handbook.pdf"], "the handbook"))
    arrived(qtbot, window, sent)
    handbook = message_of(window, sent).files[0]
    assert not handbook.pinned and not handbook.mine
    assert card_says(window, handbook) == "300 KB · PDF"
    assert result(node_a.facade.run(lambda ws: ws.files.usage())).pinned == 0
    assert entries(window, sent) == [("pinFile", "Keep on this computer")]

    choose(qtbot, window, sent, "Keep on this computer")
    usage = result(node_a.facade.run(lambda ws: ws.files.usage()))
    assert usage.pinned >= 300_000 and usage.others == 0
    assert "handbook.pdf is kept" in window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: message_of(window, sent).files[0].pinned, timeout=WAIT_MS)
    kept = message_of(window, sent).files[0]
    assert card_says(window, kept) == "300 KB · PDF · Kept here"
    assert "Kept on this computer" in file_tip(kept, "open")
    parts = row_parts(window, sent)
    assert [a for _, _, a in parts.file_actions] == ["save", "open"]  # the buttons stay
    assert entries(window, sent) == [("unpinFile", "Let storage limits remove it")]
    # The quota leaves it be: what the person relies on.
    result(node_a.facade.run(lambda ws: ws.files.set_preferences(storage_quota_mb=0)))
    assert result(node_a.facade.run(lambda ws: ws.files.usage())).pinned == usage.pinned

    choose(qtbot, window, sent, "Let storage limits remove it")
    assert result(node_a.facade.run(lambda ws: ws.files.usage())).pinned == 0
    qtbot.waitUntil(lambda: not message_of(window, sent).files[0].pinned, timeout=WAIT_MS)
    assert card_says(window, message_of(window, sent).files[0]) == "300 KB · PDF"
    assert entries(window, sent) == [("pinFile", "Keep on this computer")]
    result(node_a.facade.run(lambda ws: ws.files.set_preferences(storage_quota_mb=0)))  # now it may go
    assert result(node_a.facade.run(lambda ws: ws.files.usage())).total == 0


def test_each_of_several_files_is_kept_by_name_and_the_quota_takes_only_the_other(
        qtbot, window, pair, tmp_path):
    node_a, node_b = pair
    (tmp_path / "budget & plan.xlsx").write_bytes(os.urandom(200_000))
    (tmp_path / "notes.txt").write_bytes(b"minutes\n" * 5000)
    sent = result(node_b.facade.attach(
        "general", [tmp_path / "budget & plan.xlsx", tmp_path / "notes.txt"], "for friday"))
    arrived(qtbot, window, sent, 2)
    assert entries(window, sent) == [("pinFile", "Keep budget && plan.xlsx on this computer"),
                                     ("pinFile", "Keep notes.txt on this computer")]
    choose(qtbot, window, sent, "Keep budget && plan.xlsx on this computer")
    qtbot.waitUntil(lambda: message_of(window, sent).files[0].pinned, timeout=WAIT_MS)
    budget, notes = message_of(window, sent).files
    assert not notes.pinned
    assert card_says(window, budget).endswith("Kept here")
    assert "Kept" not in card_says(window, notes)
    assert entries(window, sent) == [
        ("unpinFile", "Let storage limits remove budget && plan.xlsx"),
        ("pinFile", "Keep notes.txt on this computer")]
    result(node_a.facade.run(lambda ws: ws.files.set_preferences(storage_quota_mb=0)))
    window.messages.reload()
    qtbot.waitUntil(lambda: not message_of(window, sent).files[1].complete, timeout=WAIT_MS)
    budget, notes = message_of(window, sent).files
    assert budget.complete and budget.pinned  # kept; the other one went
    # A file not here, kept: it is fetched again, and stays whatever the quota.
    assert card_says(window, notes) == "40.0 KB · TXT"
    choose(qtbot, window, sent, "Keep notes.txt on this computer")
    qtbot.waitUntil(lambda: message_of(window, sent).files[1].complete, timeout=WAIT_MS)
    notes = message_of(window, sent).files[1]
    assert notes.pinned and card_says(window, notes) == "40.0 KB · TXT · Kept here"
    assert result(node_a.facade.run(lambda ws: ws.files.usage())).others == 0  # both kept, none evictable
    # Had the fetch failed, the card would say that it stays once it comes.
    assert kept_label(dataclasses.replace(notes, complete=False)) == "Kept here once downloaded"


def test_my_own_uploads_have_no_keep_entry(qtbot, window, pair, tmp_path):
    node_a, node_b = pair
    (tmp_path / "mine.pdf").write_bytes(os.urandom(50_000))
    (tmp_path / "theirs.pdf").write_bytes(os.urandom(50_000))
    mine = result(node_a.facade.attach("general", [tmp_path / "mine.pdf"], "my report"))
    theirs = result(node_b.facade.attach("general", [tmp_path / "theirs.pdf"], "bob's"))
    arrived(qtbot, window, mine)
    arrived(qtbot, window, theirs)
    assert entries(window, mine) == []
    texts = [a.text() for a in menu_of(window, mine).actions()]
    assert not any("Keep" in t or "storage" in t for t in texts)
    assert "Kept" not in card_says(window, message_of(window, mine).files[0])  # always kept
    assert entries(window, theirs) == [("pinFile", "Keep on this computer")]
    # A message of text alone has none either.
    node_post(node_b, "general", "just words")
    qtbot.waitUntil(lambda: any(m.text == "just words" for m in window.messages.messages),
                    timeout=WAIT_MS)
    words = next(m for m in window.messages.messages if m.text == "just words")
    assert entries(window, words.id) == []
