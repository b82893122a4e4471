"""Model-based test of the window's truthfulness (issue #29, "Done when"): two real windows over
two real Nodes (ada's and bob's), driven by hypothesis through random sequences of switching
either window to a public channel, the private channel "launch", the direct messages, Mentions,
search or the shared document "Notes", sending from either window to what it shows (sometimes
naming the other person), typing in the document, waiting for what was sent to arrive, and ada
removing bob. After every step, once the events have settled, each window must tell the truth:

- it shows what it was last asked to show (ui/conversation_target.py's `shown`);
- the composer names the conversation a message would go to, as its placeholder AND as painted
  (the backing store's pixels equal a fresh paint of the box);
- exactly one sidebar item is selected (none for search results, which none stands for);
- every badge (public channels, private channels, direct messages) and the title's count equal
  the facade's unread counts, and the conversation shown has nothing unread;
- the header offers a topic only for a public channel, and its title names what is shown;
- a window showing the document shows its stored text (others' typing and its own);
- once bob is removed, his window says so (a banner naming ada), composes nothing, and still
  shows what it holds truthfully.

Bounded for the suite (8 examples of up to 10 steps, about 16 s). A longer run lifts the
suite's per-test timeouts, e.g. 10x:

    MODEL_EXAMPLES=80 MODEL_STEPS=30 MODEL_SHRINK=0 QT_QPA_PLATFORM=offscreen \
        python -m pytest -q --timeout=0 -o faulthandler_timeout=0 tests/ui/test_window_model.py
"""

from __future__ import annotations

import itertools
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from hypothesis import HealthCheck, Phase, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import (  # noqa: E402
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)
from PySide6.QtCore import Qt  # noqa: E402
from pytestqt.exceptions import TimeoutError as WaitTimeout  # noqa: E402

from app.channel_list import channel_list
from app.doc_views import document_view
from app.documents import on_document
from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.records import ChannelList  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from tests.support import join  # noqa: E402
from tests.ui.support import WAIT_MS, result, type_and_send  # noqa: E402
from ui import conversation_target  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.sidebar import PrivateRole  # noqa: E402

from .test_window_truth import settle, shows_what_it_says, title_count  # noqa: E402

EXAMPLES = int(os.environ.get("MODEL_EXAMPLES", "8"))
STEPS = int(os.environ.get("MODEL_STEPS", "10"))
# MODEL_SHRINK=0: report the first failing sequence as found (a failing step waits TRUTH_MS)
SHRINK = os.environ.get("MODEL_SHRINK", "1") != "0"
TRUTH_MS = 8_000  # how long a window may take to show the truth after events settled
NAMES = ("ada", "bob")
WHO = st.sampled_from([0, 1])
PLACES = st.sampled_from(["#general", "#random", "launch", "dm", "Mentions", "Search", "doc"])
REMOVED_PLACEHOLDER = "You were removed from this workspace"


def badge(count: int, mention: bool) -> str:
    return f"  ({'@ ' if mention else ''}{count})" if count else ""


