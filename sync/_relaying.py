"""The sync service's relays (docs/relay.md): the one RelayLink of a running node. Owned by
SyncService (`service.relaying`).

What a relay hands over takes the service's storing path, as a peer's objects do, so it is
checked, stored, pushed to the LAN peers and told as ObjectsStored like any other arrival;
what becomes new here (typed, or from a LAN peer) is offered to the relays by the service's
pushes (`offer`). Typing and presence go out as signals (`typing`, `presence`, `left`) and
come back as the same PeerTyping / PeerPresence events as on the LAN, from members only; a
presence meant for some readers (a private document) never goes through a relay. Every
HERE_INTERVAL_S the node says it is here, so the members reached through a relay are known
(`online`) and the window can say "via relay".
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from core.encoding import EncodingError, dumps, loads

from ._presence import PRESENCE_TTL_S, TYPING_TTL_S
from .events import PeerPresence, PeerPresenceLeft, PeersChanged, PeerTyping, SyncEvent
from .relay_client import RelayLink, RelayState

if TYPE_CHECKING:
    from .service import SyncService

log = logging.getLogger(__name__)

HERE_INTERVAL_S = 20.0  # how often this node tells the members on a relay it is here
HERE_TTL_S = 2.5 * HERE_INTERVAL_S  # a member not heard from for this long is not "here"
TYPING_INTERVAL_S = 3.0  # at most one typing signal a channel in this long
MAX_NAME = 200  # characters of a channel or branch name in a signal
MAX_HEADS = 64


class _RelaySession:
    """What the storing path asks of a connection's session, for the relays' arrivals: a
    relay is no author, so an object that fails its checks is dropped and logged, and the
    link stays (a relay can withhold, never forge)."""

    peer_key = None
    closed = False

    def __init__(self) -> None:
        self.rejected = 0
        self.rounds = self

    def stored(self, count: int) -> None:
        pass

    def protocol_error(self, reason: str) -> None:
        self.rejected += 1
        log.warning("dropped an object that came through a relay: %s", reason)

    def close(self, reason: str) -> None:
        log.warning("objects from a relay were not stored: %s", reason)


class _RelaySource:
    """The storing path's `connection` for what the relays hand over."""

    address = "relay"
    peer = None

    def __init__(self) -> None:
        self.session = _RelaySession()

    def wake(self) -> None:
        pass


def _signal(kind: str, **fields: Any) -> bytes:
    return dumps({"k": kind, **fields})


