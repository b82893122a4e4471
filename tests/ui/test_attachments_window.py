"""Files and images in the window (issue #19) over real Nodes on 127.0.0.1, offscreen: a file
dropped on the channel waits as a chip and goes with Enter to the peer; a pasted image shows
inline at both ends; a card's progress bar follows the real FileProgress events of a download
to done; Save as writes the very bytes sent; Open hands nothing to the desktop without a click,
and asks first about a program."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import struct
import zlib
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import (  # noqa: E402
    QBuffer,
    QByteArray,
    QIODevice,
    QMimeData,
    QPoint,
    QPointF,
    Qt,
    QUrl,
)
from PySide6.QtGui import (  # noqa: E402
    QColor,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QImage,
    QPainter,
)
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox  # noqa: E402

from app import units  # noqa: E402
from app.records import Message  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui import _files  # noqa: E402
from ui.image_viewer import ImageViewer, read_image  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402


def with_files(win: MainWindow) -> list[Message]:
    return [m for m in win.messages.messages if m.files]


def drop(win: MainWindow, *paths: Path) -> None:
    """Files dragged from a file manager and dropped on the channel's messages."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    target = win.message_view.viewport()
    enter = QDragEnterEvent(QPoint(50, 50), Qt.DropAction.CopyAction, mime,
                            Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, enter)
    assert enter.isAccepted()  # the drop is welcome here
    event = QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime,
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, event)
    assert event.isAccepted()


def row_parts(win: MainWindow, message_id: bytes, view=None):
    view = view or win.message_view
    row = view.message_model().row_of(message_id)
    index = view.message_model().index(row)
    view.scrollTo(index)
    return view.delegate.parts(index)


def click_file(qtbot, win: MainWindow, message_id: bytes, action: str) -> None:
    """A left click on a file's thumbnail or a card's button (Download, Open, Save as…)."""
    parts = row_parts(win, message_id)
    rect = next(r for r, _, a in parts.file_actions if a == action)
    qtbot.mouseClick(win.message_view.viewport(), Qt.MouseButton.LeftButton,
                     pos=rect.center())


def chart(width: int = 200, height: int = 120) -> QImage:
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor("#dfe9f7"))
    painter = QPainter(image)
    painter.fillRect(20, 30, 40, 80, QColor("#4f8df5"))
    painter.fillRect(90, 10, 40, 100, QColor("#f08a3c"))
    painter.end()
    return image


def test_a_dropped_file_waits_as_a_chip_and_goes_with_enter_to_the_peer(
        qtbot, window, pair, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"the plan, in words\n" * 200)
    extra = tmp_path / "extra.txt"
    extra.write_text("not this one")
    drop(window, notes, extra)
    strip = window.pending_files
    assert strip.isVisible()
    assert [chip.name.text() for chip in strip.chips()] == ["notes.txt", "extra.txt"]
    assert strip.chips()[0].size.text() == "3.8 KB"
    strip.chips()[1].remove.click()  # taken back
    assert strip.paths() == [notes]
    drop(window, tmp_path)  # a folder is refused in words
    assert "not a file" in window.statusBar().currentMessage()
    # The paperclip: a file dialog, whose choice waits as a chip too (each file once).
    window.attach_button.click()
    dialog = window.findChild(QFileDialog, "attachDialog")
    assert dialog is not None and dialog.isVisible()
    dialog.filesSelected.emit([str(notes), str(extra)])
    assert [chip.name.text() for chip in strip.chips()] == ["notes.txt", "extra.txt"]
    dialog.close()
    strip.chips()[1].remove.click()

    window.composer.setPlainText("the plan for friday")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    assert window.composer.toPlainText() == "" and strip.paths() == []
    qtbot.waitUntil(lambda: bool(with_files(window)), timeout=WAIT_MS)
    sent = with_files(window)[0]
    assert sent.text == "the plan for friday"
    assert [(f.name, f.size, f.mine, f.complete) for f in sent.files] == \
        [("notes.txt", 3800, True, True)]
    qtbot.waitUntil(lambda: not strip.isVisible(), timeout=WAIT_MS)
    # bob's computer has the message, with the file, and fetches it by itself (small).
    qtbot.waitUntil(lambda: any(m.id == sent.id and m.files and m.files[0].complete
                                for m in result(pair[1].facade.run(lambda ws: ws.read("general")))),
                    timeout=WAIT_MS)
    at_bob = next(m for m in result(pair[1].facade.run(lambda ws: ws.read("general"))) if m.id == sent.id)
    assert (at_bob.text, at_bob.files[0].name, at_bob.files[0].size) == \
        ("the plan for friday", "notes.txt", 3800)
    # Its card: the name, Open and Save as… (it is here), under the text.
    parts = row_parts(window, sent.id)
    assert [a for _, _, a in parts.file_actions] == ["save", "open"]
    assert parts.files[0][0].top() > parts.body.bottom()


