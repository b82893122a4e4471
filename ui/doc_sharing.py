"""Who may read and change a document, as the document pane shows it (issue #15): the visibility
badge ("Private" with a small lock, or "Workspace"), Share, Editors…, the creator's visibility
toggle, a reader's "Ask to edit", the open requests an editor accepts in one click, and what
someone who holds no key sees instead of a page.

`sharing_state` decides all of it from a DocumentView and my key without Qt (tested without a
display); `SharingBar`, `RequestsBar`, `LockedNote` and `EditorsDialog` show it. Every change is
a call of the library's documents (app.documents), made by the pane (ui/document_pane.py) through the bridge;
a refusal (the library says who may do what) is shown where it was asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QPainter, QPalette, QPen, QPixmap
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.records import DocumentView

from . import theme
from .timeline import author_names

PRIVATE, WORKSPACE = "private", "workspace"
PRIVATE_LABEL, WORKSPACE_LABEL = "Private", "Workspace"
PRIVATE_TIP = "Only its editors, and whoever they send a share link to, can read it"
WORKSPACE_TIP = "Every member of the workspace can read it; its editors can change it"
MAKE_PRIVATE, MAKE_WORKSPACE = "Make private", "Make visible to the workspace"
ASK, ASKED = "Ask to edit", "Asked to edit"
ASKED_TIP = "Your request is with its editors; the page becomes editable when one accepts"
ASK_TIP = "Ask its editors to let you change it"
SHARE_TIP = "Copy a link that lets its holder read this branch"
EDITORS_TIP = "Who may change this document (its creator adds and removes them)"
COPIED = ("A link to read this branch is copied. Send it to whoever should read it; they "
          "open it with “Open share link…”.")
CREATOR_ONLY = "Only the document's creator can change this"
NOTE_STYLE = ("QLabel#unreadableNote { background: palette(alternate-base); "
              "color: palette(text); border: 1px dashed palette(mid); border-radius: 4px; "
              "padding: 16px; }")


# What the pane shows (no Qt) ------------------------------------------------------------------

@dataclass(frozen=True)
class Request:
    """An open request to edit, as the pane lists it."""

    key: bytes
    label: str  # "bob asks to edit"
    # who may accept it when not me (only the creator changes editors): "ada, its creator, can
    # accept"; None when I can
    accepter: str | None = None


@dataclass(frozen=True)
class SharingState:
    role: str  # "creator", "editor", "reader" (reads, may not change) or "locked" (no key)
    badge: str  # "Private" or "Workspace"
    badge_tip: str
    share: bool  # Share shows (an editor who reads the branch)
    editors: bool  # Editors… shows (any editor; only the creator changes the list)
    toggle: str | None  # "Make private" / "Make visible to the workspace" (the creator), or None
    ask: str | None  # "Ask to edit" / "Asked to edit" (not an editor), or None
    asked: bool
    requests: tuple[Request, ...]  # open requests, for an editor to accept
    locked_note: str | None  # what someone with no key is told to do, or None


def visibility_badge(visibility: str) -> tuple[str, str]:
    """The badge's text and tooltip."""
    if visibility == PRIVATE:
        return PRIVATE_LABEL, PRIVATE_TIP
    return WORKSPACE_LABEL, WORKSPACE_TIP


def name_of(key: bytes, names: Mapping[bytes, str], nick: str | None = None) -> str:
    """How a person is named in the pane: as in the history (a key suffix for lookalikes),
    the nickname a request carries when the workspace knows none."""
    if key not in names and nick:
        return nick
    return author_names(names, [key])[key]


def locked_note(view: DocumentView) -> str:
    """What someone who holds no key for the branch can do about it."""
    what = "document" if not any(b.readable for b in view.branches) else "branch"
    if view.visibility == PRIVATE:
        return (f"This {what} is private: only its editors, and whoever they send a share "
                "link to, can read it.\nAsk to edit, or ask an editor for a share link and "
                "open it with “Open share link…”.")
    return (f"Every member can read this {what} once its key arrives from an editor: keep "
            "this computer in sync with theirs.\nIf it still does not open, ask an editor for "
            "a share link and open it with “Open share link…”.")


def sharing_state(view: DocumentView, me: bytes) -> SharingState:
    """What the pane shows of who may read and change the branch in `view`, for `me`."""
    creator = view.creator
    editor = me in view.editors or me == creator
    locked = view.unreadable is not None
    role = ("locked" if locked else "creator" if me == creator and editor
            else "editor" if editor else "reader")
    visibility = view.visibility
    badge, tip = visibility_badge(visibility)
    asked = view.asked
    accepter = None if me == creator else (
        f"{name_of(creator, view.names, None)}, its creator, can accept")
    requests = tuple(Request(r.key, f"{name_of(r.key, view.names, r.nick)} asks to edit",
                             accepter) for r in view.requests) if editor and not locked else ()
    return SharingState(
        role=role, badge=badge, badge_tip=tip,
        share=editor and not locked,
        editors=editor and not locked,
        # Every member edits a workspace-editable document, so it stays workspace-readable.
        toggle=(MAKE_WORKSPACE if visibility == PRIVATE else MAKE_PRIVATE)
        if role == "creator" and view.editing != "workspace" else None,
        ask=None if editor else (ASKED if asked else ASK),
        asked=asked, requests=requests,
        locked_note=locked_note(view) if locked else None)


