"""What `hearth serve` and `hearth peers` print for a person (issue #14): one line per event
with names rather than hex keys and no Python log records, a duplicate connection that is
resolved by design not shown as a problem, and peers' times as durations ("3 min ago")."""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

from app.events import NodeEvent, ObjectsStored, PeerConnected, PeerDisconnected, Synced
from sync.peers import PeerBook
from tests.support import wait_until

from .conftest import Hearth
from .test_sync_cli import LOCAL, member_folders, serving

ALICE, BOB, EVE = b"\xaa" * 32, b"\xbb" * 32, b"\xee" * 32
DUPLICATE_S = 3.0  # dial retry (peers.BACKOFF_MIN_S, +20 %) and the dial loop's interval, with room
TIME = re.compile(r"^\d\d:\d\d:\d\d  ")


def _printed(names: dict[bytes, str], *events: NodeEvent) -> list[str]:
    from app.sync_commands import ServeLog  # here: the tests below run against any version

    out: list[str] = []
    shown = ServeLog(lambda: names, out=out.append)
    for event in events:
        shown.event(event)
    assert all(TIME.match(text) for text in out), out
    return [TIME.sub("", text) for text in out]


def _connected(key: bytes, address: str) -> PeerConnected:
    return PeerConnected(online=1, peer=key, address=address)


def _closed(key: bytes | None, address: str, reason: str, **more) -> PeerDisconnected:
    return PeerDisconnected(**{"online": 0, "peer": key, "address": address,
                               "reason": reason, "error": False, "fault": False,
                               "refused_s": 0, "was_connected": True,
                               "duplicate": False} | more)


def _synced(key: bytes, address: str, got: int, sent: int) -> Synced:
    return Synced(peer=key, have=0, need=0, address=address, objects_in=got,
                  objects_out=sent)


def test_serve_lines_name_peers_and_say_what_moved():
    bob = f"bob ({BOB.hex()[:8]})"
    assert _printed(
        {BOB: "bob"},
        _connected(BOB, "192.168.1.20:-"),
        _synced(BOB, "192.168.1.20:-", 4, 2),
        _synced(BOB, "192.168.1.20:-", 4, 2),  # a later round that moved nothing: quiet
        _synced(BOB, "192.168.1.20:-", 5, 2),
        ObjectsStored((b"x" * 32,)),  # written here: no line
        ObjectsStored((b"y" * 32, b"z" * 32), peer=BOB, address="192.168.1.20:-",
                      objects_in=7, objects_out=2),
        _synced(BOB, "192.168.1.20:-", 7, 3),
        _closed(BOB, "192.168.1.20:-", "peer closed: shutting down"),
    ) == [f"connected to {bob} at 192.168.1.20",
          f"in sync with {bob}: 4 in, 2 out",
          f"in sync with {bob}: 1 in, 0 out",
          f"2 new from {bob}",
          f"in sync with {bob}: 0 in, 1 out",
          f"{bob} disconnected (peer closed: shutting down)"]


def test_a_resolved_duplicate_connection_prints_nothing():
    # Each side dialled: one connection is closed by design, the other carries on.
    assert _printed(
        {BOB: "bob"},
        _connected(BOB, "192.168.1.20:7654"),
        _connected(BOB, "192.168.1.20:-"),
        _synced(BOB, "192.168.1.20:7654", 1, 0),
        _closed(BOB, "192.168.1.20:7654", "duplicate connection", duplicate=True),
        _synced(BOB, "192.168.1.20:-", 0, 0),  # the one left carries on: nothing new
        # the peer closed its duplicate before we announced it
        _closed(BOB, "192.168.1.20:-", "peer closed: duplicate connection", duplicate=True,
                was_connected=False),
    ) == [f"connected to bob ({BOB.hex()[:8]}) at 192.168.1.20:7654",
          f"in sync with bob ({BOB.hex()[:8]}): 1 in, 0 out"]