def test_two_windows_never_tell_a_lie(qtbot, tmp_path):
    runs = itertools.count()

    class TwoWindows(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            root = tmp_path / f"run{next(runs)}"
            a = Paths.resolve(root / "a", "default")
            b = Paths.resolve(root / "b", "default")
            Workspace.init(a, "ada").close()
            join(a, b, nick="bob")
            node_a = Node(a, interfaces=["127.0.0.1"], mdns=False,
                          reconcile_interval=None).start()
            node_b = Node(b, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None,
                          peers=[("127.0.0.1", node_a.port)]).start()
            self.nodes = (node_a, node_b)
            result(node_a.facade.run(lambda ws: ws.create_channel("random", public=True).id))
            self.launch = result(node_a.facade.run(lambda ws: ws.private.create("launch", [node_b.key])))
            self.dm = result(node_a.facade.run(lambda ws: ws.private.create("", [node_b.key], dm=True)))
            qtbot.waitUntil(lambda: len(result(node_b.facade.run(lambda ws: ws.private.channels()))) == 2
                            and "random" in [c.name for c in
                                             result(node_b.facade.run(channel_list)).channels],
                            timeout=WAIT_MS)
            result(node_b.facade.run(lambda ws: ws.join("random").id))
            self.doc = result(node_a.facade.run(lambda ws: ws.documents.new("Notes").id))  # every member edits it
            self.removed = False
            self.windows = [MainWindow(node) for node in self.nodes]
            for window in self.windows:
                window.show()
            # what each window shows, and the conversation its composer posts to
            self.shown = ["#general", "#general"]
            self.target = ["#general", "#general"]
            self.channel = ["#general", "#general"]  # the public channel each last showed
            self.sent: list[tuple[str, str]] = []  # (conversation, text) in sending order
            self.count = itertools.count()
            for window in self.windows:
                qtbot.waitUntil(lambda w=window: w.sidebar.dm_list.count() == 1
                                and w.sidebar.private_list.count() == 1
                                and w.document_list.count() == 1
                                and w.channels.rowCount() == 2, timeout=WAIT_MS)

        def teardown(self) -> None:
            for window in self.windows:
                window.close()
                window.deleteLater()
            for node in reversed(self.nodes):
                node.stop()

        # Steps ---------------------------------------------------------------------------------

        @rule(who=WHO, place=PLACES)
        def switch(self, who: int, place: str) -> None:
            note(f"{NAMES[who]} opens {place}")
            window = self.windows[who]
            if place.startswith("#"):
                names = [c.name for c in window.channels.channels]
                index = window.channels.index(names.index(place[1:]))
                window.channel_list.clicked.emit(index)  # as a click does
            elif place in ("launch", "dm"):
                rows = window.sidebar.private_list if place == "launch" \
                    else window.sidebar.dm_list
                if rows.count() == 0:  # removed: out of every private channel, none listed
                    assert who == 1 and self.removed
                    return
                rows.itemClicked.emit(rows.item(0))
            elif place == "doc":
                rows = window.document_list
                rows.itemClicked.emit(rows.item(0))
                qtbot.waitUntil(lambda: window.document_pane.doc_id is not None,
                                timeout=WAIT_MS)
            elif place == "Mentions":
                window.sidebar.mentions.click()
            else:
                window.search_box.setText("m")
                window.search_box.returnPressed.emit()
            self.shown[who] = place
            if place.startswith("#"):
                self.channel[who] = place
            if place == "doc":  # a document leaves the private pane: back is the channel
                self.target[who] = self.channel[who]
            elif place not in ("Mentions", "Search"):
                self.target[who] = place

        @rule(who=WHO, at=st.integers(0, 1000))
        def type_in_document(self, who: int, at: int) -> None:
            """Type a word into the document where the window shows it, as a person does."""
            if self.shown[who] != "doc" or (who == 1 and self.removed):
                return
            pane = self.windows[who].document_pane
            qtbot.waitUntil(lambda: not pane.editor.isReadOnly() and pane.in_step(),
                            timeout=WAIT_MS)
            word = f"w{next(self.count)} "
            note(f"{NAMES[who]} types {word!r} in the document")
            cursor = pane.editor.textCursor()
            cursor.setPosition(min(at, len(pane.editor.toPlainText())))
            pane.editor.setTextCursor(cursor)
            qtbot.keyClicks(pane.editor, word)
            qtbot.waitUntil(lambda: word in self.stored(who), timeout=WAIT_MS)

        @rule()
        def ada_removes_bob(self) -> None:
            """ada removes bob: his window must say so, and stops composing."""
            if self.removed:
                return
            note("ada removes bob")
            result(self.nodes[0].facade.remove_member(self.nodes[1].key, "model"))
            self.removed = True
            bob = self.windows[1]
            qtbot.waitUntil(lambda: bob.removed_banner.isVisible(), timeout=WAIT_MS)
            # He is in no private channel now: none is listed, and one he had open gives way
            # to his channel ("You are no longer in …"), whenever the new keys arrive.
            qtbot.waitUntil(lambda: bob.sidebar.private_list.count() == 0
                            and bob.sidebar.dm_list.count() == 0, timeout=WAIT_MS)
            if self.target[1] in ("launch", "dm"):  # it was open, maybe behind Mentions
                self.target[1] = self.shown[1] = self.channel[1]
                qtbot.waitUntil(lambda: conversation_target.shown(bob).kind == "channel",
                                timeout=WAIT_MS)

        def stored(self, who: int) -> str:
            return result(self.nodes[who].facade.run(on_document(bytes.fromhex(self.doc), lambda docs, d: document_view(docs, d)))).text

        @rule(who=WHO, mention=st.booleans())
        def send(self, who: int, mention: bool) -> None:
            """Type in the composer and press Enter: it goes where the composer says."""
            if who == 1 and self.removed:
                return
            text = f"m{next(self.count)}" + (f" @{NAMES[1 - who]}" if mention else "")
            place = self.target[who]
            note(f"{NAMES[who]} sends {text!r} (composer: {place})")
            type_and_send(qtbot, self.windows[who], text)
            self.sent.append((place, text))
            qtbot.waitUntil(lambda: text in self.held(who, place), timeout=WAIT_MS)

        @rule()
        def receive(self) -> None:
            """Wait until both computers hold everything sent."""
            note("both receive")
            for who in (0, 1) if not self.removed else (0,):
                for place in {p for p, _ in self.sent}:
                    wanted = {t for p, t in self.sent if p == place}
                    qtbot.waitUntil(lambda w=who, p=place, t=wanted: t <= self.held(w, p),
                                    timeout=WAIT_MS)

        def held(self, who: int, place: str) -> set[str]:
            facade = self.nodes[who].facade
            if place.startswith("#"):
                return {m.text for m in result(facade.run(lambda ws: ws.read(place[1:], limit=500)))}
            channel = self.launch if place == "launch" else self.dm
            return {m.text for m in result(facade.run(lambda ws: ws.private.read(channel, limit=500)))}

        # What must hold --------------------------------------------------------------------

        @invariant()
        def every_window_tells_the_truth(self) -> None:
            for who, window in enumerate(self.windows):
                settle(qtbot, window)
                problems: list[str] = []

                def truthful(w: int = who, win: MainWindow = window,
                             found: list[str] = problems) -> bool:
                    found[:] = self.lies(w, win)
                    return not found
                try:
                    qtbot.waitUntil(truthful, timeout=TRUTH_MS)
                except WaitTimeout:
                    raise AssertionError(f"{NAMES[who]}'s window: {problems}") from None

        def lies(self, who: int, window: MainWindow) -> list[str]:
            """What the window says that is not so (empty: nothing)."""
            out = []
            place, target = self.shown[who], self.target[who]
            shown = conversation_target.shown(window)
            kind = "channel" if place.startswith("#") else {
                "launch": "private", "dm": "dm", "Mentions": "mentions", "Search": "search",
                "doc": "document"}[place]
            if shown.kind != kind or (kind == "channel" and shown.name != place[1:]):
                out.append(f"shows {shown}, not {place}")
            # The composer names where a message goes, as painted.
            other = NAMES[1 - who]
            named = {"launch": "Message launch", "dm": f"Message {other}"}.get(
                target, f"Message {target}")
            if who == 1 and self.removed:
                named = REMOVED_PLACEHOLDER
                banner = window.removed_banner
                if not banner.isVisible() or "removed from this workspace by ada" not in \
                        banner.text():
                    out.append(f"no banner naming ada: {banner.text()!r}")
                if window.composer.isEnabled():
                    out.append("a removed member's composer takes messages")
            if (kind != "document" or named == REMOVED_PLACEHOLDER) and \
                    not window.composer.placeholderText().startswith(named):
                out.append(f"composer says {window.composer.placeholderText()!r}")
            if window.composer.isVisible() and not shows_what_it_says(window.composer.viewport()):
                out.append("composer painted differs from its placeholder")
            if kind == "document":
                pane = window.document_pane
                if pane.in_step() and pane.editor.toPlainText() != self.stored(who):
                    out.append("the document's editor differs from its stored text")
            # Exactly one sidebar item selected (none for search results).
            selected = self.selected(window)
            wanted = [] if place == "Search" else ["document:Notes"] if place == "doc" \
                else [place]
            if selected != wanted:
                out.append(f"sidebar selects {selected}, not {wanted}")
            # Badges and the title's count are the facade's.
            fresh: ChannelList = result(self.nodes[who].facade.run(channel_list))
            for row, channel in enumerate(window.channels.channels):
                count, mention = fresh.unread.get(channel.name, (0, False))
                text = window.channels.index(row).data()
                if not text.endswith(badge(count, mention)) or ("(" in text) != bool(count):
                    out.append(f"#{channel.name} reads {text!r}, facade says {count}")
            rows = window.sidebar.unread_shown()
            for channel_id, name in ((self.launch, "launch"), (self.dm, other)):
                count, mention = fresh.private_unread.get(channel_id, (0, False))
                if who == 1 and self.removed and channel_id not in rows:
                    continue  # out of every private channel: the sidebar lists none
                if rows.get(channel_id) != name + badge(count, mention):
                    out.append(f"{name} reads {rows.get(channel_id)!r}, facade says {count}")
            if title_count(window) != fresh.total_unread:
                out.append(f"title counts {title_count(window)}, facade {fresh.total_unread}")
            # What is shown is read.
            if kind == "channel" and fresh.unread.get(place[1:], (0, False))[0]:
                out.append(f"{place} shown but unread")
            if kind in ("private", "dm"):
                channel_id = self.launch if kind == "private" else self.dm
                if fresh.private_unread.get(channel_id, (0, False))[0]:
                    out.append(f"{place} shown but unread")
            # The header offers a topic for a public channel only, and names what is shown.
            if window.header.offers_topic and kind != "channel":
                out.append(f"header offers a topic on {place}")
            title = window.header.title.text()
            expected_title = {"launch": "launch", "dm": other, "doc": "Notes"}.get(place, place)
            if title != expected_title:
                out.append(f"header reads {title!r}, not {expected_title!r}")
            return out

        def selected(self, window: MainWindow) -> list[str]:
            side = window.sidebar
            out = [f"#{i.data(Qt.ItemDataRole.UserRole)}"
                   for i in window.channel_list.selectionModel().selectedIndexes()]
            for rows in (side.private_list, side.dm_list):
                for item in rows.selectedItems():
                    out.append("launch" if item.data(PrivateRole) == self.launch else "dm")
            out += [f"document:{item.text()}" for item in window.document_list.selectedItems()]
            return out + (["Mentions"] if side.mentions.isChecked() else [])

    run_state_machine_as_test(TwoWindows, settings=settings(verbosity=__import__("hypothesis").Verbosity.verbose if os.environ.get("MODEL_VERBOSE") else __import__("hypothesis").Verbosity.normal,
        max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
        phases=list(Phase) if SHRINK else [Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=list(HealthCheck)))
