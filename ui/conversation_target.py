"""What the window shows, read in one place (issue #29): a public channel, a private channel,
direct messages, Mentions, search results or a document. The sidebar's selection, whether the
header offers a topic, and what the unread marks say are all derived from it, so no two parts
of the window disagree about it.

`shown(window)` reads it from the reading area's pages (the window's stacks are the one source:
nothing else records it); `select(window)` makes the sidebar select exactly the item of what is
shown (none for search results, which no sidebar item stands for); `Shown.offers_topic` is true
for a public channel's messages only (private channels have no topics in the library yet)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from PySide6.QtCore import QItemSelectionModel, Qt

if TYPE_CHECKING:
    from .main_window import MainWindow

Kind = Literal["channel", "private", "dm", "mentions", "search", "document"]


@dataclass(frozen=True)
class Shown:
    """What the reading area shows: its kind, and the channel's name, the private channel's
    id or the document's id (hex)."""

    kind: Kind
    name: str | None = None  # a public channel's name
    id: bytes | str | None = None  # a private channel's id (None: direct messages not started)

    @property
    def offers_topic(self) -> bool:
        return self.kind == "channel"


def shown(window: MainWindow) -> Shown:
    if window.pages.currentIndex() != 0:
        doc = window.document_pane.doc_id
        return Shown("document", id=doc.hex() if doc else None)
    reading = window.reading.currentWidget()
    if reading is window.search_results:
        return Shown("search" if window.search_results.query else "mentions")
    if reading is window.private:
        current = window.private.current
        dm = current.dm if current is not None else True
        return Shown("dm" if dm else "private", id=window.private.channel_id)
    return Shown("channel", name=window.channel)


def select(window: MainWindow) -> None:
    """Select in the sidebar the item of what is shown, and no other."""
    now = shown(window)
    sidebar = window.sidebar
    selection = window.channel_list.selectionModel()
    names = [c.name for c in window.channels.channels]
    if now.kind == "channel" and now.name in names:
        index = window.channels.index(names.index(now.name))
        if selection.selectedIndexes() != [index]:
            selection.setCurrentIndex(index, QItemSelectionModel.SelectionFlag.ClearAndSelect)
    elif selection.hasSelection():
        selection.clearSelection()
    sidebar.select_private(now.id if now.kind in ("private", "dm") else None)
    sidebar.mentions.setChecked(now.kind == "mentions")
    documents = window.document_list
    for row in range(documents.count()):
        item = documents.item(row)
        item.setSelected(now.kind == "document"
                         and item.data(Qt.ItemDataRole.UserRole) == now.id)