def test_refusals_say_who_and_why_and_peer_text_is_made_safe():
    evil = "\x1b[2Jalice\u202e"
    assert _printed(
        {EVE: evil},
        _connected(EVE, "10.0.0.9:-"),
        _closed(EVE, "10.0.0.9:-", "peer sent an invalid object (bad signature)", error=True,
                fault=True, refused_s=30),
        _closed(EVE, "10.0.0.9:-", "refused for 29 s after protocol faults",
                was_connected=False, refused_s=29),
        _closed(None, "10.0.0.7:-", "handshake failed: wrong secret", error=True,
                was_connected=False),
        _connected(ALICE, "10.0.0.8:7654"),  # no nickname known yet
    ) == [f"connected to \\x1b[2Jalice\\u202e ({EVE.hex()[:8]}) at 10.0.0.9",
          f"refused \\x1b[2Jalice\\u202e ({EVE.hex()[:8]}) at 10.0.0.9: protocol fault: "
          "peer sent an invalid object (bad signature) (identity refused for 30 s)",
          f"refused \\x1b[2Jalice\\u202e ({EVE.hex()[:8]}) at 10.0.0.9: refused for 29 s "
          "after protocol faults (identity refused for 29 s)",
          "no session with 10.0.0.7: handshake failed: wrong secret",
          f"connected to a newcomer ({ALICE.hex()[:8]}) at 10.0.0.8:7654"]


def _free_ports(count: int) -> list[int]:
    """Ports on 127.0.0.1 that were free a moment ago."""
    socks = [socket.socket() for _ in range(count)]
    for sock in socks:
        sock.bind((LOCAL, 0))
    ports = [sock.getsockname()[1] for sock in socks]
    for sock in socks:
        sock.close()
    return ports


def test_serve_prints_events_with_nicknames_and_no_log_records(hearth: Hearth, tmp_path: Path):
    a, b = member_folders(tmp_path)
    keys = {who: hearth("whoami", "--json", data=data).json()["key"][:8]
            for who, data in (("alice", a), ("bob", b))}
    with serving(hearth, a) as serve_a:  # first, each learns the other's nickname
        hearth("sync", "--peer", serve_a.address, "--once", data=b)
        assert serve_a.terminate() == 0
    # Each dials the other: one of the two connections is closed, by design.
    port_a, port_b = _free_ports(2)
    with serving(hearth, a, "--port", str(port_a), "--peer", f"{LOCAL}:{port_b}") as serve_a, \
            serving(hearth, b, "--port", str(port_b), "--peer", f"{LOCAL}:{port_a}") as serve_b:
        alice = f"alice ({keys['alice']})"
        wait_until(lambda: f"connected to bob ({keys['bob']}) at {LOCAL}"
                   in serve_a.out.read_text(), what="a to print bob's line")
        wait_until(lambda: f"connected to {alice} at {LOCAL}" in serve_b.out.read_text()
                   and f"in sync with {alice}: " in serve_b.out.read_text(),
                   what="b to print alice's lines")
        # No event shows a resolved duplicate (by design nothing is printed): give the dial
        # that first found nothing listening time to come round (retry <= 1.2 s + 0.5 s).
        time.sleep(DUPLICATE_S)
        hearth("post", "general", "hello bob", data=a)
        wait_until(lambda: f"1 new from {alice}" in serve_b.out.read_text(),
                   what="b to print what arrived")
        assert serve_b.terminate() == 0
        wait_until(lambda: f"bob ({keys['bob']}) disconnected" in serve_a.out.read_text(),
                   what="a to print that bob left")
        assert serve_a.terminate() == 0
    for serve, data, who in ((serve_a, a, "alice"), (serve_b, b, "bob")):
        out = serve.out.read_text()
        lines = out.splitlines()
        status = hearth("status", "--json", data=data).json()
        # The workspace by its name, me by my nickname (issue 29: both were hex).
        assert lines[0].startswith(f"serving workspace {status['workspace']} "
                                   f"({status['id'][:8]}) as {who} ({keys[who]}) on port "), out
        assert all(TIME.match(text) for text in lines[1:]), out
        assert "sync session with" not in out and "duplicate" not in out, out
        assert out.count("connected to ") == 1, out  # the peer once, not once per connection
        assert serve.stderr == "", serve.stderr  # no INFO records, no warnings: nothing wrong
    # Both dialled, and each dial reached the other (so one connection was a duplicate).
    for data, other in ((a, port_b), (b, port_a)):
        seen = {r["address"]: r["last_seen"] for r in hearth("peers", "--json", data=data).json()}
        assert seen.get(f"{LOCAL}:{other}"), seen


