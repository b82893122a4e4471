"""Invites made and people admitted on a real Node become schema-4 invite_created and
member_admitted events (app/activity.py): an invite's uses and lifetime as buckets, an admission
only as "invite" or "personal", and nothing that names the invite, the workspace or the person
let in."""

from __future__ import annotations

import json
import time

from analytics.events import validate
from analytics.recorder import Recorder
from app import sharing
from app.activity import Activity
from app.invite import Invite
from app.membership import invite_tag
from app.paths import Paths
from core.identity import Identity
from core.objects import build
from tests.support import TIMEOUT_S, Cluster, create_workspace

LOCAL = "127.0.0.1"
NICK = "zorro-inviter"
NEWCOMER = "quill-newcomer"
HOUR_MS = 3_600_000
# (uses, lifetime in ms or None for never) of each invite made, and the buckets they become.
INVITES = [((1, HOUR_MS), ("one", "hour")),
           ((5, 24 * HOUR_MS), ("few", "day")),
           ((37, 7 * 24 * HOUR_MS), ("many", "week")),
           ((2, 30 * 24 * HOUR_MS), ("few", "longer")),
           ((0, None), ("any", "never"))]


def spooled(recorder: Recorder) -> list[str]:
    taken = recorder.take_batch(1000)
    return taken[1] if taken else []


def done(future):
    return future.result(timeout=TIMEOUT_S)


def bare(event: dict) -> dict:
    return {k: v for k, v in event.items() if k not in ("ts", "pid")}


def test_invites_and_admissions_on_a_node_are_counted_in_buckets_and_name_no_one(tmp_path):
    paths = create_workspace(tmp_path, "a", NICK)
    Recorder(paths.data).enable()
    carol = Identity.generate().public_key
    with Cluster(tmp_path) as cluster:
        node = cluster.start(paths)
        codes = []
        for (uses, lifetime), _ in INVITES:
            expires = int(time.time() * 1000) + lifetime if lifetime else 0
            codes.append(done(node.facade.run(
                lambda ws, uses=uses, expires=expires: ws.members.invite(
                    uses=uses, expires_ms=expires)[0])))
        invited = [json.loads(t) for t in spooled(Recorder(paths.data))]
        # A newcomer proves the one-use code in a join session with this node, which admits
        # them; then a personal code for carol's key admits her at once.
        pb = Paths.resolve(tmp_path / "b", "default")
        sharing.join_workspace(pb, codes[0], nick=NEWCOMER, peers=[(LOCAL, node.port)],
                               mdns=False)
        personal = done(node.facade.run(lambda ws: ws.members.invite_for(carol)))
        members = done(node.facade.run(lambda ws: ws.members.all()))
        invites = done(node.facade.run(lambda ws: ws.members.invites()))
        ws_id, my_key = node.workspace.id, node.key

    # Admitted here: the newcomer with the one-use invite, carol with her personal code.
    admitted = {m.key: m.invite for m in members if m.admitted_by == my_key}
    assert carol in admitted and admitted.pop(carol) is None
    assert list(admitted.values()) == [i.id for i in invites if i.uses == 1]
    texts = spooled(Recorder(paths.data))
    events = [validate(json.loads(text)) for text in texts]
    assert [bare(e) for e in invited if e["event"] == "invite_created"] == [
        {"event": "invite_created", "schema": 4, "uses": uses, "expires": expires}
        for _, (uses, expires) in INVITES]
    assert [bare(e) for e in events if e["event"] == "member_admitted"] == [
        {"event": "member_admitted", "schema": 4, "how": "invite"},
        {"event": "member_admitted", "schema": 4, "how": "personal"}]
    assert sum(e["event"] == "invite_created" for e in events) == len(INVITES)
    # Membership objects link the workspace stream's heads but merge nothing anyone wrote.
    assert not [e for e in events if e["event"] in ("conflict", "convergence")]

    seeds = [Invite.decode(code).seed for code in codes]
    secrets = [NICK, NEWCOMER, *codes, personal, ws_id.hex(), ws_id.hex()[:32]]
    secrets += [s.hex() for s in seeds] + [invite_tag(s).hex() for s in seeds]
    for key in (my_key, carol, *(m.key for m in members)):
        secrets += [key.hex(), key.hex()[:32], key.hex()[:8]]
    for record in invites:
        secrets += [record.id.hex(), record.id.hex()[:32]]
    for text in texts:
        for secret in secrets:
            assert secret.lower() not in text.lower(), f"{secret!r} leaked into {text}"


def _invite(me: Identity, ws: bytes, ts: int, uses: int, expires: int):
    body = {"tag": b"\x07" * 16, "uses": uses, "expires": expires, "nonce": b"\x01" * 24,
            "box": b"sealed join key" * 3}
    return build(me, "invite/create", stream=ws, body=body, ts=ts)


def test_an_invites_lifetime_is_counted_from_its_own_time_and_admissions_by_how(tmp_path):
    recorder = Recorder(tmp_path)
    recorder.enable()
    heads = {b"\x0a" * 32: ("member/admit", 1_000), b"\x0b" * 32: ("invite/create", 1_400)}
    activity = Activity(recorder, lambda ids: [heads[i] for i in ids if i in heads])
    me, ws = Identity.generate(), b"\x05" * 32
    made = 1_795_000_000_000
    for ts, expires in ((made, made + HOUR_MS), (made + 5 * HOUR_MS, made + 6 * HOUR_MS),
                        (made, made + HOUR_MS + 1), (made, made - 1), (made, 0)):
        activity.created(_invite(me, ws, ts, 3, expires))
    invite = _invite(me, ws, made, 1, 0)
    newcomer = Identity.generate().public_key
    activity.created(build(me, "member/admit", stream=ws, body={"key": newcomer,
                                                                "invite": invite.id},
                           ts=made + 1, links=heads))
    activity.created(build(me, "member/admit", stream=ws, body={"key": newcomer, "invite": None},
                           ts=made + 2))
    events = [json.loads(text) for text in spooled(recorder)]
    assert [bare(e) for e in events] == [
        {"event": "invite_created", "schema": 4, "uses": "few", "expires": "hour"},
        {"event": "invite_created", "schema": 4, "uses": "few", "expires": "hour"},
        {"event": "invite_created", "schema": 4, "uses": "few", "expires": "day"},
        {"event": "invite_created", "schema": 4, "uses": "few", "expires": "hour"},
        {"event": "invite_created", "schema": 4, "uses": "few", "expires": "never"},
        {"event": "member_admitted", "schema": 4, "how": "invite"},
        {"event": "member_admitted", "schema": 4, "how": "personal"}]

    recorder.disable()
    activity.created(invite)
    activity.created(build(me, "member/admit", stream=ws, body={"key": newcomer, "invite": None},
                           ts=made + 3))
    assert spooled(recorder) == []