def test_a_failed_attach_says_why_and_gives_the_files_back(
        qtbot, window, tmp_path):
    huge = tmp_path / "disk.img"
    with open(huge, "wb") as f:  # sparse: takes no room
        f.truncate((4 << 30) + 1)
    drop(window, huge)  # refused at once, in words
    assert "a file may be at most 4 GiB" in window.statusBar().currentMessage()
    assert window.pending_files.paths() == []
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(1000))
    drop(window, data)
    data.unlink()  # gone before it is sent: the attach fails and says why
    window.composer.setPlainText("the numbers")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "Not sent" in window.statusBar().currentMessage(), timeout=WAIT_MS)
    assert "data.bin" in window.statusBar().currentMessage()
    assert window.pending_files.paths() == [data]  # given back, with the text
    assert window.pending_files.chips()[0].size.text() == "1.0 KB"
    assert window.composer.toPlainText() == "the numbers"
    assert not with_files(window)


def test_a_pasted_image_shows_inline_at_both_ends(qtbot, window, window_b, pair):
    QGuiApplication.clipboard().setImage(chart(640, 400))
    window.composer.setFocus()
    qtbot.keyClick(window.composer, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    strip = window.pending_files
    qtbot.waitUntil(lambda: len(strip.paths()) == 1, timeout=WAIT_MS)
    pasted = strip.paths()[0]
    assert pasted.name.startswith("Pasted image ") and pasted.suffix == ".png"
    assert window.composer.toPlainText() == ""  # nothing was inserted as text
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)  # no text: the image alone
    qtbot.waitUntil(lambda: bool(with_files(window)), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not pasted.exists(), timeout=WAIT_MS)  # the temporary copy went
    message_id = with_files(window)[0].id
    qtbot.waitUntil(lambda: any(m.id == message_id for m in with_files(window_b)),
                    timeout=WAIT_MS)
    for win in (window, window_b):
        message = next(m for m in with_files(win) if m.id == message_id)
        image = message.files[0]
        assert (image.media_type, image.width, image.height) == ("image/png", 640, 400)
        assert _files.shows_inline(image)
        parts = row_parts(win, message_id)
        box = parts.files[0][0]
        assert (box.width(), box.height()) == (320, 200)  # fitted, the shape kept
        assert [a for _, _, a in parts.file_actions] == ["view"]
        assert parts.body.height() == 0  # no empty text line above it
        thumb = win.message_view.delegate.files.thumbnail(image)
        assert thumb is not None and thumb.width() > 0
        # The row is as tall as what it draws.
        rect = win.message_view.visualRect(win.messages.index(win.messages.row_of(message_id)))
        assert rect.bottom() >= box.bottom() and rect.bottom() - box.bottom() < 20
    # Another message naming the same list with a picture of its own shows its own: the
    # thumbnails are not taken from one message for another.
    forged = dataclasses.replace(image, thumb=_tiny_jpeg(QColor("red")))
    mine, theirs = (window.message_view.delegate.files.thumbnail(a) for a in (image, forged))
    assert theirs is not None and mine.toImage() != theirs.toImage()
    # A click on bob's thumbnail opens it full size.
    view = window_b.message_view
    parts = row_parts(window_b, message_id)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=parts.files[0][0].center())
    qtbot.waitUntil(lambda: window_b.findChild(ImageViewer) is not None, timeout=WAIT_MS)
    viewer = window_b.findChild(ImageViewer)
    qtbot.waitUntil(lambda: viewer.canvas.pixmap is not None, timeout=WAIT_MS)
    assert (viewer.canvas.pixmap.width(), viewer.canvas.pixmap.height()) == (640, 400)
    viewer.close()