def test_serve_tells_of_a_stranger_refused_at_the_handshake(hearth: Hearth, tmp_path: Path):
    a, _ = member_folders(tmp_path)
    stranger = tmp_path / "stranger"
    hearth("init", "--nick", "mallory", data=stranger)
    with serving(hearth, a) as serve:
        assert "handshake" in hearth.fails("sync", "--peer", serve.address, "--once",
                                           data=stranger)
        wait_until(lambda: re.search(rf"^{TIME.pattern[1:]}refused {LOCAL}: protocol fault: "
                                     r"handshake failed \(wrong workspace secret\?\)",
                                     serve.out.read_text(), re.M),
                   what="serve to tell of the refused stranger")
        assert serve.terminate() == 0
    assert serve.stderr == "", serve.stderr


def test_serve_says_once_that_a_peer_cannot_be_reached(hearth: Hearth, tmp_path: Path):
    """A dialled peer that is down is a line of its own (it was silent), said once: the
    retries that follow, every few seconds, print nothing more until it answers."""
    a, _ = member_folders(tmp_path)
    (port,) = _free_ports(1)  # nothing listens there
    with serving(hearth, a, "--peer", f"{LOCAL}:{port}") as serve:
        wanted = re.compile(rf"^{TIME.pattern[1:]}cannot reach {LOCAL}:{port}: connection "
                            r"refused \(trying again in \d+ s\)$", re.M)
        wait_until(lambda: wanted.search(serve.out.read_text()),
                   what="serve to say the peer cannot be reached")
        time.sleep(DUPLICATE_S)  # the first retries (1 s, then 2 s) come and go, silently
        assert serve.terminate() == 0
    out = serve.out.read_text()
    assert len(wanted.findall(out)) == 1, out
    assert "Error" not in out and serve.stderr == "", out + serve.stderr


# peers ------------------------------------------------------------------------------------------

def test_ago_says_durations():
    from app.sync_commands import ago

    now = 1_800_000_000.0
    assert [ago(t, now) for t in (None, now, now - 40, now - 180, now - 7300, now - 86400,
                                  now - 5 * 86400, now + 60)] == [
        "never", "just now", "40 s ago", "3 min ago", "2 h ago", "1 day ago", "5 days ago",
        "just now"]


def test_peers_shows_durations_and_json_is_unchanged(hearth: Hearth, tmp_path: Path):
    a, _ = member_folders(tmp_path)
    book = PeerBook(a / "workspaces" / "default" / "peers.json")
    now = time.time()
    synced = book.add("192.168.1.20", 7654, "manual")
    synced.key, synced.last_seen, synced.last_sync, synced.last_sync_ms = (
        "3f" * 32, now - 185, now - 7300, 412.4)
    seen = book.add("192.168.1.21", 7654, "manual")
    seen.key, seen.last_seen = "4e" * 32, now - 30 * 60 - 20
    book.save()
    lines = hearth("peers", data=a).stdout.splitlines()
    assert lines == [
        f"192.168.1.20:7654  key {'3f' * 8}  last seen 3 min ago  last sync 2 h ago (412 ms)",
        f"192.168.1.21:7654  key {'4e' * 8}  last seen 30 min ago  last sync never"], lines
    records = hearth("peers", "--json", data=a).json()
    assert [(r["address"], r["last_seen"], r["last_sync"], r["last_sync_ms"])
            for r in records] == [("192.168.1.20:7654", now - 185, now - 7300, 412.4),
                                  ("192.168.1.21:7654", now - 30 * 60 - 20, None, None)]
    assert records == json.loads(hearth("peers", "--json", data=a).stdout)
