"""The main window's search: results (grouped by channel, matched words marked) or the
messages that mention me, in place of the messages; a result chosen opens its channel and is
selected once its messages are in. Owned by the window (`window.search`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.records import Message

from . import conversation_target

if TYPE_CHECKING:
    from .main_window import MainWindow


class WindowSearch:
    def __init__(self, window: MainWindow):
        self.window = window
        self._jump_to: bytes | None = None  # a search result to select once it is loaded
        window.header.searchRequested.connect(self.run)
        results = window.search_results
        results.messageChosen.connect(self._jump)
        results.closed.connect(self.close)
        results.queryTyped.connect(self.run)  # search as one types
        window.messages.modelReset.connect(self._select_jump)
        window.private.model.modelReset.connect(self._select_jump)
        window.private.shown.connect(self._keep_place)  # its header, over Mentions or search

    def run(self, query: str) -> None:
        w = self.window
        if not query.strip():
            self.close()
            return
        if w.pages.currentIndex() != 0:  # searching from a document
            w.show_channel(w.channel)
        w.member_pane.hide()
        w.search_results.run(query)
        w.reading.setCurrentWidget(w.search_results)
        w.header.show_place("Search")
        w._highlight()

    def show_mentions(self) -> None:
        w = self.window
        if w.pages.currentIndex() != 0:
            w.show_channel(w.channel)
        w.member_pane.hide()
        w.header.show_place("Mentions")
        w.search_results.show_mentions()
        w.reading.setCurrentWidget(w.search_results)
        w._highlight()

    def _keep_place(self) -> None:
        """Mentions or search results shown: the header names them, whatever the private
        channel behind them just loaded."""
        kind = conversation_target.shown(self.window).kind
        if kind in ("mentions", "search"):
            self.window.header.show_place("Mentions" if kind == "mentions" else "Search")

    def close(self) -> None:
        w = self.window
        w.search_results.clear()
        if w.reading.currentWidget() is w.search_results:
            if w.private.is_open:
                w.private.show_again()
            else:
                w.show_channel(w.channel)

    def _jump(self, message: Message) -> None:
        """Open the result's channel (a private one by its id) and select it there."""
        if message.private is None:
            self.jump_to(message.channel, message.id)
            return
        self._jump_to = message.id
        self.window.private.open(message.private)
        self._select_jump()

    def jump_to(self, channel: str, message: bytes) -> None:
        """Show `channel` with `message` selected once its rows are in (a search result, a
        notification clicked)."""
        self._jump_to = message
        self.window.show_channel(channel)
        self._select_jump()

    def _select_jump(self) -> None:
        """Select the search result once its channel's messages are in (they arrive later)."""
        w = self.window
        model, view = (w.private.model, w.private.view) if w.private.is_open \
            else (w.messages, w.message_view)
        for row, shown in enumerate(model.messages):
            if shown.id == self._jump_to:
                index = model.index(row)
                view.setCurrentIndex(index)
                view.scrollTo(index)
                self._jump_to = None