def test_a_cards_progress_follows_the_download_to_done(qtbot, window, pair, tmp_path):
    node_a, node_b = pair
    result(node_a.facade.run(lambda ws: ws.files.set_preferences(auto_download_mb=0)))  # on click only
    data = os.urandom(3 * 2**20 + 12345)
    (tmp_path / "recording.wav").write_bytes(data)
    sent = result(node_b.facade.attach("general", [tmp_path / "recording.wav"], "listen"))
    qtbot.waitUntil(lambda: any(m.id == sent for m in with_files(window)), timeout=WAIT_MS)
    parts = row_parts(window, sent)
    assert [a for _, _, a in parts.file_actions] == ["download"]
    card_height = parts.files[0][0].height()
    view = window.message_view
    seen = []  # (event, what the view's cards showed for it right after)
    window.bridge.fileProgress.connect(
        lambda p: seen.append((p, view.file_progress.get(p.list))))
    click_file(qtbot, window, sent, "download")
    attachment = next(m for m in with_files(window) if m.id == sent).files[0]
    shown = view.file_progress.get(attachment.list)
    assert shown is not None and not shown.done  # the bar shows at once, Download went
    assert [a for _, _, a in row_parts(window, sent).file_actions] == []
    qtbot.waitUntil(lambda: any(p.list == attachment.list and p.done for p, _ in seen),
                    timeout=WAIT_MS)
    events = [p for p, _ in seen if p.list == attachment.list]
    assert events and events[-1].done and events[-1].have == len(data)
    assert all(p.size == len(data) for p in events)
    for p, showed in seen:  # every event in between was what the card drew
        if not p.done and p.error is None:
            assert showed == p
    assert [p.have for p in events] == sorted(p.have for p in events)
    assert attachment.list not in view.file_progress
    qtbot.waitUntil(lambda: next(m for m in with_files(window) if m.id == sent).files[0]
                    .complete, timeout=WAIT_MS)
    parts = row_parts(window, sent)
    assert [a for _, _, a in parts.file_actions] == ["save", "open"]
    assert parts.files[0][0].height() == card_height  # the row did not move


def test_save_as_writes_the_bytes_that_were_sent(qtbot, window_b, pair, tmp_path):
    data = os.urandom(700_000)
    source = tmp_path / "report.pdf"
    source.write_bytes(data)
    sent = result(pair[0].facade.attach("general", [source], "the report"))
    qtbot.waitUntil(lambda: any(m.id == sent and m.files[0].complete
                                for m in with_files(window_b)), timeout=WAIT_MS)
    click_file(qtbot, window_b, sent, "save")
    dialog = window_b.findChild(QFileDialog, "saveAttachment")
    assert dialog is not None and dialog.isVisible()
    out = tmp_path / "saved"
    out.mkdir()
    with qtbot.waitSignal(window_b.attachments.saved, timeout=WAIT_MS) as saved:
        dialog.fileSelected.emit(str(out / "report.pdf"))
    assert saved.args[0] == out / "report.pdf"
    assert hashlib.sha256((out / "report.pdf").read_bytes()).digest() == \
        hashlib.sha256(data).digest()
    # Saved again under the same name: a new name, nothing overwritten.
    with qtbot.waitSignal(window_b.attachments.saved, timeout=WAIT_MS) as again:
        window_b.attachments.save_to(sent, 0, out / "report.pdf")
    assert again.args[0] == out / "report (1).pdf"


def test_open_is_never_called_without_a_click(qtbot, window_b, pair, tmp_path):
    opened: list[QUrl] = []
    window_b.attachments.opener = opened.append
    (tmp_path / "photo.txt").write_text("a text, fetched automatically")
    (tmp_path / "install.sh").write_text("#!/bin/sh\necho hello\n")
    text = result(pair[0].facade.attach("general", [tmp_path / "photo.txt"], "read this"))
    program = result(pair[0].facade.attach("general", [tmp_path / "install.sh"], "run this"))
    qtbot.waitUntil(lambda: sum(f.complete for m in with_files(window_b)
                                for f in m.files) == 2, timeout=WAIT_MS)
    assert opened == []  # arrived and complete: still nothing opened
    with qtbot.waitSignal(window_b.attachments.opened, timeout=WAIT_MS) as was:
        click_file(qtbot, window_b, text, "open")
    assert len(opened) == 1 and Path(opened[0].toLocalFile()) == was.args[0]
    assert Path(opened[0].toLocalFile()).read_text() == "a text, fetched automatically"
    # A program: asked first; Cancel opens nothing.
    click_file(qtbot, window_b, program, "open")
    box = window_b.findChild(QMessageBox, "confirmOpen")
    assert box is not None and "install.sh" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert len(opened) == 1
    click_file(qtbot, window_b, program, "open")
    box = next(b for b in window_b.findChildren(QMessageBox, "confirmOpen") if b.isVisible())
    with qtbot.waitSignal(window_b.attachments.opened, timeout=WAIT_MS):
        next(b for b in box.buttons() if b.text() == "Open").click()
    assert len(opened) == 2 and opened[1].toLocalFile().endswith("install.sh")