def resolve_member(text: str, names: Mapping[bytes, str]) -> bytes:
    """A person given as a whole key (64 hex digits) or by their nickname here (any case);
    ValueError with a sentence for a person when it names no one, or several."""
    text = text.strip()
    if len(text) == 64:
        try:
            return bytes.fromhex(text)
        except ValueError:
            pass
    found = [key for key, nick in names.items() if nick.casefold() == text.casefold()]
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError(f"No one here goes by “{text}”: give their nickname or their key "
                         "(64 hexadecimal characters).")
    raise ValueError(f"Several people go by “{text}”: give the key of the one you mean.")


def editor_rows(editors: Sequence[bytes], creator: bytes, names: Mapping[bytes, str],
                me: bytes) -> list[tuple[bytes, str]]:
    """The editors as the Editors dialog lists them: the creator first, then by name."""
    shown = author_names(names, list(editors))

    def label(key: bytes) -> str:
        marks = [m for m, on in (("creator", key == creator), ("you", key == me)) if on]
        return shown[key] + (f" ({', '.join(marks)})" if marks else "")

    ordered = sorted(editors, key=lambda k: (k != creator, shown[k].casefold(), k))
    return [(key, label(key)) for key in ordered]


# How it shows ----------------------------------------------------------------------------------

def lock_pixmap(palette: QPalette, size: int, ratio: float = 1.0) -> QPixmap:
    """A small padlock in the palette's text colour (no emoji font needed)."""
    pixmap = QPixmap(round(size * ratio), round(size * ratio))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    color = palette.color(QPalette.ColorRole.WindowText)
    pen = QPen(color, max(size / 9, 1.0))
    painter.setPen(pen)
    s = float(size)
    painter.drawArc(QRectF(s * 0.3, s * 0.1, s * 0.4, s * 0.5), 0, 180 * 16)
    painter.drawLine(QPointF(s * 0.3, s * 0.35), QPointF(s * 0.3, s * 0.48))
    painter.drawLine(QPointF(s * 0.7, s * 0.35), QPointF(s * 0.7, s * 0.48))
    painter.setBrush(color)
    painter.drawRoundedRect(QRectF(s * 0.18, s * 0.46, s * 0.64, s * 0.46), s * 0.08, s * 0.08)
    painter.end()
    return pixmap


