"""Notifications end to end, with no window: bob's messages reach alice's Node over a real
session, her NotificationWatch decides, and desktop-notifier hands what notifies to a
notification service on a real session D-Bus the test started (tests/notify_support.py). What
the service records is what a person would have seen."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future

import pytest

from app import notify_settings
from app.desktop_notify import SERVICE, DesktopNotifications
from app.notify_rules import Alert, conversation_key
from app.notify_watch import NotificationWatch
from tests.notify_support import NotificationServer, notification_service, session_bus  # noqa: F401
from tests.support import TwoNodes, node_call, node_post, wait_until

WAIT_S = 10.0


class Raised:
    """What alice's watch handed to desktop-notifier, each send's future kept."""

    def __init__(self, desktop: DesktopNotifications):
        self.desktop = desktop
        self.sends: list[Future] = []

    def __call__(self, alert: Alert) -> None:  # the Node's thread
        self.sends.append(self.desktop.send(alert))


@pytest.fixture
def alerts(two_nodes: TwoNodes, notification_service: NotificationServer,  # noqa: F811
           ) -> Iterator[tuple[NotificationWatch, Raised]]:
    """alice's watch, its alerts raised through desktop-notifier on the test's bus."""
    raised = Raised(DesktopNotifications())
    node = two_nodes.a
    watch = NotificationWatch(node.facade, two_nodes.pa.data, node.workspace_id, raised)
    yield watch, raised
    watch.close()
    raised.desktop.close()


def _settled(watch: NotificationWatch, raised: Raised, decided: int) -> None:
    """Once the watch has decided on `decided` messages and every send has been answered by
    the service, what the service recorded is all there will be."""
    wait_until(lambda: watch.decided >= decided, what=f"{decided} messages decided")
    for sent in list(raised.sends):
        assert sent.result(WAIT_S) is True


def _channel(two_nodes: TwoNodes, name: str) -> None:
    node_call(two_nodes.b, lambda: two_nodes.b.workspace.create_channel(name, public=True))


def test_the_service_is_found(alerts):
    _, raised = alerts
    assert raised.desktop.find_service().result(WAIT_S) == SERVICE


def test_no_service_on_the_bus_is_said(session_bus):  # noqa: F811
    desktop = DesktopNotifications()
    try:
        assert desktop.find_service().result(WAIT_S) is None
        assert desktop.send(Alert("t", "b", "message")).result(WAIT_S) is False
    finally:
        desktop.close()


def test_a_muted_channel_raises_nothing_but_a_mention_in_it_does(
        two_nodes, alerts, notification_service):  # noqa: F811
    _channel(two_nodes, "random")
    pa = two_nodes.pa
    ws_id = two_nodes.a.workspace_id
    notify_settings.set_level(pa.data, ws_id, conversation_key("random"), "none")
    notify_settings.set_level(pa.data, ws_id, conversation_key("general"), "all")
    node_post(two_nodes.b, "random", "lunch is ready")  # muted: nothing
    node_post(two_nodes.b, "general", "the build is green")  # every message: one
    node_post(two_nodes.b, "random", "alice, can you look at this?")  # a mention: one
    _settled(*alerts, 3)
    calls = notification_service.calls
    assert sorted((c.summary, c.body) for c in calls) == [  # channels may arrive in any order
        ("bob in #general", "the build is green"),
        ("bob mentioned you in #random", "alice, can you look at this?")]
    assert calls[0].app == "Hearth" and "default" in calls[0].actions  # a click opens it


def test_a_keyword_alert_fires_and_text_can_be_hidden(two_nodes, alerts,
                                                      notification_service):  # noqa: F811
    pa, ws_id = two_nodes.pa, two_nodes.a.workspace_id
    notify_settings.save(pa.data, ws_id, keywords=["deploy", "on call"], show_text=False)
    node_post(two_nodes.b, "general", "nothing to see")  # mentions only: nothing
    node_post(two_nodes.b, "general", "who is On Call tonight?")
    _settled(*alerts, 2)
    calls = notification_service.calls
    assert [(c.summary, c.body) for c in calls] == [
        ("bob in #general", "A message with one of your keywords")]


def test_a_peers_text_can_neither_mark_up_nor_reorder_a_notification(
        two_nodes, alerts, notification_service):  # noqa: F811
    node_post(two_nodes.b, "general",
              "alice: <a href='http://x.example'>win</a> &amp; <img src=x> \u202egnp.exe")
    _settled(*alerts, 1)
    notified, = notification_service.calls
    assert not set("<>&\u202e") & set(notified.body + notified.summary)
    assert notified.body == ("alice: \u2039a href='http://x.example'\u203awin\u2039/a\u203a "
                             "\uff06amp; \u2039img src=x\u203a \\u202egnp.exe")


def test_nothing_fires_during_do_not_disturb_and_the_missed_are_counted_after(
        two_nodes, alerts, notification_service):  # noqa: F811
    watch, _ = alerts
    pa, ws_id = two_nodes.pa, two_nodes.a.workspace_id
    notify_settings.save(pa.data, ws_id, paused=True)
    node_post(two_nodes.b, "general", "alice: one")
    node_post(two_nodes.b, "general", "alice: two")
    wait_until(lambda: watch.missed == 2, what="two held back")
    watch.check().result(WAIT_S)
    assert watch.missed == 2  # still on: still held
    notify_settings.save(pa.data, ws_id, paused=False)
    watch.check().result(WAIT_S)
    calls = notification_service.wait_for(1)
    assert [(c.summary, c.body) for c in calls] == [
        ("Do not disturb is over", "2 notifications held back while it was on")]
    assert watch.missed == 0


def test_a_click_reaches_the_caller_with_the_message(two_nodes, notification_service):  # noqa: F811
    clicked: list[Alert] = []
    raised = Raised(DesktopNotifications(on_clicked=clicked.append))
    node = two_nodes.a
    watch = NotificationWatch(node.facade, two_nodes.pa.data, node.workspace_id, raised)
    try:
        posted = node_post(two_nodes.b, "general", "alice: look")
        _settled(watch, raised, 1)  # a click comes once it is shown
        notified, = notification_service.calls
        notification_service.click(notified)
        wait_until(lambda: clicked, what="the click")
        assert clicked[0].channel == "general" and clicked[0].message == posted
    finally:
        watch.close()
        raised.desktop.close()


def test_serve_notify_prints_and_raises_the_same_notifications(
        hearth, tmp_path, notification_service, session_bus):  # noqa: F811
    from tests.app.test_sync_cli import member_folders, serving

    a, b = member_folders(tmp_path)
    hearth.env["DBUS_SESSION_BUS_ADDRESS"] = session_bus
    hearth("notify", "general", "--none", data=a)  # muted: only the mention notifies
    with serving(hearth, a, "--notify") as serve_a:
        hearth("post", "general", "lunch?", data=b)
        hearth("post", "general", "alice: are you there?", data=b)
        hearth("sync", "--peer", serve_a.address, "--once", data=b)
        notified, = notification_service.wait_for(1)
        wait_until(lambda: "bob mentioned you in #general: alice: are you there?"
                   in serve_a.out.read_text(), what="the printed notification")
        assert serve_a.terminate() == 0
    assert (notified.summary, notified.body) == ("bob mentioned you in #general",
                                                 "alice: are you there?")
    out = serve_a.out.read_text()
    assert "notifications: through the desktop's notification service" in out
    assert "lunch?" not in out
