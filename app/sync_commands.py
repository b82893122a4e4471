"""`hearth` commands for sharing a workspace: serve, sync, peers, invite, join-workspace,
leave-workspace, export and import. Each calls the library (app.node, app.sharing,
app.workspaces); no logic of its own."""

from __future__ import annotations

import argparse
import contextlib
import logging
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from core import kinds
from sync.peers import PeerBook

from . import _text, keeping, sharing, sync_status
from ._command import (
    LOG_FORMAT,
    CLIError,
    channel_arg,
    errors,
    hinted,
    node_options,
    open_workspace,
    paths_of,
    peer_addresses,
    print_json,
    seconds,
)
from .durations import ago
from .events import (
    HistoryProgressed,
    ObjectsStored,
    PeerConnected,
    PeerDisconnected,
    PeerUnreachable,
    Removed,
    Synced,
)
from .keep_commands import kept_json, kept_text
from .names import NickBook
from .notify_rules import Alert
from .records import HistoryProgress

if TYPE_CHECKING:
    from .events import NodeEvent

MAX_SYNC_S = 24 * 3600.0  # the longest `hearth sync --timeout`


def cmd_serve(args: argparse.Namespace) -> None:
    from .errors import NodeError
    from .node import Node  # imported here: other commands start faster

    # What a person needs is printed from the Node's events (ServeLog); Python's log records
    # show only real problems (WARNING and above), or everything with --verbose.
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format=LOG_FORMAT, stream=sys.stderr)
    if not args.verbose:  # how each session ended is a line of its own (ServeLog)
        logging.getLogger("sync.service").setLevel(logging.ERROR)
    node = Node(paths_of(args), port=args.port, interfaces=args.interface or None,
                mdns=not args.no_mdns, peers=peer_addresses(args.peer))
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    events: queue.SimpleQueue = queue.SimpleQueue()
    unsubscribe = node.subscribe(events.put)  # called on the Node's thread: never waits
    try:
        node.start()
    except NodeError as exc:
        raise CLIError(str(exc)) from None
    shown = ServeLog(lambda: node.run(lambda ws: ws.nicknames()).result(NAMES_TIMEOUT_S))
    removal = node.removal()
    removed = None
    if removal is not None:  # removed while this computer was away: it serves no one
        names: dict[bytes, str] = {}
        with contextlib.suppress(Exception):
            names = node.run(lambda ws: ws.nicknames()).result(NAMES_TIMEOUT_S)
        removed = removed_line(removal.by, removal.at_ms, removal.reason,
                               names.get(removal.by))
    notes = None  # --notify: the window's notifications, here (app/notify_commands.py)
    try:
        if removed is None:
            me = _text.line(node.run(lambda ws: ws.nickname()).result(NAMES_TIMEOUT_S) or "") or "you"
            print(f"serving workspace {_text.line(node.info.name)} "
                  f"({node.workspace_id.hex()[:8]}) as {me} ({node.key.hex()[:8]}) on port "
                  f"{node.port}", flush=True)
            if args.notify:
                from .notify_commands import ServeNotifications
                notes = ServeNotifications(node, events.put, shown.say)
        while not stop.is_set() and removed is None:
            with contextlib.suppress(queue.Empty):
                event = events.get(timeout=0.2)
                if isinstance(event, Alert) and notes is not None:
                    notes.shown(event)
                shown.event(event)
                if isinstance(event, Removed):
                    removed = removed_line(event.by, event.at_ms, event.reason, event.nick)
            if notes is not None:
                notes.tick()
    finally:
        if notes is not None:
            notes.close()
        node.stop()
        unsubscribe()
        while not events.empty():  # how the sessions ended when we stopped
            shown.event(events.get())
    if removed is not None:
        raise CLIError(removed)


def removed_line(by: bytes, at_ms: int, reason: str, nick: str | None) -> str:
    """"removed from this workspace by bob (3f2126de) on 2026-11-28 14:02 UTC: left the
    team": why `hearth serve` stops on a computer whose key was removed."""
    who = f"{_text.line(nick)} ({by.hex()[:8]})" if nick else by.hex()[:8]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at_ms / 1000))
    why = f": {_text.line(reason)}" if reason else " (no reason given)"
    return f"removed from this workspace by {who} on {when}{why}"