class Relaying:
    def __init__(self, service: SyncService):
        self.service = service
        self.link: RelayLink | None = None
        self.source = _RelaySource()
        self._here: dict[bytes, float] = {}  # member key -> time.monotonic() last heard
        self._typing_sent: dict[str, float] = {}
        self._last_online: set[bytes] = set()  # the members last told as heard
        self._here_said = 0.0  # time.monotonic() this node last said it is here

    # Lifecycle ---------------------------------------------------------------------------

    async def start(self, link: RelayLink) -> None:
        """Run `link` (made with `objects` and `signal` as its callbacks) from now on."""
        self.link = link
        await link.start()
        self.service.spawn(self._here_loop())

    async def close(self) -> None:
        if self.link is not None:
            link, self.link = self.link, None
            await link.close()

    def renew(self) -> None:
        """A new epoch's secret is held (SyncService.set_secrets)."""
        if self.link is not None:
            self.link.renew()

    def states(self) -> list[RelayState]:
        return list(self.link.states.values()) if self.link is not None else []

    @property
    def connected(self) -> bool:
        return any(state.connected for state in self.states())

    # Objects -----------------------------------------------------------------------------

    def objects(self, raws: list[bytes]) -> None:
        """RelayLink's `on_objects`: what opened goes to the storing path."""
        if not self.service.stopped and raws:
            self.service.storing.objects(self.source, raws)
            self.service.storing.pump()

    def offer(self, raws: list[bytes]) -> bool:
        """Objects new here, for the relays connected now; whether any relay took them."""
        if self.link is None or not raws or not self.connected:
            return False
        self.link.offer(raws)
        return True

    # Signals ------------------------------------------------------------------------------

    def typing(self, channel: str) -> None:
        now = time.monotonic()
        if self.link is None or now - self._typing_sent.get(channel, -1e9) < TYPING_INTERVAL_S:
            return
        self._typing_sent[channel] = now
        self.link.send_signal(_signal("typing", c=channel))

    def presence(self, doc: bytes, branch: str, heads: list[bytes], anchor: int, at: int,
                 readers: frozenset[bytes] | None) -> None:
        if self.link is not None and readers is None:
            self.link.send_signal(_signal("presence", d=doc, b=branch, h=list(heads),
                                          a=anchor, t=at))

    def left(self, doc: bytes) -> None:
        if self.link is not None:
            self.link.send_signal(_signal("left", d=doc))

    def signal(self, sender: bytes, body: bytes) -> None:
        """RelayLink's `on_signal`: another member's signal (its signature checked), told as
        the LAN's events; from anyone the membership does not let in, or malformed: dropped."""
        admission = self.service.admission
        if admission is not None and admission.allow(sender, False) is not None:
            return
        try:
            event = _event(sender, loads(body))
        except (EncodingError, KeyError, TypeError, ValueError):
            log.debug("dropped a malformed signal from a relay")
            return
        first = sender not in self._here
        self._here[sender] = time.monotonic()
        if event is not None:
            self.service.on_event(event)
        if first:  # a member who just came: they hear of us now, not at our next "here"
            self._say_here()
            self._told_online()

    def online(self) -> set[bytes]:
        """The members heard through a relay lately."""
        cutoff = time.monotonic() - HERE_TTL_S
        for key in [k for k, at in self._here.items() if at < cutoff]:
            del self._here[key]
        return set(self._here) if self.connected else set()

    def _told_online(self) -> None:
        """Told as PeersChanged when who is heard through the relays changed."""
        relayed = self.online()
        if relayed != self._last_online:
            self._last_online = relayed
            self.service.on_event(PeersChanged(len(self.service.online())))

    def _say_here(self) -> None:
        now = time.monotonic()
        if self.link is not None and self.connected and now - self._here_said >= 1.0:
            self._here_said = now
            self.link.send_signal(_signal("here"))

    async def _here_loop(self) -> None:
        while not self.service.stopped and self.link is not None:
            if self.connected:
                self._here_said = 0.0
                self._say_here()
            self._told_online()  # members whose "here" lapsed, relays that came or went
            await self.service.pause(min(HERE_INTERVAL_S, 2.0) if not self.connected
                                     else HERE_INTERVAL_S)


def _event(sender: bytes, body: dict) -> SyncEvent | None:
    kind = body["k"]
    now = time.monotonic()
    if kind == "here":
        return None
    if kind == "typing":
        return PeerTyping(sender, _text(body["c"]), now + TYPING_TTL_S)
    if kind == "presence":
        heads = body["h"]
        if not isinstance(heads, list) or len(heads) > MAX_HEADS or not all(
                isinstance(h, bytes) and len(h) == 32 for h in heads):
            raise ValueError("heads")
        return PeerPresence(sender, _doc(body["d"]), _text(body["b"]), tuple(heads),
                            _count(body["a"]), _count(body["t"]), now + PRESENCE_TTL_S)
    if kind == "left":
        return PeerPresenceLeft(sender, _doc(body["d"]))
    raise ValueError(f"unknown signal {kind!r}")


def _text(value: object) -> str:
    if not isinstance(value, str) or len(value) > MAX_NAME:
        raise ValueError("name")
    return value


def _doc(value: object) -> bytes:
    if not isinstance(value, bytes) or len(value) != 32:
        raise ValueError("doc")
    return value


def _count(value: object) -> int:
    if not isinstance(value, int) or not 0 <= value < 1 << 40:
        raise ValueError("position")
    return value
