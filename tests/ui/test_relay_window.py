"""The window with a relay (ui/relay_settings.py, the status bar, the peers dialog): an admin
adds a relay in Settings, a member on another network is then reached through it alone, and
what the status bar and the peers dialog say is what the Node reaches."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from app import relays  # noqa: E402
from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.relay_thread import RelayThread  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from tests.support import join, node_channels  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402

WAIT_MS = 20_000


def test_an_admin_adds_a_relay_and_a_member_elsewhere_is_reached_through_it(qtbot, tmp_path):
    a = Paths.resolve(tmp_path / "a", "default")
    b = Paths.resolve(tmp_path / "b", "default")
    Workspace.init(a, "ada").close()
    join(a, b, nick="bob")
    with RelayThread(tmp_path / "relay") as relay:
        node_a = Node(a, interfaces=["127.0.0.1"], mdns=False).start()
        node_b = Node(b, interfaces=["127.0.0.1"], mdns=False).start()  # no route to ada
        window = MainWindow(node_a)
        qtbot.addWidget(window)
        window.show()
        try:
            node_channels(node_a, "general")
            qtbot.waitUntil(lambda: window.peer_status.text() == "no peers connected",
                            timeout=WAIT_MS)
            settings = window.show_settings()
            page = settings.relays
            qtbot.waitUntil(lambda: page.add.isEnabled(), timeout=WAIT_MS)  # ada is an admin
            page.address.setText(f"127.0.0.1:{relay.port}")
            page.key.setText("12ab")  # a typo: refused, nothing named
            page.add.click()
            qtbot.waitUntil(lambda: "hex digits" in page.error.text(), timeout=WAIT_MS)
            page.key.setText(relay.server.key.hex())
            page.add.click()
            qtbot.waitUntil(lambda: page.list.count() == 1
                            and page.list.item(0).data(256) == relay.server.key.hex(),
                            timeout=WAIT_MS)
            # bob's computer learns the relay by... nothing yet: it shares no network with ada.
            # His code would have named it; here he is told it as a code would.
            relays.remember_from_code(b.workspace_dir, [relay.address])
            qtbot.waitUntil(lambda: window.peer_status.text() == "1 peer connected via relay",
                            timeout=WAIT_MS)
            assert node_b.key in window._online
            assert f"relay 127.0.0.1:{relay.port} · connected" in window.peer_status.toolTip()
            page.refresh()
            qtbot.waitUntil(lambda: "connected" in page.list.item(0).text(), timeout=WAIT_MS)
            settings.close()

            dialog = window.show_peers()
            rows = lambda: [dialog.list.item(i).text() for i in range(dialog.list.count())]  # noqa: E731
            qtbot.waitUntil(lambda: any("through the relays: bob" in r for r in rows()),
                            timeout=WAIT_MS)
            assert any(r.startswith("●  relay 127.0.0.1:") for r in rows()), rows()
            dialog.close()

            page = window.show_settings().relays
            qtbot.waitUntil(lambda: page.list.count() == 1 and bool(page.list.item(0).data(256)),
                            timeout=WAIT_MS)
            page.list.setCurrentRow(0)
            assert page.remove.isEnabled()
            page.remove.click()
            qtbot.waitUntil(lambda: page.list.item(0).data(256) is None, timeout=WAIT_MS)
        finally:
            window.close()
            node_b.stop()
            node_a.stop()


def test_a_member_who_is_not_an_admin_sees_the_relays_but_cannot_change_them(qtbot, tmp_path):
    a = Paths.resolve(tmp_path / "a", "default")
    b = Paths.resolve(tmp_path / "b", "default")
    Workspace.init(a, "ada").close()
    join(a, b, nick="bob")
    node_b = Node(b, interfaces=["127.0.0.1"], mdns=False).start()
    window = MainWindow(node_b)
    qtbot.addWidget(window)
    try:
        page = window.show_settings().relays
        qtbot.waitUntil(lambda: page.admin_note.text() == "Only admins add or remove relays.",
                        timeout=WAIT_MS)
        assert not page.add.isEnabled() and not page.remove.isEnabled()
    finally:
        window.close()
        node_b.stop()