NAMES_TIMEOUT_S = 5.0
HISTORY_EVERY_S = 2.0  # `hearth serve` prints "Syncing history" at most this often
ARRIVING_SHOWN = 5  # channels named in "still arriving: ..."


def history_line(progress: HistoryProgress, names: dict[str, str] | None = None) -> str:
    """"Syncing history: 412,000 of 1,000,000", and with `names` (channel key: name) "(still
    arriving: general, design)"."""
    text = f"Syncing history: {progress.here:,} of {progress.total:,}"
    if names is None or not progress.channels:
        return text
    arriving = sorted(_text.line(names.get(key, key)) for key in progress.channels)
    more = len(arriving) - ARRIVING_SHOWN
    return (f"{text} (still arriving: {', '.join(arriving[:ARRIVING_SHOWN])}"
            + (f" and {more} more)" if more > 0 else ")"))


class ServeLog:
    """What `hearth serve` prints: one line per event a person cares about, on the main
    thread. "14:02:11  connected to bob (3f2126de) at 192.168.1.20", "in sync with bob: 4 in,
    2 out" (objects moved since the last such line; silent while nothing moves), "1 new from
    bob" (pushed live, after the first sync), "bob disconnected (…)", "refused 10.0.0.9: protocol fault (…) (identity refused for 30 s)", "cannot reach
    10.0.0.9:7654: connection refused (trying again in 2 s)" (once, until it answers),
    "Syncing history: 412,000 of 1,000,000" (at most every HISTORY_EVERY_S while history
    arrives) and "History here: 1,000,000 objects" once it is over. A fetch over within
    HISTORY_EVERY_S prints neither: its "in sync" line says it. A duplicate connection closed
    by design (each side dialled) prints nothing. `names` returns the replica's nicknames;
    everything a peer chose passes through `_text.line`."""

    def __init__(self, names: Callable[[], dict[bytes, str]], *,
                 out: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.time):
        self._names = names
        self._book = NickBook({})
        self._out = out or (lambda text: print(text, flush=True))
        self._clock = clock
        self._open: dict[bytes, int] = {}  # connections announced, by peer key
        self._moved: dict[tuple[bytes, str], tuple[int, int]] = {}  # (in, out) printed
        self._in_sync: set[bytes] = set()  # peers told "in sync" while connected
        self._history_at: float | None = None  # history arriving: when it began or was told
        self._history_told = False  # a "Syncing history" line was printed for this fetch

    def event(self, event: NodeEvent) -> None:
        match event:
            case PeerConnected(peer=key, address=address):
                self._connected(key, address)
            case PeerDisconnected():
                self._closed(event)
            case Synced(peer=bytes() as key, address=address, objects_in=got, objects_out=sent):
                self._synced(key, address, got, sent)
            case ObjectsStored(peer=bytes() as key, address=str() as address):
                self._arrived(key, address, len(event.ids), event.objects_in)
            case HistoryProgressed(progress=progress):
                self._history(progress)
            case PeerUnreachable(address=address, reason=reason, retry_s=retry_s):
                self._say(f"cannot reach {address}: {_text.line(reason)} "
                          f"(trying again in {retry_s} s)")

    def say(self, text: str) -> None:
        """A line of its own, after the time."""
        self._say(text)

    def _say(self, text: str) -> None:
        self._out(time.strftime("%H:%M:%S", time.localtime(self._clock())) + "  " + text)

    def who(self, key: bytes, unknown: str = "a newcomer") -> str:
        """bob (3f2126de), with a warning when another key's nickname looks like bob;
        `unknown` (a newcomer (3f2126de), while they join) when no nickname is held."""
        if key not in self._book.nicks:
            with contextlib.suppress(Exception):  # the node may be stopping: names known so far
                self._book = NickBook(self._names())
        warning = self._book.warning(key)
        name = self._book.nick(key) if key in self._book.nicks else unknown
        return (f"{name} ({key.hex()[:8]}"
                + (f", {warning})" if warning else ")"))

    def _connected(self, key: bytes, address: str) -> None:
        self._open[key] = self._open.get(key, 0) + 1
        if self._open[key] == 1:  # a second connection to the same peer is no news
            self._say(f"connected to {self.who(key)} at {_host(address)}")

    def _synced(self, key: bytes, address: str, got: int, sent: int) -> None:
        before = self._moved.get((key, address))
        self._moved[(key, address)] = (got, sent)
        if before is None and key in self._in_sync:
            before = (0, 0)  # a second connection to a peer already in sync: only news
        if before is None or before != (got, sent):
            old_in, old_out = before or (0, 0)
            self._say(f"in sync with {self.who(key)}: {got - old_in} in, {sent - old_out} out")
        self._in_sync.add(key)

    def _arrived(self, key: bytes, address: str, count: int, got: int) -> None:
        """Objects pushed live by a peer: told at once once the first sync is told (a
        catch-up's batches are summed up by its "in sync" line instead)."""
        before = self._moved.get((key, address))
        if before is None and key in self._in_sync:
            before = (0, 0)
        if before is None:
            return
        self._moved[(key, address)] = (got, before[1])
        self._say(f"{count} new from {self.who(key)}")

    def _history(self, progress: HistoryProgress) -> None:
        now = self._clock()
        if progress.done:
            if self._history_told:
                self._say(f"History here: {progress.here:,} objects")
            self._history_at, self._history_told = None, False
        elif self._history_at is None:
            self._history_at = now
        elif not 0 <= now - self._history_at < HISTORY_EVERY_S:  # a clock set back: told too
            self._history_at, self._history_told = now, True
            self._say(history_line(progress))

    def _closed(self, closed: PeerDisconnected) -> None:
        key, address = closed.peer, closed.address
        reason = _text.line(closed.reason)
        if key is not None:
            self._moved.pop((key, address), None)
        if closed.was_connected and key is not None:
            self._open[key] = self._open.get(key, 1) - 1
            if self._open[key] <= 0:
                del self._open[key]
                self._in_sync.discard(key)
        if closed.duplicate:
            return  # closed by design: the other connection to this peer carries on
        refused = closed.refused_s
        if closed.fault or (not closed.was_connected and key is not None):
            whom = f"{self.who(key, 'an unknown peer')} at {_host(address)}" if key \
                else _host(address)
            why = f"protocol fault: {reason}" if closed.fault else reason
            self._say(f"refused {whom}: {why}"
                      + (f" (identity refused for {refused} s)" if refused else ""))
        elif key is None:
            self._say(f"no session with {_host(address)}: {reason}")
        elif key not in self._open:
            self._say(f"{self.who(key)} disconnected ({reason})")


