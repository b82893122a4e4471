"""The peer book: addresses we know, when we last saw and synced them, and when to retry."""

from __future__ import annotations

import json
import logging
import os
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

BACKOFF_MIN_S = 1.0
BACKOFF_MAX_S = 60.0
FORGET_AFTER_FAILURES = 20  # discovered peers that never answer again are dropped


class AddressError(ValueError):
    """A peer address that is not HOST:PORT."""


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise AddressError(f"{text!r} is not HOST:PORT (for example 192.168.1.20:7654)")
    return host, int(port)


@dataclass
class Peer:
    host: str
    port: int
    source: str = "manual"  # manual | mdns | remembered
    key: str | None = None  # hex Ed25519 key, once a session proved it
    last_seen: float | None = None  # wall-clock seconds
    last_sync: float | None = None
    last_sync_ms: float | None = None
    last_error: str | None = None
    failures: int = 0
    next_attempt: float = 0.0  # monotonic seconds
    stats: dict = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def failed(self, error: str, now: float) -> None:
        self.failures += 1
        self.last_error = error
        delay = min(BACKOFF_MAX_S, BACKOFF_MIN_S * 2 ** min(self.failures - 1, 10))
        self.next_attempt = now + delay * random.uniform(0.8, 1.2)

    def succeeded(self, wall: float) -> None:
        self.failures = 0
        self.last_error = None
        self.last_seen = wall


class PeerBook:
    """Known peers by address; peers that worked are remembered in a JSON file."""

    def __init__(self, path: Path | None):
        self.path = path
        self.peers: dict[str, Peer] = {}
        self._load()

    def _load(self) -> None:
        if self.path is None or not self.path.exists():
            return
        try:
            records = json.loads(self.path.read_text())
            for record in records:
                peer = Peer(host=str(record["host"]), port=int(record["port"]),
                            source="remembered", key=record.get("key"),
                            last_seen=record.get("last_seen"), last_sync=record.get("last_sync"),
                            last_sync_ms=record.get("last_sync_ms"),
                            stats=dict(record.get("stats") or {}))
                self.peers[peer.address] = peer
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring unreadable peer list %s: %s", self.path, exc)

    def save(self) -> None:
        if self.path is None:
            return
        worked = [{"host": p.host, "port": p.port, "key": p.key, "last_seen": p.last_seen,
                   "last_sync": p.last_sync, "last_sync_ms": p.last_sync_ms, "stats": p.stats}
                  for p in self.peers.values() if p.last_seen]
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:  # private: it says who this computer talks to, and where they are
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                os.fchmod(f.fileno(), 0o600)  # also when an older version left it 0644
                f.write(json.dumps(worked, indent=1))
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("cannot save peer list %s: %s", self.path, exc)

    def add(self, host: str, port: int, source: str) -> Peer:
        address = f"{host}:{port}"
        peer = self.peers.get(address)
        if peer is None:
            peer = self.peers[address] = Peer(host, port, source)
        elif source == "manual":
            peer.source = "manual"
        if source == "mdns":
            peer.next_attempt = 0.0  # a fresh advert: try now
        return peer

    def due(self, now: float) -> list[Peer]:
        return [p for p in self.peers.values() if p.next_attempt <= now]

    def forget_dead(self) -> None:
        for address, peer in list(self.peers.items()):
            if peer.source == "mdns" and peer.failures >= FORGET_AFTER_FAILURES:
                del self.peers[address]

    def as_records(self) -> list[dict]:
        return [asdict(p) | {"address": p.address} for p in self.peers.values()]
