"""The window of a removed member (issue #28, item 7), over real Nodes, offscreen: once bob's
computer holds the signed removal, his window shows who removed him, when and why, keeps the
channel readable, and turns composing off. Before, it kept showing the workspace and his posts
sat at "sending…" forever."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from tests.support import node_post  # noqa: E402
from tests.ui.support import WAIT_MS, result, texts  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402


def test_a_removed_members_window_says_who_when_and_why_and_stops_composing(
        qtbot, pair):
    node_a, node_b = pair
    node_post(node_a, "general", "before the removal")
    win = MainWindow(node_b)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitUntil(lambda: "before the removal" in texts(win), timeout=WAIT_MS)
    assert win.removed_banner.isHidden() and win.composer.isEnabled()

    result(node_a.facade.remove_member(node_b.key, "left the team"))
    qtbot.waitUntil(lambda: win.removed_banner.isVisible(), timeout=WAIT_MS)
    text = win.removed_banner.text()
    assert text.startswith(f"You were removed from this workspace by ada ({node_a.key.hex()[:8]})")
    assert ": left the team." in text
    assert not win.composer.isEnabled() and not win.attach_button.isEnabled()
    assert "before the removal" in texts(win)  # still readable
    removal = result(win.facade.removal())
    assert (removal.by, removal.nick, removal.reason) == (node_a.key, "ada", "left the team")
    win.close()


def test_after_the_removal_the_window_keeps_saying_so_and_names_the_dm_after_bob(
        qtbot, pair):
    """Two lies the window model found (issue #29): switching channel put "Message #random"
    back in a removed member's closed composer, and ada's direct message with the removed bob
    was listed under her own name."""
    node_a, node_b = pair
    result(node_a.facade.run(lambda ws: ws.create_channel("random", public=True).id))
    dm = result(node_a.facade.run(lambda ws: ws.private.create("", [node_b.key], dm=True)))
    ada, bob = MainWindow(node_a), MainWindow(node_b)
    for win in (ada, bob):
        qtbot.addWidget(win)
        win.show()
    qtbot.waitUntil(lambda: "random" in [c.name for c in bob.channels.channels],
                    timeout=WAIT_MS)
    result(node_a.facade.remove_member(node_b.key, "left the team"))
    qtbot.waitUntil(lambda: bob.removed_banner.isVisible(), timeout=WAIT_MS)
    bob.show_channel("random")
    assert bob.composer.placeholderText() == "You were removed from this workspace"
    assert not bob.composer.isEnabled()
    qtbot.waitUntil(lambda: ada.sidebar.unread_shown().get(dm) == "bob", timeout=WAIT_MS)
    for win in (ada, bob):
        win.close()