def _host(address: str) -> str:
    """"192.168.1.20:7654" as it is; "192.168.1.20" for a peer that dialled us ("…:-")."""
    host, _, port = address.rpartition(":")
    return _text.line(host if port == "-" else address)


def cmd_sync(args: argparse.Namespace) -> None:
    (host, port), = peer_addresses([args.peer])
    if not args.once:
        raise CLIError("only `--once` is supported here; `hearth serve` keeps syncing")
    from sync.service import SyncFailed  # imported here: other commands start without aiohttp

    try:
        result = sharing.sync_once(paths_of(args), host, port, timeout=args.timeout)
    except SyncFailed as exc:
        raise CLIError(str(exc)) from None
    print(f"in sync with {host}:{port}: {result.objects_received} objects in, "
          f"{result.objects_sent} out, {result.rounds} rounds, {result.ms:.0f} ms")


def cmd_peers(args: argparse.Namespace) -> None:
    paths = paths_of(args)
    records = PeerBook(paths.workspace_dir / "peers.json").as_records()
    if args.json:
        print_json(records)
        return
    if not records:
        print(hinted("no known peers yet: run `hearth serve` (peers on this network are "
                     "found automatically) or add one with `hearth serve --peer HOST:PORT`",
                     args))
    now = time.time()
    for r in records:
        print(f"{_text.line(r['address'])}  key {_text.line((r['key'] or '?')[:16])}  "
              f"last seen {ago(r['last_seen'], now)}  last sync {ago(r['last_sync'], now)}"
              + (f" ({r['last_sync_ms']:.0f} ms)" if r.get("last_sync_ms") else ""))


