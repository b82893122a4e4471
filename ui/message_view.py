"""The channel's message list view."""

from __future__ import annotations

from PySide6.QtWidgets import QListView

from .models import MessageListModel


class MessageView(QListView):
    def __init__(self, model: MessageListModel):
        super().__init__(objectName="messageView")
        self.setModel(model)
        self.setWordWrap(True)
        # Lay rows out in batches: a channel scrolled back through 100,000 messages would
        # otherwise be laid out whole on every page that loads.
        self.setLayoutMode(QListView.LayoutMode.Batched)
        self.setBatchSize(200)
