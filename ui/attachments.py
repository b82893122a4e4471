"""What a click on a message's file does (issue #19), for every message list of the window
(`watch`): a thumbnail opens the image full size (ui/image_viewer.py; fetched first when it is
not here), Download fetches the file from peers (facade.download) while its card shows the
progress, Open asks the facade for the file decrypted (facade.open_attachment) and only then
the desktop to open it, asking first for names that could run a program (.exe, .sh, .desktop,
.app, .bat, ...), and Save as… asks where (a file dialog) and writes it there
(facade.save_attachment). Nothing here opens a file without a click. The message menu's Keep
on this computer pins someone else's file (ws.files.pin: the storage quota never evicts it) and
Let storage limits remove it unpins it; the rows then re-read, so its card shows "Kept here".

Progress comes from the bridge's fileProgress (app.events.FileProgressed), for downloads asked here and
for the Node's own automatic fetches; the cards read it from the views' `file_progress`, and a
file that completes makes the window re-read its messages (`on_complete`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QStandardPaths, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from app.records import Attachment, FileProgress

from . import _files
from .bridge import NodeBridge
from .image_viewer import ImageViewer
from .message_view import MessageView


class AttachmentActions(QObject):
    """Acts on file clicks in the watched views; `say` puts a line in the status bar."""

    saved = Signal(Path)  # a file was written where the person chose
    opened = Signal(Path)  # the desktop was asked to open this (decrypted) file
    downloaded = Signal(bytes)  # a file is complete here now: its list id
    pinned = Signal(bytes, bool)  # a file is kept here whatever the quota, or not: list id

    def __init__(self, bridge: NodeBridge, window: QWidget, say: Callable[[str], None],
                 on_complete: Callable[[], None]):
        super().__init__(window)
        self.bridge = bridge
        self.facade = bridge.facade
        self.window = window
        self.say = say
        self.on_complete = on_complete
        self.progress: dict[bytes, FileProgress] = {}  # files arriving: the latest of each
        self._asked: set[bytes] = set()  # downloads the person asked for (their errors show)
        self.views: list[MessageView] = []
        # How a file is handed to the desktop (the system's default application for it).
        self.opener: Callable[[QUrl], object] = QDesktopServices.openUrl
        self.save_dir = Path(QStandardPaths.writableLocation(
            QStandardPaths.StandardLocation.DownloadLocation) or Path.home())
        bridge.fileProgress.connect(self._progressed)

    def watch(self, view: MessageView) -> None:
        view.file_progress = self.progress
        view.fileRequested.connect(lambda message_id, index, action:
                                   self.act(view, message_id, index, action))
        self.views.append(view)

    @staticmethod
    def attachment(view: MessageView, message_id: bytes, index: int) -> Attachment | None:
        model = view.message_model()
        row = model.row_of(message_id)
        if row is None or index >= len(model.messages[row].files):
            return None
        return model.messages[row].files[index]

    def act(self, view: MessageView, message_id: bytes, index: int,
            action: str) -> QWidget | None:
        """A click on file `index` of a message in `view`: "view", "download", "open" or
        "save", or a menu's "pin" or "unpin". Answers the window or dialog it opened, if
        any."""
        attachment = self.attachment(view, message_id, index)
        if attachment is None:
            return None
        if action == "view":
            return self.view_image(message_id, index, attachment)
        if action == "download":
            self.download(message_id, index, attachment)
            return None
        if action == "open":
            return self.open(message_id, index, attachment)
        if action == "save":
            return self.save_as(message_id, index, attachment)
        if action in ("pin", "unpin"):
            self.pin(message_id, index, attachment, action == "pin")
        return None

    # Fetching ----------------------------------------------------------------------------------

    def download(self, message_id: bytes, index: int, attachment: Attachment,
                 then: Callable[[], None] | None = None,
                 failed: Callable[[str], None] | None = None) -> None:
        """Fetch the file from peers; its card shows the progress at once. `then` runs once
        it is complete here, `failed` (else the status bar) with why it is not."""
        key = attachment.list
        self._asked.add(key)
        if key not in self.progress:
            self._show(FileProgress(key, 0, attachment.size))

        def done(_) -> None:
            self._asked.discard(key)
            if key in self.progress:  # complete without a "done" event (it was here already)
                self._finished(key)
            if then is not None:
                then()

        def refused(message: str) -> None:
            self._asked.discard(key)
            self.progress.pop(key, None)
            self._repaint(key)
            (failed or self._say_failed(attachment))(message)

        self.bridge.then(self.facade.download(message_id, index), done=done, failed=refused)

    def _say_failed(self, attachment: Attachment) -> Callable[[str], None]:
        return lambda message: self.say(f"{attachment.name} did not arrive: {message}")

    def _progressed(self, progress: FileProgress) -> None:
        if progress.done:
            self._finished(progress.list)
        elif progress.error is not None:
            if progress.list not in self._asked:  # an automatic fetch: the card just stops
                self.progress.pop(progress.list, None)
                self._repaint(progress.list)
        else:
            self._show(progress)

    def _show(self, progress: FileProgress) -> None:
        self.progress[progress.list] = progress
        self._repaint(progress.list)

    def _finished(self, key: bytes) -> None:
        self.progress.pop(key, None)
        self._repaint(key)
        self.on_complete()  # the rows re-read: the file is complete, its card says so
        self.downloaded.emit(key)

    def _repaint(self, key: bytes) -> None:
        for view in self.views:
            view.file_progressed(key)

    # Keeping -----------------------------------------------------------------------------------

    def pin(self, message_id: bytes, index: int, attachment: Attachment, pinned: bool) -> None:
        """Keep the file on this computer whatever the storage limit (ws.files.pin), fetching it
        if it is not here, or let the limit remove it again; then the rows re-read, and its
        card says so."""
        def done(_) -> None:
            self.say(f"{attachment.name} is kept on this computer" if pinned else
                     f"{attachment.name} may be removed when files pass the storage limit")
            self.on_complete()
            self.pinned.emit(attachment.list, pinned)
            if pinned and not attachment.complete and attachment.list not in self.progress:
                self.download(message_id, index, attachment)  # kept here: so bring it here

        self.bridge.then(self.facade.run(lambda ws: ws.files.pin(message_id, index, pinned)), done=done,
                         failed=lambda message: self.say(f"Cannot change it: {message}"))

    # Opening, saving, viewing ------------------------------------------------------------------

    def open(self, message_id: bytes, index: int, attachment: Attachment) -> QMessageBox | None:
        """Open the file with the desktop's application for it; a name that could run a
        program is asked about first (the box, window-modal, is returned)."""
        if not _files.is_executable(attachment.name):
            self._open_now(message_id, index)
            return None
        box = QMessageBox(QMessageBox.Icon.Warning, "Open file",
                          f"Open {attachment.name}?", parent=self.window,
                          objectName="confirmOpen")
        box.setInformativeText("It may be a program: opening it could run it on this computer "
                               "with your rights. Open it only if you trust who sent it.")
        button = box.addButton("Open", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.buttonClicked.connect(lambda clicked: self._open_now(message_id, index)
                                  if clicked is button else None)
        box.open()
        return box

    def _open_now(self, message_id: bytes, index: int) -> None:
        def hand_over(path: Path) -> None:
            self.opener(QUrl.fromLocalFile(str(path)))
            self.opened.emit(path)

        self.bridge.then(self.facade.open_attachment(message_id, index), done=hand_over,
                         failed=lambda message: self.say(f"Cannot open it: {message}"))

    def save_as(self, message_id: bytes, index: int, attachment: Attachment) -> QFileDialog:
        """Ask where to save a copy (window-modal, not waited on), then write it there."""
        dialog = QFileDialog(self.window, f"Save {attachment.name}",
                             str(self.save_dir / attachment.name), objectName="saveAttachment")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setFileMode(QFileDialog.FileMode.AnyFile)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.fileSelected.connect(lambda chosen: self.save_to(message_id, index, Path(chosen)))
        dialog.open()
        return dialog

    def save_to(self, message_id: bytes, index: int, path: Path) -> None:
        """Write file `index` of the message as `path` (a number is added to the name when
        one is there already: nothing is overwritten)."""
        self.save_dir = path.parent

        def written(where: Path) -> None:
            self.say(f"Saved {where}")
            self.saved.emit(where)

        self.bridge.then(self.facade.save_attachment(message_id, index, path.parent, path.name),
                         done=written, failed=lambda message: self.say(f"Not saved: {message}"))

    def view_image(self, message_id: bytes, index: int, attachment: Attachment) -> ImageViewer:
        """The image full size in a window of its own (fetched first if it is not here)."""
        viewer = ImageViewer(self.bridge, attachment, self.window)
        viewer.show()
        gone: list[bool] = []  # the viewer was closed (and deleted) before the file came
        viewer.destroyed.connect(lambda: gone.append(True))

        def alive(act: Callable) -> Callable:
            return lambda value=None: None if gone else act(value)

        def read(_=None) -> None:
            self.bridge.then(self.facade.open_attachment(message_id, index),
                             done=alive(viewer.show_file), failed=alive(viewer.fail))

        if attachment.complete:
            read()
        else:
            viewer.say("Fetching it from peers…")
            self.download(message_id, index, attachment, then=alive(read),
                          failed=alive(viewer.fail))
        return viewer