def cmd_status(args: argparse.Namespace) -> None:
    """What this computer holds of the workspace, what it keeps, and the history a running
    `hearth serve` (or window) is still fetching (app.sync_status)."""
    with open_workspace(args) as ws:
        channels = ws.channels()
        documents = len(ws.documents.all())
        objects = ws.replica.count()
        kept = keeping.kept(ws)
        kept_shown = kept_json(ws, kept) if args.json else kept_text(ws, kept)
        name, workspace_id = ws.name, ws.id.hex()
        progress = sync_status.read(ws.paths.workspace_dir)
    if progress is not None and progress.done:
        progress = None
    names = {kinds.channel_key(c.name): c.name for c in channels}
    if args.json:
        print_json({"workspace": name, "id": workspace_id, "channels": len(channels),
                    "documents": documents, "objects": objects, "kept": kept_shown,
                    "history": None if progress is None else {
                        "here": progress.here, "total": progress.total,
                        "channels": sorted(names.get(k, k) for k in progress.channels)}})
        return
    print(f"workspace {_text.line(name)}: {_count(len(channels), 'channel')}, "
          f"{_count(documents, 'document')}, {objects:,} objects held")
    print(f"keeping {kept_shown}")
    print(history_line(progress, names) if progress else "No history arriving.")


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def cmd_leave_workspace(args: argparse.Namespace) -> None:
    from .workspaces import leave_workspace

    data = paths_of(args).data
    leave_workspace(data, args.name)
    print(f"left {_text.line(args.name)}: its replica is removed from {_text.line(str(data))}")


def cmd_export(args: argparse.Namespace) -> None:
    count = sharing.export_bundle(paths_of(args), Path(args.file), channel=args.channel)
    print(f"{count} objects written to {args.file}")


def cmd_import(args: argparse.Namespace) -> None:
    counts = sharing.import_bundle(paths_of(args), Path(args.file))
    print(_text.json_text(counts, indent=None) if args.json else
          f"{counts['added']} added, {counts['duplicate']} already here, "
          f"{counts['rejected']} rejected" + (
              f", {counts['refused']} refused (their authors are blocked on this computer)"
              if counts.get("refused") else ""))


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    def add(name: str, handler: Callable, help: str) -> argparse.ArgumentParser:
        parser = sub.add_parser(name, help=help, description=help)
        common(parser)
        parser.set_defaults(handler=errors(handler))
        return parser

    p = add("serve", cmd_serve, "run a headless node: sync with peers until stopped")
    node_options(p)
    p.add_argument("--notify", action="store_true",
                   help="raise notifications as the window does (`hearth notify` sets them): "
                   "printed, and on the desktop's notification service when there is one")
    p.add_argument("--verbose", action="store_true",
                   help="also print the sync layer's log records (INFO and above) on stderr")
    p = add("sync", cmd_sync, "reconcile with one peer")
    p.add_argument("--peer", required=True, metavar="HOST:PORT")
    p.add_argument("--once", action="store_true", help="reconcile once, then exit")
    p.add_argument("--timeout", type=seconds(MAX_SYNC_S), default=60.0,
                   help=f"seconds, at most {MAX_SYNC_S:g} (default 60)")
    p = add("peers", cmd_peers, "known peers with last-seen and last-sync figures")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = add("status", cmd_status, "what this computer holds of the workspace, what it keeps, "
            "and the history still arriving")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = add("leave-workspace", cmd_leave_workspace,
            "remove this computer's replica of a workspace (not one a running Hearth has open)")
    p.add_argument("name", metavar="NAME", help="the workspace's folder name")
    p = add("export", cmd_export, "write the workspace (or one channel) to a bundle file")
    p.add_argument("file")
    p.add_argument("--channel", type=channel_arg, help="only this channel (and what it needs)")
    p = add("import", cmd_import, "ingest a bundle file written by `hearth export`")
    p.add_argument("file")
    p.add_argument("--json", action="store_true", help="print JSON")