def test_a_file_dropped_in_a_private_channel_goes_sealed(
        qtbot, window, pair, tmp_path):
    node_a, node_b = pair
    qtbot.waitUntil(lambda: node_b.key in {m.key for m in result(
        node_a.facade.run(lambda ws: ws.members.all()))}, timeout=WAIT_MS)
    channel = result(node_a.facade.run(lambda ws: ws.private.create("plans", [node_b.key])))
    window.private.open(channel)
    qtbot.waitUntil(lambda: window.private.is_open, timeout=WAIT_MS)
    (tmp_path / "secret.txt").write_text("only for the two of us")
    drop(window, tmp_path / "secret.txt")
    window.composer.setPlainText("between us")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: any(m.files for m in window.private.model.messages),
                    timeout=WAIT_MS)
    assert not with_files(window)  # nothing public
    qtbot.waitUntil(lambda: any(m.files and m.files[0].name == "secret.txt"
                                for m in result(node_b.facade.run(lambda ws: ws.private.read(channel)))),
                    timeout=WAIT_MS)


# Without Nodes -----------------------------------------------------------------------------

def test_sizes_names_and_shapes_read_right():
    assert _files.size_label is units.size_label  # the CLI's formatter (app/units.py)
    assert [_files.size_label(n) for n in (0, 1, 999, 1000, 2_400_000, 123_456_789,
                                           5 * 10**9)] == \
        ["0 bytes", "1 byte", "999 bytes", "1.0 KB", "2.4 MB", "123 MB", "5.0 GB"]
    assert _files.progress_label(1_200_000, 2_400_000) == "1.2 MB of 2.4 MB"
    # ... and names whose extension only shows once saved (what the desktop would open)
    for name in ("setup.exe", "run.sh", "app.desktop", "Tool.app", "go.BAT", "x.exe.",
                 "a.tar.gz.sh", "evil.sh\u200d", "evil.jar \u200d", "a.terminal\u200d",
                 "evil.exe. .", "run.sh\u202e"):
        assert _files.is_executable(name), name
    for name in ("report.pdf", "photo.jpg", "notes", "exe", ".sh.txt"):
        assert not _files.is_executable(name), name
    assert _files.fit(640, 400, 320) == (320, 200)
    assert _files.fit(640, 400, 1000) == (512, 320)
    assert _files.fit(100, 2000, 500) == (16, 320)
    assert _files.fit(50, 40, 500) == (50, 40)  # never scaled up
    assert _files.fit(2000, 1000, 150) == (150, 75)  # a narrow window
    from datetime import datetime
    when = datetime(2026, 11, 24, 13, 22, 5)
    assert _files.pasted_name(when) == "Pasted image 2026-11-24 13.22.05.png"
    assert _files.pasted_name(when, {"Pasted image 2026-11-24 13.22.05.png"}) == \
        "Pasted image 2026-11-24 13.22.05 (2).png"


def _tiny_jpeg(color: QColor) -> bytes:
    image = QImage(32, 20, QImage.Format.Format_RGB32)
    image.fill(color)
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "JPEG")
    return bytes(data.data())


def _png_header(width: int, height: int) -> bytes:
    """A PNG that claims `width` x `height` pixels and holds a few bytes of them."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 1024)) + chunk(b"IEND", b""))


def test_the_viewer_refuses_a_bomb_and_what_is_not_an_image(tmp_path, qapp):
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(_png_header(100_000, 100_000))
    with pytest.raises(OSError, match="too large"):
        read_image(bomb)
    script = tmp_path / "image.png"
    script.write_text("#!/bin/sh\nrm -rf ~\n")
    with pytest.raises(OSError):
        read_image(script)
    svg = tmp_path / "a.png"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>')
    with pytest.raises(OSError):
        read_image(svg)
    good = tmp_path / "good.jpg"
    chart().save(str(good), "JPEG")
    assert read_image(good).size().toTuple() == (200, 120)
