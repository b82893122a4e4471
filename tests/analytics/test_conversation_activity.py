"""Replies, edits and reactions made on a real Node become schema-2 events with no content
(app/activity.py): length buckets, broadcast or not, the channel's daily stream hash."""

from __future__ import annotations

import json

from analytics.events import length_bucket, validate
from analytics.recorder import Recorder
from app.activity import Activity
from app.emojis import shortcode
from core import kinds
from core.identity import Identity
from core.objects import build
from tests.support import TIMEOUT_S, Cluster, create_workspace, node_channels, node_post

NICK = "zorro-nick"
CHANNEL = "project-xylophone"
TEXT = "the launch code is swordfish"
REPLY = "meet at the pier"
SHOUTED = "meet at the pier, everyone: " + "x" * 40
EDITED = "the launch code is changed " + "y" * 300
EMOJI = "\N{UNICORN FACE}"


def spooled(recorder: Recorder) -> list[str]:
    taken = recorder.take_batch(1000)
    return taken[1] if taken else []


def done(future):
    return future.result(timeout=TIMEOUT_S)


def test_my_replies_edits_and_reactions_are_counted_without_their_content(tmp_path):
    paths = create_workspace(tmp_path, "a", NICK)
    Recorder(paths.data).enable()
    with Cluster(tmp_path) as cluster:
        node = cluster.start(paths)
        ws = node.workspace
        node_channels(node, CHANNEL)
        first = node_post(node, CHANNEL, TEXT)
        replies = [done(node.facade.run(lambda ws: ws.conversation.reply(first, REPLY).id)),
                   done(node.facade.run(lambda ws: ws.conversation.reply(first, SHOUTED, broadcast=True).id))]
        edit = done(node.facade.run(lambda ws: ws.conversation.edit(first, EDITED).id))
        reaction = done(node.facade.run(lambda ws: ws.conversation.react(first, EMOJI).id))
        stream = kinds.channel_stream(ws.id, CHANNEL)
        secrets = [NICK, CHANNEL, TEXT, REPLY, SHOUTED, EDITED, EMOJI, shortcode(EMOJI),
                   node.key.hex(), ws.id.hex(), stream.hex()[:32]]
        secrets += [oid.hex()[:32] for oid in (first, *replies, edit, reaction)]

    texts = spooled(Recorder(paths.data))
    events = [json.loads(text) for text in texts]
    for text in texts:
        for secret in secrets:
            assert secret.lower() not in text.lower(), f"{secret!r} leaked into {text}"
    for event in events:
        validate(event)
    (joined,) = [e for e in events if e["event"] == "channel_joined"]
    found = [{k: v for k, v in e.items() if k not in ("ts", "pid")} for e in events
             if e["event"] in ("thread_reply", "message_edited", "reaction_added")]
    channel = joined["stream"]  # the channel's hash of the day, as channel_joined has it
    assert found == [
        {"event": "thread_reply", "schema": 2, "length": length_bucket(len(REPLY)),
         "broadcast": False, "stream": channel},
        {"event": "thread_reply", "schema": 2, "length": length_bucket(len(SHOUTED)),
         "broadcast": True, "stream": channel},
        {"event": "message_edited", "schema": 2, "length": length_bucket(len(EDITED)),
         "stream": channel},
        {"event": "reaction_added", "schema": 2, "stream": channel},
    ]
    assert [e["length"] for e in found[:3]] == [16, 64, 256]  # three buckets apart


def test_a_reply_edit_or_reaction_that_merges_a_fork_counts_the_conflict(tmp_path):
    recorder = Recorder(tmp_path)
    recorder.enable()
    heads = {b"\x0a" * 32: ("post/text", 1_000), b"\x0b" * 32: ("post/text", 1_400)}
    activity = Activity(recorder, lambda ids: [heads[i] for i in ids if i in heads])
    me, stream, target = Identity.generate(), b"\x05" * 32, b"\x0a" * 32
    bodies = {"post/reply": {"channel": CHANNEL, "text": REPLY, "parent": target,
                             "broadcast": False},
              "post/edit": {"channel": CHANNEL, "target": target, "text": EDITED},
              "post/react": {"channel": CHANNEL, "target": target, "emoji": EMOJI}}
    for kind, body in bodies.items():
        activity.created(build(me, kind, stream=stream, body=body, ts=2_000, links=heads))
    events = [json.loads(text) for text in spooled(recorder)]
    assert [(e["event"], e.get("kind"), e.get("heads"), e.get("ms")) for e in events
            if e["event"] in ("conflict", "convergence")] == [
        ("conflict", "concurrent_heads", 2, None), ("convergence", None, None, 1_000)] * 3


def test_private_replies_edits_and_reactions_are_counted_as_public_ones(tmp_path):
    """In a private channel the same calls make the same events, with the private channel's
    daily stream hash, and nothing the sealed posts hold."""
    paths = create_workspace(tmp_path, "a", NICK)
    Recorder(paths.data).enable()
    with Cluster(tmp_path) as cluster:
        node = cluster.start(paths)
        channel = done(node.facade.run(lambda ws: ws.private.create(CHANNEL, [])))
        first = done(node.facade.run(lambda ws: ws.private.post(channel, TEXT).id))
        done(node.facade.run(lambda ws: ws.conversation.reply(first, REPLY).id))
        done(node.facade.run(lambda ws: ws.conversation.reply(first, SHOUTED, broadcast=True)))
        done(node.facade.run(lambda ws: ws.conversation.edit(first, EDITED).id))
        done(node.facade.run(lambda ws: ws.conversation.react(first, EMOJI).id))
        stream = Recorder(paths.data).hash_id(channel)
        secrets = [CHANNEL, TEXT, REPLY, SHOUTED, EDITED, EMOJI, shortcode(EMOJI),
                   channel.hex()[:32], first.hex()[:32]]
    texts = spooled(Recorder(paths.data))
    for text in texts:
        for secret in secrets:
            assert secret.lower() not in text.lower(), f"{secret!r} leaked into {text}"
    events = [json.loads(text) for text in texts]
    for event in events:
        validate(event)
    found = [{k: v for k, v in e.items() if k not in ("ts", "pid")} for e in events
             if e["event"] in ("message_sent", "thread_reply", "message_edited",
                               "reaction_added")]
    assert found == [
        {"event": "message_sent", "schema": 1, "length": length_bucket(len(TEXT))},
        {"event": "thread_reply", "schema": 2, "length": length_bucket(len(REPLY)),
         "broadcast": False, "stream": stream},
        {"event": "thread_reply", "schema": 2, "length": length_bucket(len(SHOUTED)),
         "broadcast": True, "stream": stream},
        {"event": "message_edited", "schema": 2, "length": length_bucket(len(EDITED)),
         "stream": stream},
        {"event": "reaction_added", "schema": 2, "stream": stream},
    ]
