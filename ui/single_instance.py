"""One window per data folder: a second `hearth` asks the running one to come forward."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

CONNECT_TIMEOUT_MS = 1000
RAISE = b"raise\n"


def server_name(data: Path) -> str:
    digest = hashlib.sha256(str(Path(data).resolve()).encode()).hexdigest()[:16]
    return f"hearth-{os.getuid() if hasattr(os, 'getuid') else 0}-{digest}"


def ask_running_to_raise(data: Path) -> bool:
    """True if a window already runs on `data` and was asked to come forward."""
    socket = QLocalSocket()
    socket.connectToServer(server_name(data))
    if not socket.waitForConnected(CONNECT_TIMEOUT_MS):
        return False
    socket.write(RAISE)
    socket.waitForBytesWritten(CONNECT_TIMEOUT_MS)
    socket.disconnectFromServer()
    return True


class InstanceServer(QObject):
    """Listens for a second `hearth` on the same data folder (the Node lock says we are the
    only one, so a leftover socket from a crash can be removed)."""

    activated = Signal()

    def __init__(self, data: Path, parent: QObject | None = None):
        super().__init__(parent)
        self.name = server_name(data)
        self.server = QLocalServer(self)
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self.server.newConnection.connect(self._connected)

    def listen(self) -> bool:
        QLocalServer.removeServer(self.name)
        return self.server.listen(self.name)

    def _connected(self) -> None:
        while self.server.hasPendingConnections():
            socket = self.server.nextPendingConnection()
            socket.readyRead.connect(lambda s=socket: self._read(s))
            socket.disconnected.connect(socket.deleteLater)

    def _read(self, socket: QLocalSocket) -> None:
        if bytes(socket.read(len(RAISE))) == RAISE:
            self.activated.emit()
        socket.disconnectFromServer()

    def close(self) -> None:
        self.server.close()
