"""Attached files' descriptors (core/kinds.py) and chunking (core/attachments.py): a message
with files is valid with an empty text, every field of a descriptor is checked with a reason,
and a file sealed into chunks opens again to the same bytes."""

from __future__ import annotations

import io
import os

import pytest

from core import kinds
from core.attachments import (
    CHUNK_SIZE,
    AttachmentError,
    chunk_id,
    open_file,
    parse_list,
    seal_file,
)
from core.errors import InvalidObject
from core.identity import Identity
from core.objects import MAX_OBJECT_SIZE, build, parse

STREAM = bytes(range(32))


def descriptor(**changes) -> dict:
    d = {"name": "report.pdf", "size": 10, "type": "application/pdf", "list": bytes(32),
         "key": bytes(32), "w": 0, "h": 0, "thumb": b""}
    d.update(changes)
    return d


def body(**changes) -> dict:
    b = {"channel": "general", "text": "", "files": [descriptor()]}
    b.update(changes)
    return b


def test_a_post_with_files_may_have_no_text_and_parses_back():
    me = Identity.generate()
    obj = build(me, "post/file", stream=STREAM, body=body(), ts=1)
    assert parse(obj.raw)[0].body["files"] == [descriptor()]
    assert obj.type in kinds.MESSAGE_KINDS and obj.type in kinds.DELETABLE_KINDS


def test_files_are_a_kind_of_their_own_never_a_field_of_older_kinds():
    # Versions from before attachments hold post/text and post/reply to exactly their fields
    # and cut off a peer that sends more; a post/file they store and relay uninterpreted.
    with pytest.raises(InvalidObject, match="unexpected"):
        kinds.check_body("post/text", body(text="x"))
    with pytest.raises(InvalidObject, match="unexpected"):
        kinds.check_body("post/reply", {**body(text="x"), "parent": bytes(32),
                                        "broadcast": False})
    with pytest.raises(InvalidObject, match="1 to 4096"):
        kinds.check_body("post/text", {"channel": "general", "text": ""})
    with pytest.raises(InvalidObject, match="missing"):
        kinds.check_body("post/file", {"channel": "general", "text": "x"})
    with pytest.raises(InvalidObject, match="unexpected"):
        kinds.check_body("post/file", {**body(), "extra": 1})
    with pytest.raises(InvalidObject, match="missing"):
        kinds.check_body("post/edit", {"channel": "general", "text": "x", "files": []})


@pytest.mark.parametrize("field, value, reason", [
    ("name", "", "name"), ("name", "a/b", "name"), ("name", "a\\b", "name"),
    ("name", "a\0b", "name"), ("name", "a\nb", "name"), ("name", "\u202egnp.exe", "name"),
    ("name", "x" * 256, "name"), ("name", 5, "name"),
    ("size", -1, "size"), ("size", (4 << 30) + 1, "size"), ("size", "10", "size"),
    ("size", True, "size"),
    ("type", "", "type"), ("type", "x" * 128, "type"), ("type", "image/pngé", "type"),
    ("type", "a\x01b", "type"), ("type", b"image/png", "type"),
    ("list", bytes(31), "list"), ("list", "00" * 32, "list"),
    ("key", bytes(33), "key"), ("key", None, "key"),
    ("w", -1, "width"), ("w", 1.5, "width"), ("h", -1, "height"), ("h", "3", "height"),
    ("thumb", bytes(12 * 1024 + 1), "thumbnail"), ("thumb", "jpeg", "thumbnail"),
])
def test_every_descriptor_field_is_checked(field, value, reason):
    with pytest.raises(InvalidObject, match=reason):
        kinds.check_body("post/file", body(files=[descriptor(**{field: value})]))


@pytest.mark.parametrize("files, reason", [
    ([], "1 to 4"), ([descriptor()] * 5, "1 to 4"), ("x", "1 to 4"), ([[1]], "exactly"),
    ([{**descriptor(), "extra": 1}], "exactly"),
    ([{k: v for k, v in descriptor().items() if k != "thumb"}], "exactly"),
])
def test_the_files_list_is_checked(files, reason):
    with pytest.raises(InvalidObject, match=reason):
        kinds.check_body("post/file", body(files=files))


def test_four_files_with_full_thumbnails_fit_one_object():
    me = Identity.generate()
    files = [descriptor(name=f"{'n' * 250}.{n}", thumb=os.urandom(kinds.MAX_THUMB))
             for n in range(4)]
    obj = build(me, "post/file", stream=STREAM,
                body=body(text="t" * kinds.MAX_TEXT_BYTES, files=files), ts=1)
    assert len(obj.raw) <= MAX_OBJECT_SIZE


def test_a_non_canonical_descriptor_is_refused():
    import cbor2

    from core.encoding import EncodingError, check_canonical, dumps

    value = {"thumb": b"", **descriptor()}  # keys out of canonical order
    data = cbor2.dumps(value)
    with pytest.raises(EncodingError):
        check_canonical(value, data)
    check_canonical(value, dumps(value))


def _seal(data: bytes, scope: bytes = b"s" * 32) -> tuple[dict, object]:
    store: dict[bytes, bytes] = {}
    sealed = seal_file(io.BytesIO(data), scope, store.__setitem__)
    return store, sealed


@pytest.mark.parametrize("size", [0, 1, CHUNK_SIZE - 1, CHUNK_SIZE, CHUNK_SIZE + 1,
                                  3 * CHUNK_SIZE + 5])
def test_a_file_sealed_into_chunks_opens_to_the_same_bytes(size):
    data = os.urandom(size)
    store, sealed = _seal(data)
    assert all(chunk_id(chunk) == cid for cid, chunk in store.items())
    ids = parse_list(store[sealed.list], size)
    out = io.BytesIO()
    open_file(sealed.key, ids, size, store.get, out)
    assert out.getvalue() == data and sealed.size == size


def test_the_same_file_in_one_scope_gives_the_same_chunks_and_not_in_another():
    data = os.urandom(CHUNK_SIZE + 10)
    one, a = _seal(data)
    two, b = _seal(data)
    other, c = _seal(data, b"t" * 32)
    assert a.list == b.list and set(one) == set(two)
    assert c.list != a.list and not set(other) & set(one)


def test_a_missing_or_wrong_chunk_is_refused():
    data = os.urandom(2 * CHUNK_SIZE)
    store, sealed = _seal(data)
    ids = parse_list(store[sealed.list], len(data))
    missing = {k: v for k, v in store.items() if k != ids[1]}
    with pytest.raises(AttachmentError, match="not here"):
        open_file(sealed.key, ids, len(data), missing.get, io.BytesIO())
    swapped = dict(store)
    swapped[ids[0]], swapped[ids[1]] = store[ids[1]], store[ids[0]]
    with pytest.raises(AttachmentError, match="damaged"):
        open_file(sealed.key, ids, len(data), swapped.get, io.BytesIO())
    with pytest.raises(AttachmentError):
        parse_list(store[sealed.list], len(data) + CHUNK_SIZE)
