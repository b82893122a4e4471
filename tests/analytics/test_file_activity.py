"""Files attached and private channels made become schema-5 events (app/activity.py): one
file_attached per file of a post/file of mine, with its size as a bucket, its kind
from its media type, how many files the message holds and the channel's daily stream hash; one
private_channel_created per channel/private of mine, saying only whether it is a direct message.
Nothing that names a file, the message, the channel or its people."""

from __future__ import annotations

import io
import json

from analytics.events import validate
from analytics.recorder import Recorder
from app.activity import Activity
from core import kinds
from core.attachments import chunk_id, seal_file
from core.identity import Identity
from core.objects import authored, build
from tests.support import TIMEOUT_S, Cluster, create_workspace, node_call, node_channels, node_post

NICK = "zorro-sender"
CHANNEL = "project-xylophone"
PRIVATE = "secret-plans"
TEXT = "the launch code is swordfish"
KIB, MIB = 1 << 10, 1 << 20
# (name, media type, size in bytes) of the files of one message, and the (size, kind) of each.
FILES = [(("plans for the pier.png", "image/png", 3 * KIB), (0, "image")),
         (("minutes.pdf", "application/pdf", 150 * KIB), (100 * KIB, "document")),
         (("site photos.tar.gz", "application/gzip", MIB + 5), (MIB, "archive"))]
VOICE = ("voice note.ogg", "audio/ogg; codecs=opus", 20 * KIB)


def spooled(recorder: Recorder) -> list[str]:
    taken = recorder.take_batch(1000)
    return taken[1] if taken else []


def done(future):
    return future.result(timeout=TIMEOUT_S)


def bare(event: dict) -> dict:
    return {k: v for k, v in event.items() if k not in ("ts", "pid")}


def descriptor(name: str, media_type: str, size: int, scope: bytes) -> dict:
    """A file's descriptor as a message holds it, its chunks made from `size` bytes."""
    chunks: dict[bytes, bytes] = {}
    sealed = seal_file(io.BytesIO(name.encode() * (size // len(name)) + b"x" * (size % len(name))),
                       scope, chunks.__setitem__)
    assert sealed.size == size and chunk_id(chunks[sealed.list]) == sealed.list
    image = media_type.startswith("image/")
    return {"name": name, "size": size, "type": media_type, "list": sealed.list,
            "key": sealed.key, "w": 640 if image else 0, "h": 480 if image else 0,
            "thumb": b"\xff\xd8 a small jpeg" if image else b""}


def test_files_and_private_channels_on_a_node_are_counted_in_buckets_and_name_nothing(tmp_path):
    paths = create_workspace(tmp_path, "a", NICK)
    Recorder(paths.data).enable()
    carol = Identity.generate().public_key
    with Cluster(tmp_path) as cluster:
        node = cluster.start(paths)
        ws = node.workspace
        node_channels(node, CHANNEL)
        stream = kinds.channel_stream(ws.id, CHANNEL)
        files = [descriptor(*f, scope=ws.id) for f, _ in FILES]
        voice = descriptor(*VOICE, scope=ws.id)

        def post(kind: str, body: dict):
            obj = authored(ws.identity, kind, stream=stream, body=body,
                           now_ms=int(ws.clock() * 1000), heads=ws.replica.heads(stream))
            ws.add_own([obj])  # the one path for my objects: Node, sync push, analytics
            return obj

        message = node_call(node, post, "post/file", {"channel": CHANNEL, "text": TEXT,
                                                "files": files})
        node_call(node, post, "post/file", {"channel": CHANNEL, "text": "", "files": [voice]})
        node_post(node, CHANNEL, "no files in this one")
        done(node.facade.run(lambda ws: ws.members.invite_for(carol)))  # a member now, whom a private channel may hold
        channel = done(node.facade.run(lambda ws: ws.private.create(PRIVATE, [carol])))
        done(node.facade.run(lambda ws: ws.private.direct_message(carol, TEXT).id))
        dm = done(node.facade.run(lambda ws: ws.private.dm_channel(carol)))
        secrets = [NICK, CHANNEL, PRIVATE, TEXT, node.key.hex(), carol.hex(), ws.id.hex(),
                   stream.hex()[:32], message.id.hex()[:32], channel.hex(), channel.hex()[:32],
                   dm.hex()[:32], "image/png", "application/pdf", "gzip", "ogg", "opus"]
        for d in (*files, voice):
            secrets += [d["name"], d["list"].hex()[:32], d["key"].hex()[:32], str(d["size"])]

    texts = spooled(Recorder(paths.data))
    events = [validate(json.loads(text)) for text in texts]
    for text in texts:
        for secret in secrets:
            assert secret.lower() not in text.lower(), f"{secret!r} leaked into {text}"
    (joined,) = [e for e in events if e["event"] == "channel_joined"]
    hashed = joined["stream"]  # the channel's hash of the day, as channel_joined has it
    assert [bare(e) for e in events if e["event"] == "file_attached"] == [
        {"event": "file_attached", "schema": 5, "size": size, "kind": kind, "files": 3,
         "stream": hashed} for _, (size, kind) in FILES] + [
        {"event": "file_attached", "schema": 5, "size": 0, "kind": "audio", "files": 1,
         "stream": hashed}]
    # The messages still count as messages: those with files, the one without, and the direct
    # message (a private message counts as one, under its channel's hash: issue 32).
    assert [e["length"] for e in events if e["event"] == "message_sent"] == [16, 0, 16, 16]
    assert [bare(e) for e in events if e["event"] == "private_channel_created"] == [
        {"event": "private_channel_created", "schema": 5, "dm": False},
        {"event": "private_channel_created", "schema": 5, "dm": True}]


def test_only_messages_with_files_count_files_and_nothing_while_analytics_are_off(tmp_path):
    recorder = Recorder(tmp_path)
    recorder.enable()
    activity = Activity(recorder, lambda ids: [])
    me, stream, ws = Identity.generate(), b"\x05" * 32, b"\x06" * 32
    kinds_of = [("image/JPEG", "image"), ("video/mp4", "video"), ("font/woff2", "other"),
                ("application/x-7z-compressed", "archive")]
    files = [descriptor(f"file {n}", media, KIB, ws) for n, (media, _) in enumerate(kinds_of)]
    made = [build(me, "post/text", stream=stream, body={"channel": CHANNEL, "text": TEXT},
                  ts=1_000),
            build(me, "post/file", stream=stream, body={"channel": CHANNEL, "text": "",
                                                        "files": files}, ts=2_000),
            build(me, "channel/private", stream=ws, body={"nonce": b"\x01" * 16, "dm": True},
                  ts=3_000)]
    for obj in made:
        activity.created(obj)
    events = [bare(json.loads(text)) for text in spooled(recorder)]
    stream_hash = recorder.hash_id(stream)
    assert events == [
        {"event": "message_sent", "schema": 1, "length": 16},
        {"event": "message_sent", "schema": 1, "length": 0},
        *({"event": "file_attached", "schema": 5, "size": 0, "kind": kind, "files": 4,
           "stream": stream_hash} for _, kind in kinds_of),
        {"event": "private_channel_created", "schema": 5, "dm": True}]

    recorder.disable()
    for obj in made:
        activity.created(obj)
    assert spooled(recorder) == []
