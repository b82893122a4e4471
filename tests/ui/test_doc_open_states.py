"""Two open editors against everything a document goes through (issue #29), as a Hypothesis
state machine over two real Nodes, each with its window offscreen showing main of one document:
ada's and bob's. Rules: either types at a random place (over a few characters, or none); either
types while the other's change to main arrives, before the pause commits it; ada forks a draft
from main and writes on a draft through the library; either merges a draft into main with a
random resolution (the library, as `hearth doc merge --prefer` does); either restores an older
version of main.

After every step, once both nodes hold the same heads and both panes show them (and have been
made to look again, the path that once wrote back what a pane had mangled): each editor reads
exactly what main stores, and the commits that changed main's text are exactly the steps that
meant to, by whoever took them: no commit that nobody typed.

Bounded for the suite (10 examples of up to 8 steps); DOC_STATES_EXAMPLES=100 runs ten times as
many, DOC_STATES_STEPS=80 ten times as long.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from hypothesis import HealthCheck, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import (  # noqa: E402
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from app.documents import on_document
from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from tests.support import join  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402

from .test_doc_open_merge import NOTES, changes, settle, stored  # noqa: E402
from .test_doc_review_window import make_editor, open_branch  # noqa: E402

MAX_DRAFTS = 2  # more would mostly fork, leaving fewer steps for the rest
EXAMPLES = int(os.environ.get("DOC_STATES_EXAMPLES", "10"))
STEPS = int(os.environ.get("DOC_STATES_STEPS", "8"))
NAMES = ("ada", "bob")
WHO = st.sampled_from([0, 1])  # ada, bob
TYPED = st.sampled_from(["a", " ok", "😀", "\n", "é", ""])


def test_two_open_editors_take_in_every_change_and_write_back_nothing(qtbot, tmp_path):
    runs = itertools.count()

    class TwoEditors(RuleBasedStateMachine):
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
            self.windows = [MainWindow(node) for node in self.nodes]
            for window in self.windows:
                window.show()
            self.doc = bytes.fromhex(result(node_a.facade.run(lambda ws: ws.documents.new("Meeting notes").id)))
            result(node_a.facade.run(on_document(self.doc, lambda docs, d: docs.write(d, NOTES))))
            make_editor(qtbot, self.nodes, self.doc)
            for window in self.windows:
                open_branch(qtbot, window, self.doc, "main")
            self.panes = [w.document_pane for w in self.windows]
            self.drafts: list[str] = []
            self.writes = 0
            self.expected = [(node_a.key, "edit")]  # who changed main's text, and how
            settle(qtbot, self.panes, self.nodes, self.doc)

        def teardown(self) -> None:
            for window in self.windows:
                window.close()
                window.deleteLater()
            for node in reversed(self.nodes):
                node.stop()

        def _changed_by(self, who: int, kind: str, before: str) -> None:
            """Wait for both nodes to agree; count the step if it changed main's text."""
            settle(qtbot, self.panes, self.nodes, self.doc)
            if stored(self.nodes[0], self.doc) != before:
                self.expected.append((self.nodes[who].key, kind))

        @rule(who=WHO, at=st.integers(0, 10_000), over=st.integers(0, 3), typed=TYPED)
        def type_in_a_pane(self, who: int, at: int, over: int, typed: str) -> None:
            pane = self.panes[who]
            text = pane.editor.toPlainText()
            start = at % (len(text) + 1)
            end = min(len(text), start + over)
            wanted = text[:start] + typed + text[end:]
            note(f"{NAMES[who]} types {typed!r} over {start}-{end}")
            cursor = pane.editor.textCursor()
            cursor.setPosition(len(text[:start].encode("utf-16-le")) // 2)
            cursor.setPosition(len(text[:end].encode("utf-16-le")) // 2,
                               cursor.MoveMode.KeepAnchor)
            pane.editor.setTextCursor(cursor)
            cursor.insertText(typed)
            pane.commit_now()  # as the pause after typing does
            qtbot.waitUntil(lambda: stored(self.nodes[0], self.doc) == wanted, timeout=WAIT_MS)
            self._changed_by(who, "edit", text)

        @rule(who=WHO, at=st.integers(0, 10_000), typed=st.sampled_from(["a", " ok", "😀"]),
              line=st.integers(0, 100))
        def type_while_the_other_writes(self, who: int, at: int, typed: str, line: int) -> None:
            """Typing not committed yet when the other member's change reaches the editor:
            the typing is committed on the heads it was typed at, then joined with theirs."""
            pane, other = self.panes[who], self.nodes[1 - who]
            text = pane.editor.toPlainText()
            start = at % (len(text) + 1)
            cursor = pane.editor.textCursor()
            cursor.setPosition(len(text[:start].encode("utf-16-le")) // 2)
            pane.editor.setTextCursor(cursor)
            cursor.insertText(typed)  # the pause commits it, or the arriving change does first
            lines = stored(other, self.doc).split("\n")
            self.writes += 1  # each write differs from every line before it
            lines[line % len(lines)] = f"{line % len(lines)}. from {NAMES[1 - who]} {self.writes}"
            note(f"{NAMES[who]} types {typed!r} at {start} while {NAMES[1 - who]} writes line "
                 f"{line % len(lines)}")
            result(other.facade.run(on_document(self.doc, lambda docs, d: docs.write(d, "\n".join(lines)))))
            settle(qtbot, self.panes, self.nodes, self.doc)
            self.expected += [(self.nodes[who].key, "edit"), (other.key, "edit")]

        @precondition(lambda self: len(self.drafts) < MAX_DRAFTS)
        @rule()
        def fork(self) -> None:
            name = f"draft{len(self.drafts)}"
            note(f"ada forks {name}")
            result(self.nodes[0].facade.run(on_document(self.doc, lambda docs, d: docs.fork(d, "main", name))))
            self.drafts.append(name)
            settle(qtbot, self.panes, self.nodes, self.doc)

        @precondition(lambda self: self.drafts)
        @rule(pick=st.integers(0, 100), line=st.integers(0, 100), word=st.sampled_from(
            ["y (draft by ada)", "w", "😀 draft"]))
        def write_on_a_draft(self, pick: int, line: int, word: str) -> None:
            draft = self.drafts[pick % len(self.drafts)]
            lines = result(self.nodes[0].facade.run(on_document(self.doc, lambda docs, d: d.text(d.heads(draft))))).split("\n")
            lines[line % len(lines)] = f"{line % len(lines)}. {word}"
            note(f"ada writes line {line % len(lines)} of {draft}: {word!r}")
            result(self.nodes[0].facade.run(on_document(self.doc, lambda docs, d: docs.write(d, "\n".join(lines), branch=draft))))

        @precondition(lambda self: self.drafts)
        @rule(who=WHO, pick=st.integers(0, 100),
              prefer=st.sampled_from(["theirs", "ours", "both"]))
        def merge_a_draft(self, who: int, pick: int, prefer: str) -> None:
            draft = self.drafts[pick % len(self.drafts)]
            node = self.nodes[who]
            # What the merging node holds of main is what the other one shows: in step.
            settle(qtbot, self.panes, self.nodes, self.doc)
            before = stored(node, self.doc)
            commit = result(node.facade.run(on_document(self.doc, lambda docs, d: docs.merge(d, draft, "main", prefer=prefer))))
            note(f"{NAMES[who]} merges {draft} ({prefer}): {commit}")
            self._changed_by(who, "merge", before)

        @rule(who=WHO, pick=st.integers(0, 100))
        def restore_an_older_version(self, who: int, pick: int) -> None:
            node = self.nodes[who]
            settle(qtbot, self.panes, self.nodes, self.doc)
            history = result(node.facade.run(on_document(self.doc, lambda docs, d: d.history("main"))))
            commit = history[pick % len(history)].id
            before = stored(node, self.doc)
            if result(node.facade.run(on_document(self.doc, lambda docs, d: d.text([commit] if commit else d.heads("main"))))) == before:
                return  # it reads like that already: nothing to restore
            note(f"{NAMES[who]} restores {commit[:8]}")
            result(node.facade.run(on_document(self.doc, lambda docs, d: docs.restore(d, commit))))
            self._changed_by(who, "restore", before)

        @invariant()
        def each_editor_reads_main_and_every_change_was_meant(self) -> None:
            settle(qtbot, self.panes, self.nodes, self.doc)
            text = stored(self.nodes[0], self.doc)
            assert stored(self.nodes[1], self.doc) == text
            for pane in self.panes:
                assert pane.editor.toPlainText() == text
            # Concurrent steps may be listed either way round: compared as a multiset.
            assert Counter(changes(self.nodes[0], self.doc)) == Counter(self.expected)

    run_state_machine_as_test(TwoEditors, settings=settings(
        max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
        suppress_health_check=list(HealthCheck)))
