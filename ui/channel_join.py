"""Joining a channel by name from the window, asking before a new one is made.

The library's join takes only a channel this computer knows (app.workspace: no implicit
channels). For any other name the window asks "Create #name?" and makes it with
`create_channel`; when this computer cannot tell whether the name is a private channel's (a
private channel of mine whose key has not arrived, or nothing from the workspace yet), it asks
again, saying so, before making it public; a name that looks like another channel's is asked
about too; the name of a private channel this computer opens is never made public (the
library's PrivateName is shown, nothing is made).

`ChannelJoin` runs those steps on the GUI thread over two calls that return Futures, as the
facade's `run` does: `join(name)` and `create(name, public, force)`, which the window makes
of `Workspace.join` and `Workspace.create_channel` run on the Node's thread, and connects `joined` to
showing the channel and `refused` to its status bar.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from app.errors import LookalikeChannel, MayBePrivate, UnknownChannel

Ask = Callable[[str, str], bool]  # (title, question) -> whether the person said yes


def ask_with_a_box(parent: QWidget | None) -> Ask:
    """Ask in a modal question box, No by default."""
    def ask(title: str, question: str) -> bool:
        answer = QMessageBox.question(parent, title, question,
                                      QMessageBox.StandardButton.Yes
                                      | QMessageBox.StandardButton.No,
                                      QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes
    return ask


def _outcome(future: Future) -> Future:
    """A Future of (True, result) or (False, exception) for `future`, so the GUI thread sees
    which refusal it was (the bridge passes on only the message). A stopping Node's failure
    stays a failure, which the bridge drops."""
    from app.errors import NodeStopped

    out: Future = Future()

    def copy(done: Future) -> None:
        try:
            out.set_result((True, done.result()))
        except NodeStopped as exc:
            out.set_exception(exc)
        except Exception as exc:  # a refusal of the library, told to the person
            out.set_result((False, exc))
    future.add_done_callback(copy)
    return out


class ChannelJoin(QObject):
    """Join, or after asking create, the channel a person typed (see the module's docstring).
    `joined(name)` when they are in it; `refused(message)` when it cannot be (a private
    channel's name, a removed member, a bad name); nothing when they answer No."""

    joined = Signal(str)
    refused = Signal(str)

    def __init__(self, bridge: Any, join: Callable[[str], Future],
                 create: Callable[[str, bool, bool], Future], *, ask: Ask | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self._bridge = bridge
        self._join = join
        self._create = create
        self._ask = ask or ask_with_a_box(parent)

    def start(self, name: str) -> None:
        name = name.strip().removeprefix("#").strip()
        if not name:
            return
        self._bridge.then(_outcome(self._join(name)),
                          done=lambda outcome: self._joined(name, outcome))

    def _joined(self, name: str, outcome: tuple[bool, Any]) -> None:
        ok, value = outcome
        if ok:
            self.joined.emit(name)
        elif isinstance(value, UnknownChannel) and not value.private:
            if self._ask("Create a channel",
                         f"There is no channel #{name} here. Create it? It is a public "
                         "channel: everyone in the workspace reads its name and messages."):
                self._make(name, public=False, force=False)
        else:
            self.refused.emit(str(value))

    def _make(self, name: str, *, public: bool, force: bool) -> None:
        self._bridge.then(_outcome(self._create(name, public, force)),
                          done=lambda outcome: self._made(name, public, force, outcome))

    def _made(self, name: str, public: bool, force: bool, outcome: tuple[bool, Any]) -> None:
        ok, value = outcome
        if ok:
            self.joined.emit(name)
        elif isinstance(value, MayBePrivate) and not public:
            if self._ask("Make it public?", f"{value}. Make #{name} a public channel?"):
                self._make(name, public=True, force=force)
        elif isinstance(value, LookalikeChannel) and not force:
            if self._ask("A lookalike name", f"{value}. Create #{name} anyway?"):
                self._make(name, public=public, force=True)
        else:
            self.refused.emit(str(value))
