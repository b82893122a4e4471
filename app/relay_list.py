"""The relays a workspace's objects name (docs/relay.md): per relay key, the latest (ts, id)
`workspace/relay` object by a current admin counts, and names it while `active` (an admin's
grant that ends takes their relays with it, as it takes their other powers). Computed from the
objects on each call; app.relays names and takes back relays, and runs the links."""

from __future__ import annotations

from dataclasses import dataclass

from core.objects import Object
from storage import Replica
from sync.relay_client import RelayAddress

KIND = "workspace/relay"


@dataclass(frozen=True)
class Relay:
    host: str
    port: int
    key: bytes
    by: bytes  # the admin who named it
    at_ms: int

    @property
    def address(self) -> RelayAddress:
        return RelayAddress(self.host, self.port, self.key)

    @property
    def hostport(self) -> str:
        return self.address.hostport


def relays(replica: Replica) -> list[Relay]:
    """The relays named now, in the order they were named."""
    latest: dict[bytes, Object] = {}
    for admin in replica.admins():
        for oid in replica.posts_by(admin, KIND):
            obj = replica.object(oid)
            if obj.stream != replica.workspace.id:
                continue
            key = obj.body["key"]
            held = latest.get(key)
            if held is None or (obj.ts, obj.id) > (held.ts, held.id):
                latest[key] = obj
    named = [Relay(o.body["host"], o.body["port"], o.body["key"], o.author, o.ts)
             for o in latest.values() if o.body["active"]]
    return sorted(named, key=lambda r: (r.at_ms, r.key))


def code_relays(replica: Replica) -> tuple[tuple[str, int, bytes], ...]:
    """The relays an invite or personal code names (app.invite's CodeRelay)."""
    return tuple((r.host, r.port, r.key) for r in relays(replica))
