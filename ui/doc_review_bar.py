"""What a document pane (ui/document_pane.py) says when a branch is opened again after others
changed it: "Changed by bob since you last looked · Show changes", the changes then shown by the
pane's version box (ui/doc_versions.py, DocDiffView.show_since).

The pane tells `ChangedNotice.saw` the heads it shows of each (document, branch) whenever they
change, and they are kept in memory (`LastLooked`) for as long as the window is open. Opening a
branch again, `check` compares its heads with those: who made the commits the old heads do not
hold (`authors_since`, from the history's parents, without Qt) is named, apart from me; my own
changes from elsewhere (the command line) do not raise it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton

from app.records import CommitInfo, DocumentView

from . import theme
from .timeline import author_names

SHOW_CHANGES = "Show changes"
NAMED = 2  # people named in the notice before "and N others"
STYLE = ("QFrame#changedNotice { background: palette(alternate-base); "
         "border: 1px solid palette(highlight); border-radius: 4px; }")


class LastLooked:
    """The heads each (document, branch) showed when it was last looked at."""

    def __init__(self) -> None:
        self._heads: dict[tuple[bytes, str], tuple[str, ...]] = {}

    def saw(self, doc_id: bytes, branch: str, heads: Iterable[str]) -> None:
        heads = tuple(heads)
        if heads:  # an empty branch is no version to compare with
            self._heads[(doc_id, branch)] = heads

    def heads(self, doc_id: bytes, branch: str) -> tuple[str, ...] | None:
        return self._heads.get((doc_id, branch))


def authors_since(history: Sequence[CommitInfo], seen: Iterable[str]) -> list[bytes]:
    """Who made the commits of `history` that are not in the past of `seen` (heads looked at
    before), oldest first, each once; [] when there are none."""
    by_id = {c.id: c for c in history}
    held: set[str] = set()
    todo = [h for h in seen if h in by_id]
    while todo:
        commit = todo.pop()
        if commit not in held:
            held.add(commit)
            todo.extend(p for p in by_id[commit].parents if p in by_id)
    return list(dict.fromkeys(c.author for c in history if c.id not in held))


def changed_by(names: Sequence[str]) -> str:
    """ "Changed by bob since you last looked", "... by bob and carol ...", "... by bob, carol
    and 2 others ..."."""
    if len(names) > NAMED + 1:
        who = f"{', '.join(names[:NAMED])} and {len(names) - NAMED} others"
    elif len(names) > 1:
        who = f"{', '.join(names[:-1])} and {names[-1]}"
    else:
        who = names[0]
    return f"Changed by {who} since you last looked"


def notice_text(view: DocumentView, seen: Iterable[str], me: bytes) -> str | None:
    """What the notice says on opening `view` again after it showed heads `seen`; None when
    nobody but me changed it since."""
    if set(view.heads) == set(seen):
        return None
    others = [a for a in authors_since(view.history, seen) if a != me]
    if not others:
        return None
    named = author_names(view.names, others)
    return changed_by([named[a] for a in others])


class ChangedNotice(QFrame):
    """The notice above a branch opened again after others changed it, with Show changes."""

    showRequested = Signal(bytes, str, list)  # the document, branch and heads last looked at

    def __init__(self) -> None:
        super().__init__(objectName="changedNotice")
        theme.styled(self, STYLE)
        self.looked = LastLooked()
        self._since: tuple[bytes, str, list[str]] | None = None
        self.label = QLabel(objectName="changedText", wordWrap=True)
        self.show_button = QToolButton(text=SHOW_CHANGES, objectName="showChanges",
                                       autoRaise=True, toolTip="What changed, highlighted in "
                                                               "the colours of who changed it")
        self.show_button.clicked.connect(self._show_changes)
        dismiss = QToolButton(text="Dismiss", objectName="dismissChanged", autoRaise=True)
        dismiss.clicked.connect(self.hide)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 2, 4, 2)
        row.addWidget(self.label)
        row.addWidget(QLabel("·"))
        row.addWidget(self.show_button)
        row.addStretch(1)
        row.addWidget(dismiss)
        self.hide()

    def saw(self, doc_id: bytes | None, branch: str, heads: Iterable[str]) -> None:
        if doc_id is not None:
            self.looked.saw(doc_id, branch, heads)

    def check(self, doc_id: bytes, view: DocumentView, me: bytes) -> None:
        """On opening `view` of `doc_id` (before it is shown): say so if others changed it
        since it was last looked at here."""
        seen = self.looked.heads(doc_id, view.branch)
        text = None if seen is None or view.unreadable else notice_text(view, seen, me)
        self._since = (doc_id, view.branch, list(seen or ()))
        self.label.setText(text or "")
        self.setVisible(text is not None)

    def _show_changes(self) -> None:
        self.hide()
        if self._since is not None:
            self.showRequested.emit(*self._since)

    def texts(self) -> list[str]:
        """What it reads, as a person reads it."""
        return [self.label.text(), "·", self.show_button.text()] if not self.isHidden() \
            else []
