"""Converting and signing a Slack import's public channels in helper processes, one per core,
while the importer's process stores what they send (app/slack_import.py; bench/import_slack.py).

Converting markup and signing is most of an import's work, and threads cannot share it (the
Python around each signature holds the GIL). Each helper is a plain subprocess (`python -m
app._slack_worker`, or the packaged app's `hearth --slack-worker`, as storage._verify's are),
spoken to over its stdin/stdout with length-prefixed pickles. It is told once the importer's
key (its seed, over the pipe only: never logged or written) and the export's path, names and
channels, then takes whole channels one at a time: a channel's objects link in a chain, so one
helper makes all of them, in order, with app/slack_convert.Converter, the code the importer
runs itself otherwise. They come back in batches as they are made (objects the importer built
and signed, stored without checking again: Replica.ingest_own), then the channel's counts.
The importer waits for a batch when it has nothing else to do; the pipes are bounded, so a
helper waits when the importer has not stored what it sent.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from core.identity import Identity
from core.objects import Object
from storage._verify import CLOSE_TIMEOUT_S, HELPER_NICENESS, end_process, processes

from .slack_convert import Converter, ImportSummary
from .slack_export import Conversation, ExportError, SlackExport

_LENGTH = struct.Struct(">Q")
Job = tuple[Conversation, str, bytes]  # (Slack channel, Hearth channel, its stream)


class HelpersUnavailable(OSError):
    """No helper process could start: nothing was converted, the importer does it itself."""


def _write(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=5)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _read(stream: IO[bytes]) -> Any:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError
    (size,) = _LENGTH.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)  # only from a helper this process started


def worker_main() -> int:
    """The helper's loop: the setup, then one channel after another until stdin closes."""
    with contextlib.suppress(AttributeError, OSError):
        os.nice(HELPER_NICENESS)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    try:
        setup = _read(stdin)
    except EOFError:
        return 0
    identity = Identity.from_seed(setup["seed"])
    with SlackExport(Path(setup["export"])) as export:
        export.checked_as(setup["fingerprint"])
        while True:
            try:
                conv, channel, stream = _read(stdin)
            except EOFError:
                return 0
            summary = ImportSummary()
            converter = Converter(identity, export, setup["users"], setup["channel_names"],
                                  summary)
            try:
                for batch in converter.channel(conv, channel, stream, {}, None):
                    _write(stdout, ("batch", *batch))
            except ExportError as exc:  # the export changed since it was checked
                _write(stdout, ("error", str(exc)))
                return 1
            _write(stdout, ("done", asdict(summary)))


def _command() -> list[str]:
    if getattr(sys, "frozen", False):  # a packaged app runs itself in helper mode
        return [sys.executable, "--slack-worker"]
    return [sys.executable, "-m", "app._slack_worker"]


class _Helper:
    """One helper process and the thread that feeds it channels and reads what it sends."""

    def __init__(self, setup: dict, jobs: queue.Queue[Job], out: queue.Queue,
                 stopping: threading.Event) -> None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [root, *filter(None, [os.environ.get("PYTHONPATH")])])}
        self._proc = subprocess.Popen(_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      env=env, cwd=root)
        self._jobs, self._out, self._stopping = jobs, out, stopping
        self._thread = threading.Thread(target=self._run, args=(setup,), daemon=True,
                                        name="slack-import-helper")
        self._thread.start()

    def _run(self, setup: dict) -> None:
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        try:
            _write(stdin, setup)
            while True:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                _write(stdin, job)
                while True:
                    answer = _read(stdout)
                    if not self._put(answer) or answer[0] == "error":
                        return
                    if answer[0] == "done":
                        break
        except (OSError, EOFError, ValueError, pickle.PickleError) as exc:
            self._put(("error", f"a helper of the import failed ({exc})"))
        finally:
            self._put(("exit",))

    def _put(self, answer: tuple) -> bool:
        """Hand an answer to the importer, waiting while it is busy; False once it stopped
        taking them."""
        while not self._stopping.is_set():
            try:
                self._out.put(answer, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def close(self, *, kill: bool = False) -> None:
        if kill:
            self._proc.kill()
        end_process(self._proc)
        self._thread.join(CLOSE_TIMEOUT_S)


def convert(identity: Identity, export: SlackExport, users: dict[str, str],
            channel_names: dict[str, str], jobs: list[Job], processes: int
            ) -> Iterator[tuple[list[Object], int, int] | ImportSummary]:
    """Each channel of `jobs` converted and signed in one of `processes` helpers: its
    batches (objects, messages, messages passed over), as they come, and once it is done,
    its counts (an ImportSummary). ExportError when a helper could not finish;
    HelpersUnavailable, before anything, when none can start."""
    pending: queue.Queue[Job] = queue.Queue()
    for job in jobs:
        pending.put(job)
    # at most a few batches wait per helper: memory stays bounded, the pipes hold the rest
    out: queue.Queue = queue.Queue(maxsize=3 * processes)
    setup = {"seed": identity.seed(), "export": str(export.path), "users": users,
             "channel_names": channel_names, "fingerprint": export.fingerprint()}
    helpers: list[_Helper] = []
    stopping = threading.Event()
    finished = False
    try:
        for _ in range(min(processes, len(jobs))):
            try:
                helpers.append(_Helper(setup, pending, out, stopping))
            except OSError:  # cannot start one (a packaged app's odd install?)
                if not helpers:
                    raise HelpersUnavailable from None
                break
        running = len(helpers)
        while running:
            answer = out.get()
            if answer[0] == "batch":
                yield answer[1], answer[2], answer[3]
            elif answer[0] == "done":
                yield ImportSummary(**answer[1])
            elif answer[0] == "error":
                why = answer[1].removesuffix("; nothing was imported")
                raise ExportError(f"{why}; the import stopped there")
            else:
                running -= 1
        finished = True
    finally:
        stopping.set()  # a helper thread waiting to hand over an answer gives up
        for helper in helpers:
            helper.close(kill=not finished)


def helpers() -> int:
    """How many helper processes an import uses: as many as the signature helpers
    (storage._verify.processes: one per core, none on a single core)."""
    return processes()
