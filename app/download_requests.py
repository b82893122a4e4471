"""Download requests from another process on the same data folder (`hearth download` beside a
running Node): the command leaves `<workspace dir>/downloads/MESSAGE-INDEX.request`
(`request_download`) and reads the Node's answers from the `.status` file beside it
(`download_status`); the running Node looks for requests every REQUESTS_CHECK_S
(`DownloadRequests`, on its loop) and fetches each file as a download asked in the window
would be."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from .errors import WorkspaceError
from .paths import Paths
from .records import Attachment

log = logging.getLogger(__name__)

REQUESTS_CHECK_S = 0.5  # how often download requests from other processes are looked for
DOWNLOADS = "downloads"  # the folder of those requests, in the workspace folder


def request_download(paths: Paths, message_id: bytes, index: int) -> Path:
    """Ask the Node running on `paths` (another process) to fetch a file; returns the status
    file it answers in (read it with `download_status`)."""
    folder = paths.workspace_dir / DOWNLOADS
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{message_id.hex()}-{index}"
    status = folder / f"{stem}.status"
    status.unlink(missing_ok=True)
    (folder / f"{stem}.request").touch()
    return status


def download_status(status: Path) -> dict | None:
    """What the Node said of a requested download so far: {done, error} and, while it runs,
    {have, size}; None before it has said anything."""
    try:
        value = json.loads(status.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _write_status(path: Path, status: dict) -> None:
    with contextlib.suppress(OSError):
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".status-",
                                         delete=False, encoding="utf-8") as tmp:
            json.dump(status, tmp)
        os.replace(tmp.name, path)


class DownloadRequests:
    """The Node's side, on its loop. `attachment(message_id, index)` names the file (raising
    a one-line error when there is none), `fetch(list, size, future)` fetches it (the future
    ends when it is here, or with the reason), `on_progress(list, callback)` reports its
    progress (have, size) until the returned function is called."""

    def __init__(self, folder: Path, attachment: Callable[[bytes, int], Attachment],
                 fetch: Callable[[bytes, int, Future], None],
                 on_progress: Callable[[bytes, Callable[[int, int], None]], Callable[[], None]]):
        self.folder = folder
        self._attachment = attachment
        self._fetch = fetch
        self._on_progress = on_progress
        self._taken: set[str] = set()  # request files being served

    async def async_run(self, stop: asyncio.Event) -> None:
        """Take every request left in the folder, answer each in its status file, until
        `stop` is set."""
        while not stop.is_set():
            with contextlib.suppress(OSError):
                for entry in os.scandir(self.folder):
                    if entry.name.endswith(".request") and entry.name not in self._taken:
                        self._taken.add(entry.name)
                        self._take_or_refuse(entry.name)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), REQUESTS_CHECK_S)

    def _answer(self, name: str, status: dict) -> None:
        """The request's last answer: its status written, the request gone and free to be
        made again; when even that fails it stays taken (not tried again and again)."""
        stem = name.removesuffix(".request")
        try:
            _write_status(self.folder / f"{stem}.status", status)
            (self.folder / name).unlink(missing_ok=True)
        except OSError:
            log.exception("a download request could not be answered")
            return
        self._taken.discard(name)

    def _take_or_refuse(self, name: str) -> None:
        """Take a request; one that fails is answered with the reason."""
        try:
            self._take(name)
        except Exception as exc:
            log.exception("a download request failed")
            self._answer(name, {"done": False, "error": str(exc) or type(exc).__name__})

    def _take(self, name: str) -> None:
        stem = name.removesuffix(".request")
        status = self.folder / f"{stem}.status"
        try:
            message_hex, index_text = stem.split("-")
            message_id, index = bytes.fromhex(message_hex), int(index_text)
        except ValueError:
            (self.folder / name).unlink(missing_ok=True)
            self._taken.discard(name)
            return
        try:
            attachment = self._attachment(message_id, index)
        except WorkspaceError as exc:  # no such file, or not readable here
            self._answer(name, {"done": False, "error": str(exc)})
            return
        _write_status(status, {"done": False, "error": None})  # taken

        def progress(have: int, size: int) -> None:
            _write_status(status, {"have": have, "size": size, "done": False, "error": None})

        def finished(future: Future[None]) -> None:
            unsubscribe()
            error = future.exception()
            self._answer(name, {"done": error is None,
                                "error": None if error is None else str(error)})

        unsubscribe = self._on_progress(attachment.list, progress)
        future: Future[None] = Future()
        future.add_done_callback(finished)
        self._fetch(attachment.list, attachment.size, future)
