"""A message's menu in the message list (ui/message_view.py's MessageView owns a MessageMenu):
a link's actions, Copy text, Reply in thread, Add reaction…, Edit, Show earlier versions,
keeping or letting go of someone else's files, the moderation entries, and Delete, which asks
first (a window-modal box). The entries emit the view's signals; only copying, links and
deleting act here. A private channel's message (`message.private`) has the same entries but
the moderation ones (a moderator's hide is a public object: none names a private message),
and Delete on mine alone (a private delete is sealed by its author)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, QPoint, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMenu, QMessageBox

from app.records import Message

from . import _rows

if TYPE_CHECKING:
    from .message_view import MessageView

MENU_NAME_MOST = 40  # characters of a file's name in a menu entry
DELETE_MINE = "Delete this message for everyone?"
DELETE_THEIRS = "Delete {name}'s message for everyone?"
DELETE_PERMANENT = "This cannot be undone: it is removed from every computer in the workspace."


class MessageMenu:
    """Makes a MessageView's menus and asks before its deletes."""

    def __init__(self, view: MessageView):
        self._view = view

    def build(self, index: QModelIndex, pos: QPoint | None = None) -> QMenu:
        """The menu for row `index`: the link's actions when `pos` is on a link, Copy text,
        Reply in thread, Add reaction…, Edit on mine, Show earlier versions when edited,
        keeping or letting go of someone else's files (none of these on a post a moderator
        hid), the moderation entries when `moderation` is set, and Delete on mine (on anyone's
        for an admin, who is asked first); see the module's docstring for a private one."""
        view = self._view
        model = view.message_model()
        message = model.messages[index.row()]
        mine = message.author == model.me
        menu = QMenu(view)
        link = view.delegate.link_at(index, pos) if pos is not None else None
        if link:
            menu.addAction("Open link", lambda: view.open_link(link))
            menu.addAction("Copy link", lambda: QGuiApplication.clipboard().setText(link))
            menu.addSeparator()
        menu.addAction("Copy text", lambda: view.copy_text(message))
        menu.addSeparator()
        if _rows.converses(message):
            self._conversation(menu, index, message, mine, pos)
            if not mine:
                self._keep(menu, message)
        if view.moderation is not None and message.private is None:
            menu.addSeparator()
            row = model.row_of(message.id)
            view.moderation.add_to_menu(menu, message, model.display_name(row)
                                        if row is not None else _rows.nick_of(message))
        if mine or (view.is_admin() and message.private is None):
            menu.addSeparator()
            delete = menu.addAction("Delete", lambda: view.delete_message(message))
            delete.setObjectName("deleteMessage")
        return menu

    def _conversation(self, menu: QMenu, index: QModelIndex, message: Message, mine: bool,
                      pos: QPoint | None) -> None:
        view = self._view
        if view.show_reply_counts:
            menu.addAction("Reply in thread",
                           lambda: view.replyRequested.emit(message.reply_to or message.id))
        where = view.viewport().mapToGlobal(pos if pos is not None
                                            else view.visualRect(index).center())
        menu.addAction("Add reaction…", lambda: view.reactRequested.emit(message.id, where))
        if mine:
            menu.addAction("Edit", lambda: view.editRequested.emit(message))
        if message.edited:
            menu.addAction("Show earlier versions",
                           lambda: view.versionsRequested.emit(message.id))

    def _keep(self, menu: QMenu, message: Message) -> None:
        """Keep on this computer (or let storage limits remove it) for each of someone
        else's files; a file I attached myself is always kept."""
        view = self._view
        files = [(i, f) for i, f in enumerate(message.files) if not f.mine]
        if not files:
            return
        menu.addSeparator()
        for i, attachment in files:
            name = "" if len(message.files) == 1 else _menu_name(attachment.name)
            if attachment.pinned:
                label = f"Let storage limits remove {name or 'it'}"
            else:
                label = f"Keep {name} on this computer" if name else "Keep on this computer"
            action = menu.addAction(label, lambda i=i, pinned=attachment.pinned:
                                    view.fileRequested.emit(message.id, i,
                                                            "unpin" if pinned else "pin"))
            action.setObjectName("unpinFile" if attachment.pinned else "pinFile")

    def confirm_delete(self, message: Message) -> QMessageBox:
        """Ask before deleting; the box is window-modal (`open`), never a blocking `exec`, and
        Delete or Cancel answers it (`finished` says it was answered)."""
        view = self._view
        model = view.message_model()
        if message.author == model.me:
            question = DELETE_MINE
        else:
            row = model.row_of(message.id)
            name = model.display_name(row) if row is not None else _rows.nick_of(message)
            question = DELETE_THEIRS.format(name=name)
        box = QMessageBox(QMessageBox.Icon.Warning, "Delete message", question, parent=view,
                          objectName="confirmDelete")
        box.setInformativeText(DELETE_PERMANENT)
        delete = box.addButton("Delete", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.buttonClicked.connect(lambda button: self._delete(message)
                                  if button is delete else None)
        box.open()
        return box

    def _delete(self, message: Message) -> None:
        model = self._view.message_model()
        gone = message.id
        model.bridge.then(model.bridge.facade.run(lambda ws: ws.conversation.delete(gone).id),
                          done=lambda _: model.reload())


def _menu_name(name: str, most: int = MENU_NAME_MOST) -> str:
    """A file's name for a menu entry: shortened in the middle, its "&" not a shortcut."""
    if len(name) > most:
        name = f"{name[:most // 2 - 1]}…{name[-(most - most // 2):]}"
    return name.replace("&", "&&")
