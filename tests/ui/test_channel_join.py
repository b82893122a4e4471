"""Joining a channel by name in the window asks before a new one is made (ui/channel_join.py,
issue #28 item 3), over a real Node, offscreen: the person's answers are given in place of the
question box, everything else is the real library on the Node's thread."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from app.channel_list import channel_list  # noqa: E402
from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from tests.support import join, node_call, node_submit  # noqa: E402
from tests.ui.support import WAIT_MS  # noqa: E402
from ui.bridge import NodeBridge  # noqa: E402
from ui.channel_join import ChannelJoin  # noqa: E402

FAKE_GENERAL = "g\u0435neral"  # a Cyrillic е


class Person:
    """Answers each question with the next of `answers`, and remembers what was asked."""

    def __init__(self, *answers: bool):
        self.answers = list(answers)
        self.asked: list[str] = []

    def __call__(self, title: str, question: str) -> bool:
        self.asked.append(question)
        return self.answers.pop(0)


def _node(paths: Paths) -> Node:
    return Node(paths, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None).start()


def _create(node: Node):
    """What the facade's create_channel is to be: Workspace.create_channel on the Node's
    thread, its id as the Future's result."""
    def create(name: str, public: bool, force: bool):
        return node_submit(node, lambda: node.workspace.create_channel(
            name, public=public, force=force).id)
    return create


def _channels(node: Node) -> list[str]:
    return sorted(c.name for c in node.facade.run(channel_list).result(WAIT_MS / 1000).channels)


def _held(node: Node) -> int:
    return node_call(node, lambda: node.workspace.replica.count())


@pytest.fixture
def ada(qtbot, tmp_path):
    paths = Paths.resolve(tmp_path / "ada", "default")
    Workspace.init(paths, "ada").close()
    node = _node(paths)
    bridge = NodeBridge(node)
    yield node, bridge
    bridge.close()
    node.stop()


def _joiner(node: Node, bridge: NodeBridge, person: Person) -> ChannelJoin:
    return ChannelJoin(bridge, lambda name: node.facade.run(lambda ws: ws.join(name).id),
                       _create(node), ask=person)


def test_a_known_channel_is_joined_without_a_question(qtbot, ada):
    node, bridge = ada
    person = Person()
    joiner = _joiner(node, bridge, person)
    with qtbot.waitSignal(joiner.joined, timeout=WAIT_MS) as joined:
        joiner.start("#General")
    assert joined.args == ["General"] and person.asked == []


def test_a_new_name_is_made_only_when_the_person_says_yes(qtbot, ada):
    node, bridge = ada
    held = _held(node)
    person = Person(False, True)
    joiner = _joiner(node, bridge, person)
    joiner.start("genral")  # a typo: No
    qtbot.waitUntil(lambda: len(person.asked) == 1, timeout=WAIT_MS)
    assert "There is no channel #genral here. Create it?" in person.asked[0]
    assert _channels(node) == ["general"] and _held(node) == held
    with qtbot.waitSignal(joiner.joined, timeout=WAIT_MS) as joined:
        joiner.start("design")  # Yes
    assert joined.args == ["design"] and _channels(node) == ["design", "general"]


def test_a_lookalike_is_asked_about_again(qtbot, ada):
    node, bridge = ada
    person = Person(True, True)
    joiner = _joiner(node, bridge, person)
    with qtbot.waitSignal(joiner.joined, timeout=WAIT_MS):
        joiner.start(FAKE_GENERAL)
    assert "looks like the existing channel #general" in person.asked[1]
    assert _channels(node) == sorted(["general", FAKE_GENERAL])


def test_a_private_channels_name_is_refused_and_nothing_is_made(qtbot, ada):
    node, bridge = ada
    node_call(node, lambda: node.workspace.private.create("launch-q3", []))
    held = _held(node)
    person = Person(True)
    joiner = _joiner(node, bridge, person)
    with qtbot.waitSignal(joiner.refused, timeout=WAIT_MS) as refused:
        joiner.start("launch-q3")  # a private channel of mine: it is there already
    assert "is a private channel" in refused.args[0] and person.asked == []
    with qtbot.waitSignal(joiner.refused, timeout=WAIT_MS) as refused:
        joiner.start("l\u0430unch-q3")  # a lookalike of it: asked, then refused, never made
    assert "is the name of a private channel here" in refused.args[0]
    assert _channels(node) == ["general"] and _held(node) == held


def test_a_computer_nothing_reached_asks_before_a_public_channel(qtbot, ada, tmp_path):
    bob_paths = Paths.resolve(tmp_path / "bob", "default")
    join(Paths.resolve(tmp_path / "ada", "default"), bob_paths, nick="bob")  # not synced
    bob = _node(bob_paths)
    bridge = NodeBridge(bob)
    try:
        held = _held(bob)
        person = Person(True, False)
        joiner = _joiner(bob, bridge, person)
        joiner.start("plans")
        qtbot.waitUntil(lambda: len(person.asked) == 2, timeout=WAIT_MS)
        assert "nothing has arrived from your workspace here yet" in person.asked[1]
        assert _held(bob) == held
        person.answers = [True, True]
        with qtbot.waitSignal(joiner.joined, timeout=WAIT_MS):
            joiner.start("plans")
        assert "plans" in _channels(bob)
    finally:
        bridge.close()
        bob.stop()