class VisibilityBadge(QWidget):
    """"Private" with a lock, or "Workspace": who can read the document, in the header row."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="visibilityBadge")
        self.icon = QLabel(objectName="visibilityIcon")
        self.text = QLabel(objectName="visibilityLabel")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(3)
        row.addWidget(self.icon)
        row.addWidget(self.text)
        self._private = False

    def show_visibility(self, text: str, tip: str) -> None:
        self._private = text == PRIVATE_LABEL
        self.text.setText(text)
        self.setToolTip(tip)
        self._draw_icon()

    def _draw_icon(self) -> None:
        self.icon.setVisible(self._private)
        if self._private:
            size = self.text.fontMetrics().height()
            self.icon.setPixmap(lock_pixmap(self.palette(), size, self.devicePixelRatioF()))

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt's name): redraw for a new palette
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self._draw_icon()


class SharingBar(QWidget):
    """The pane's row of what can be done about access: Share, Editors…, the visibility toggle,
    Ask to edit, and what the last of them answered."""

    shareClicked = Signal()
    editorsClicked = Signal()
    toggleClicked = Signal()
    askClicked = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="sharingBar")
        self.share = QPushButton("Share", objectName="shareDoc", toolTip=SHARE_TIP)
        self.editors = QPushButton("Editors…", objectName="docEditors", toolTip=EDITORS_TIP)
        self.toggle = QPushButton(objectName="visibilityToggle")
        self.ask = QPushButton(ASK, objectName="askEdit", toolTip=ASK_TIP)
        self.status = QLabel(objectName="sharingStatus", wordWrap=True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.share.clicked.connect(self.shareClicked)
        self.editors.clicked.connect(self.editorsClicked)
        self.toggle.clicked.connect(self.toggleClicked)
        self.ask.clicked.connect(self.askClicked)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        for button in (self.share, self.editors, self.toggle, self.ask):
            row.addWidget(button)
        row.addWidget(self.status, 1)

    def show_state(self, state: SharingState) -> None:
        self.share.setVisible(state.share)
        self.editors.setVisible(state.editors)
        self.toggle.setVisible(state.toggle is not None)
        self.toggle.setText(state.toggle or "")
        self.toggle.setToolTip("Choose who can read it (its creator only)")
        self.ask.setVisible(state.ask is not None)
        self.ask.setText(state.ask or ASK)
        self.ask.setEnabled(not state.asked)
        self.ask.setToolTip(ASKED_TIP if state.asked else ASK_TIP)

    def say(self, text: str) -> None:
        self.status.setText(text)


class RequestsBar(QWidget):
    """Open requests to edit, one line each: "bob asks to edit" and Accept."""

    accepted = Signal(bytes)  # the key of the person to make an editor

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="editRequests")
        self._column = QVBoxLayout(self)
        self._column.setContentsMargins(0, 0, 0, 0)
        self._shown: tuple[Request, ...] = ()
        self.hide()

    def show_requests(self, requests: tuple[Request, ...]) -> None:
        if requests == self._shown:
            return
        self._shown = requests
        while self._column.count():
            widget = self._column.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        for request in requests:
            line = QWidget(objectName="editRequest")
            row = QHBoxLayout(line)
            row.setContentsMargins(0, 0, 0, 0)
            row.addWidget(QLabel(f"{request.label} ·", objectName="editRequestText"))
            if request.accepter is not None:  # only the creator changes editors: say who
                row.addWidget(QLabel(request.accepter, objectName="editRequestAccepter"))
            else:
                accept = QPushButton("Accept", objectName="acceptRequest",
                                     toolTip="Make them an editor of this document")
                accept.clicked.connect(lambda _=False, key=request.key: self._accept(key))
                row.addWidget(accept)
            row.addStretch(1)
            self._column.addWidget(line)
        self.setVisible(bool(requests))

    def _accept(self, key: bytes) -> None:
        for button in self.findChildren(QPushButton, "acceptRequest"):
            button.setEnabled(False)  # once: the list comes back without it
        self.accepted.emit(key)

    def labels(self) -> list[str]:
        return [r.label for r in self._shown]


class LockedNote(QWidget):
    """Shown instead of the page when this computer holds no key for the branch: what to do,
    and a way to open a share link."""

    openLinkClicked = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="lockedBox")
        self.note = QLabel(objectName="unreadableNote", wordWrap=True)
        self.note.setAlignment(Qt.AlignmentFlag.AlignCenter)
        theme.styled(self.note, NOTE_STYLE)
        self.open_link = QPushButton("Open share link…", objectName="openShareLink",
                                     toolTip="Read a document by a link an editor sent you")
        self.open_link.clicked.connect(self.openLinkClicked)
        column = QVBoxLayout(self)
        column.addStretch(1)
        column.addWidget(self.note)
        column.addWidget(self.open_link, 0, Qt.AlignmentFlag.AlignHCenter)
        column.addStretch(2)
        self.hide()


class EditorsDialog(QDialog):
    """Who may change the document: the list, and (for its creator) adding someone by nickname
    or key and removing the selected one. The pane makes the calls; a refusal shows here."""

    addRequested = Signal(bytes)
    removeRequested = Signal(bytes)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="editorsDialog")
        self.setWindowTitle("Editors")
        self.list = QListWidget(objectName="editorsList")
        self.entry = QLineEdit(objectName="editorEntry", placeholderText="Nickname or key")
        self.add = QPushButton("Add editor", objectName="addEditor")
        self.remove = QPushButton("Remove", objectName="removeEditor")
        self.error = QLabel(objectName="editorsError", wordWrap=True)
        self.error.hide()
        self.names: Mapping[bytes, str] = {}
        self.add.clicked.connect(self._add)
        self.entry.returnPressed.connect(self._add)
        self.remove.clicked.connect(self._remove)
        self.list.currentItemChanged.connect(lambda *_: self._enable())
        adding = QHBoxLayout()
        adding.addWidget(self.entry, 1)
        adding.addWidget(self.add)
        column = QVBoxLayout(self)
        column.addWidget(QLabel("They can change this document and share it."))
        column.addWidget(self.list, 1)
        column.addWidget(self.remove, 0, Qt.AlignmentFlag.AlignRight)
        column.addLayout(adding)
        column.addWidget(self.error)
        self._creator = False
        self._keys: list[bytes] = []

    def show_editors(self, view: DocumentView, me: bytes) -> None:
        creator = view.creator
        editors = list(view.editors)
        self.names = view.names
        self._creator = me == creator
        rows = editor_rows(editors, creator, view.names, me)
        if [k for k, _ in rows] != self._keys or self.list.count() != len(rows):
            self._keys = [k for k, _ in rows]
            self.list.clear()
            for key, label in rows:
                item = QListWidgetItem(label)
                item.setData(Qt.ItemDataRole.UserRole, key)
                self.list.addItem(item)
        tip = "" if self._creator else CREATOR_ONLY
        for widget in (self.entry, self.add, self.remove):
            widget.setToolTip(tip)
        self._enable()

    def _enable(self) -> None:
        item = self.list.currentItem()
        self.remove.setEnabled(item is not None)
        self.add.setEnabled(True)

    def _add(self) -> None:
        try:
            key = resolve_member(self.entry.text(), self.names)
        except ValueError as exc:
            self.say(str(exc))
            return
        self.say("")
        self.addRequested.emit(key)

    def _remove(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.say("")
            self.removeRequested.emit(item.data(Qt.ItemDataRole.UserRole))

    def say(self, text: str) -> None:
        """A refusal or a mistake, shown under the list ("" hides it)."""
        self.error.setText(text)
        self.error.setVisible(bool(text))

    def added(self) -> None:
        self.entry.clear()
