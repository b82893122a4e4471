"""Comments anchored to ranges of a branch's text, with replies and resolving.

Objects. A comment, a reply and a resolve are each a `doc/comment` in the branch's stream that
links to the branch heads its author read. Its body is {epoch, nonce, box}: the SecretBox, under
the branch key of `epoch`, of one of these payloads (anything else is ignored):
- a comment: {"start": anchor, "end": anchor, "quote": the words commented on (at most
  MAX_QUOTE codepoints of them), "text": what the comment says};
- a reply: {"reply": the comment's id, "text": ...};
- a resolve: {"resolve": the comment's id, "root": the root-branch heads its author had seen}.
So the envelope tells nobody without the key which of them it is, or what it is on.

Anchors. An anchor is a Yjs relative position (pycrdt `StickyIndex.encode()`): `start` sticks to
the first character commented on (Assoc.AFTER) and `end` to the last (Assoc.BEFORE). Text typed
inside the range joins it, text typed at either edge stays outside, and the range follows its
words whatever is edited around them, on any replica, because it names characters (Yjs item
ids), not offsets. When all of its words are deleted the range is empty: the comment is
detached (start and end None), never moved to position 0; so is an anchor whose characters this
state does not hold (its commits have not arrived, or do not count).

Units. pycrdt 0.14 mixes units in sticky indices of a text it counts in UTF-8 bytes: the items
before the anchored one count in bytes, the offset inside it in Yjs clock units (UTF-16), so
positions come out wrong after any non-ASCII character (y-crdt/pycrdt#382). Anchors are
therefore made and read on a scratch copy of the state whose every string is replaced by as
many "x" as it has UTF-16 units (`_ascii_update`): the items and their ids are the same, and in
it bytes, UTF-16 units and clocks agree. Positions are then converted between UTF-16 units and
codepoints against the real text (`_Units`).

Who counts (a function of the objects held and the clock, like the rest of the document):
- comments and replies by anyone who reads the branch (holds its key: the box opens), on a
  branch that counts, dated within the horizon; one whose epoch a `doc/key-refresh` (that
  counts) replaced before it was dated does not count, so readers shut out by a refresh (a
  capability holder, a removed editor) cannot comment on later text;
- a reply or resolve counts only on a comment that counts, in the same branch;
- a resolve counts from the comment's author, or from an editor in the root state it names whom
  no removal outside that state removed (the rule of the root branch's objects, `RootBranch.counts`).
  Resolving is for good: once a resolve counts, the comment is resolved.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Iterable
from typing import TYPE_CHECKING

import nacl.secret
import pycrdt

from .. import encoding
from ..encoding import ID_SIZE
from ..identity import Identity
from ..kinds import MAX_LIST, MAX_TEXT_BYTES
from ..objects import MIN_ID_PREFIX, Object
from ._held import COMMENT
from ._live import TEXT, _Live
from ._records import CommentInfo, CommentReply, DocumentError

if TYPE_CHECKING:
    from ._document import Document

KIND = COMMENT
MAX_QUOTE = 1000  # codepoints of the commented words kept with a comment (the anchor has all)
_AFTER, _BEFORE = 0x00, 0x41  # Assoc.AFTER (0) and BEFORE (-1) as lib0 signed varints
_SCRATCH_CLIENT = 1  # the scratch copy is never edited: its client id makes nothing


# Units: codepoints and UTF-16 --------------------------------------------------------------------

class _Units:
    """Positions in `text` as codepoints (the API) and as UTF-16 units (anchors)."""

    def __init__(self, text: str):
        # the characters outside the BMP (two UTF-16 units each): where they are in codepoints
        # and in UTF-16 units
        self._wide = [] if text.isascii() else [
            i for i, ch in enumerate(text) if ord(ch) > 0xFFFF]
        self._wide16 = [i + k for k, i in enumerate(self._wide)]

    def utf16(self, position: int) -> int:
        return position + bisect_left(self._wide, position)

    def codepoint(self, offset: int) -> int:
        """The codepoint at (or, inside a surrogate pair, holding) UTF-16 `offset`."""
        return offset - bisect_left(self._wide16, offset)


# The scratch copy: the same Yjs items, every string made ASCII -----------------------------------

def _uint(data: bytes, i: int) -> tuple[int, int]:
    """A lib0 varuint at `i`: (value, the index after it)."""
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise ValueError("varuint too long")


def _varuint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _skip(data: bytes, i: int) -> int:
    """Past a length-prefixed string or buffer at `i`."""
    size, i = _uint(data, i)
    if i + size > len(data):
        raise ValueError("truncated")
    return i + size


def _ascii_update(update: bytes) -> bytes:
    """A Yjs (v1) update with each string item's text replaced by "x" times its UTF-16 length:
    the same items with the same ids, in which every unit is one byte. Raises ValueError on
    content a document's text never holds (embedded values, sub-documents)."""
    data, out = update, bytearray()
    clients, i = _uint(data, 0)
    out += _varuint(clients)
    for _ in range(clients):
        start = i
        structs, i = _uint(data, i)
        i = _uint(data, _uint(data, i)[1])[1]  # client, clock
        out += data[start:i]
        for _ in range(structs):
            start = i
            info, i = data[i], i + 1
            ref = info & 0x1F
            if ref in (0, 10):  # GC, skip: a length
                i = _uint(data, i)[1]
                out += data[start:i]
                continue
            for flag in (0x80, 0x40):  # origin, right origin: an id each
                if info & flag:
                    i = _uint(data, _uint(data, i)[1])[1]
            if not info & 0xC0:  # the parent: a root type's name or an item's id
                named, i = _uint(data, i)
                i = _skip(data, i) if named == 1 else _uint(data, _uint(data, i)[1])[1]
                if info & 0x20:
                    i = _skip(data, i)
            if ref == 4:  # a string
                out += data[start:i]
                size, i = _uint(data, i)
                units = len(data[i:i + size].decode("utf-8", "surrogatepass")
                            .encode("utf-16-le", "surrogatepass")) // 2
                i += size
                out += _varuint(units) + b"x" * units
                continue
            if ref == 1:  # deleted: a length
                i = _uint(data, i)[1]
            elif ref in (3, 5):  # binary, embed
                i = _skip(data, i)
            elif ref == 6:  # format: a key and a value
                i = _skip(data, _skip(data, i))
            elif ref == 2:  # JSON: a count of strings
                count, i = _uint(data, i)
                for _ in range(count):
                    i = _skip(data, i)
            elif ref == 7:  # a type, named for XML elements and hooks
                type_ref, i = _uint(data, i)
                if type_ref in (3, 5):
                    i = _skip(data, i)
            else:
                raise ValueError(f"content {ref} is not text")
            out += data[start:i]
    return bytes(out + data[i:])  # the delete set, as it is


class _Scratch:
    """A copy of a state's text for anchors: made with `_ascii_update`, so positions in it are
    UTF-16 units of the real text."""

    def __init__(self, live: _Live):
        doc: pycrdt.Doc[pycrdt.Text] = pycrdt.Doc(client_id=_SCRATCH_CLIENT)
        doc.apply_update(_ascii_update(live.doc.get_update()))
        self.text = doc.get(TEXT, type=pycrdt.Text)
        state, n = doc.get_state(), 0
        count, n = _uint(state, n)
        self.clocks: dict[int, int] = {}  # client -> the clock after its last item held
        for _ in range(count):
            client, n = _uint(state, n)
            self.clocks[client], n = _uint(state, n)

    def anchor(self, offset: int, assoc: pycrdt.Assoc) -> bytes:
        return pycrdt.StickyIndex.new(self.text, offset, assoc).encode()

    def offset(self, anchor: bytes) -> int | None:
        """Where `anchor` is now (UTF-16 units); None when this state lacks its character
        (pycrdt panics on an unknown one, so it is never asked)."""
        client, clock, _ = _parse_anchor(anchor)  # type: ignore[misc]
        if clock >= self.clocks.get(client, 0):
            return None
        try:
            return pycrdt.StickyIndex.decode(anchor, self.text).get_index()
        except Exception:  # noqa: BLE001 (pycrdt's panics are Exceptions' siblings: see below)
            return None
        except BaseException as exc:  # a Rust panic (an id in no text item): detached
            if type(exc).__name__ != "PanicException":
                raise
            return None


def _parse_anchor(anchor: object) -> tuple[int, int, int] | None:
    """(client, clock, assoc byte) of an encoded relative position to a character: tag 0, the
    item's id, the assoc; None for anything else (pycrdt is never handed it)."""
    if not isinstance(anchor, bytes) or not 4 <= len(anchor) <= 24 or anchor[0] != 0:
        return None
    try:
        client, i = _uint(anchor, 1)
        clock, i = _uint(anchor, i)
    except (IndexError, ValueError):
        return None
    if i != len(anchor) - 1 or anchor[i] not in (_AFTER, _BEFORE) or client >= 2**53 \
            or clock >= 2**53:
        return None
    return client, clock, anchor[i]


# Payloads --------------------------------------------------------------------------------------

def _check_text(text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        raise DocumentError("a comment needs some text")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise DocumentError(f"a comment is at most {MAX_TEXT_BYTES} bytes of UTF-8")
    return text


def _shape(payload: object) -> str | None:
    """"comment", "reply" or "resolve" for a payload of that shape; None for anything else."""
    if not isinstance(payload, dict):
        return None
    keys = payload.keys()

    def text_ok() -> bool:
        text = payload.get("text")
        return isinstance(text, str) and 0 < len(text.encode("utf-8", "surrogatepass")) \
            <= MAX_TEXT_BYTES

    def id_ok(value: object) -> bool:
        return isinstance(value, bytes) and len(value) == ID_SIZE

    if keys == {"start", "end", "quote", "text"}:
        start, end = _parse_anchor(payload["start"]), _parse_anchor(payload["end"])
        quote = payload["quote"]
        ok = start is not None and end is not None and start[2] == _AFTER \
            and end[2] == _BEFORE and isinstance(quote, str) and len(quote) <= MAX_QUOTE
        return "comment" if ok and text_ok() else None
    if keys == {"reply", "text"}:
        return "reply" if id_ok(payload["reply"]) and text_ok() else None
    if keys == {"resolve", "root"}:
        root = payload["root"]
        ok = id_ok(payload["resolve"]) and isinstance(root, list) and len(root) <= MAX_LIST \
            and all(id_ok(r) for r in root)
        return "resolve" if ok else None
    return None


class Comments:
    """Comments on a document's branches (`doc.comments`): written with `add`, `reply` and
    `resolve`, read with `on`."""

    def __init__(self, doc: Document) -> None:
        self.held = doc.held
        self.root_branch = doc.root_branch
        self.branch_keys = doc.branch_keys
        self.commits = doc.commits
        self.states = doc.states

    # Writing -------------------------------------------------------------------------------

    def add(self, identity: Identity, branch: str, start: int, end: int, text: str, *,
            heads: Iterable[str] | None = None) -> str:
        """Comment on the characters [start, end) (codepoints) of `branch`'s text at `heads`
        (default: its heads now). Anyone who reads the branch may. Returns the comment's id."""
        _check_text(text)
        branch_id = self.root_branch.branch(branch)
        at = list(self.commits.heads(branch_id.hex()) if heads is None else heads)
        on, ids = self.commits.heads_of(at)
        if not ids:
            raise DocumentError("there is no text on that branch to comment on yet")
        if on != branch_id:
            raise DocumentError("those commits are not on that branch")
        live = self.states.at(branch_id, ids)
        value = live.value()
        if not 0 <= start < end <= len(value):
            raise DocumentError(f"a comment is on 1 or more characters of the text "
                                f"({len(value)} characters), not {start} to {end}")
        units, scratch = _Units(value), _Scratch(live)
        payload = {"start": scratch.anchor(units.utf16(start), pycrdt.Assoc.AFTER),
                   "end": scratch.anchor(units.utf16(end), pycrdt.Assoc.BEFORE),
                   "quote": value[start:end][:MAX_QUOTE], "text": text}
        return self._seal(identity, branch_id, ids, payload).hex

    def reply(self, identity: Identity, comment: str, text: str) -> str:
        """Answer a comment (a reply's id stands for its comment). Returns the reply's id."""
        _check_text(text)
        target = self._thread(comment)
        return self._seal(identity, target.stream, None,
                                  {"reply": target.id, "text": text}).hex

    def resolve(self, identity: Identity, comment: str) -> str:
        """Resolve a comment: its author or an editor may. Returns the resolve's id."""
        target = self._thread(comment)
        if identity.public_key != target.author \
                and identity.public_key not in self.root_branch.editors():
            raise DocumentError("only the comment's author or an editor can resolve it")
        if self._resolves(target.stream).get(target.id):
            raise DocumentError("that comment is resolved already")
        root = self.held.linkable(self.root_branch.heads(), self.held.now())
        return self._seal(identity, target.stream, None,
                                  {"resolve": target.id, "root": sorted(root)}).hex

    def _seal(self, identity: Identity, branch: bytes, at: Iterable[bytes] | None,
              payload: dict) -> Object:
        """Box `payload` with the branch key an editor writes with, else the newest this holder
        reads with, and publish it linking to `at` (default: the branch's heads)."""
        writing = self.branch_keys.writing(identity, branch)
        if writing is None:
            epoch = self.branch_keys.latest_epoch(branch)
            if epoch is None:
                raise DocumentError("you cannot read that branch, so you cannot comment on it")
            writing = epoch, min(self.branch_keys.by_epoch[(branch, epoch)])
        epoch, key = writing
        nonce = os.urandom(nacl.secret.SecretBox.NONCE_SIZE)
        box = nacl.secret.SecretBox(key).encrypt(encoding.dumps(payload), nonce).ciphertext
        links = at if at is not None else [
            bytes.fromhex(h) for h in self.commits.heads(branch.hex())]
        obj = self.root_branch.publish(identity, KIND, branch,
                                       {"box": box, "epoch": epoch, "nonce": nonce}, links)
        self.held.payloads[obj.id] = payload
        return obj

    # Reading -------------------------------------------------------------------------------

    def on(self, branch: str = "main") -> list[CommentInfo]:
        """The branch's comments that count, each with its anchor where its words are in the
        text at the branch's heads (codepoints; None when detached), its replies (oldest
        first) and whether it is resolved: in the order of the text, detached ones last."""
        branch_id = self.root_branch.branch(branch)
        found = self._counting(branch_id)
        threads = [(o, p) for o, kind, p in found if kind == "comment"]
        if not threads:
            return []
        replies: dict[bytes, list[CommentReply]] = {}
        for obj, kind, payload in found:
            if kind == "reply":
                replies.setdefault(payload["reply"], []).append(
                    CommentReply(obj.hex, obj.author, obj.ts, payload["text"]))
        resolves = self._resolves(branch_id, found)
        places = self._places(branch_id, [p for _, p in threads])
        out = []
        for (obj, payload), (start, end) in zip(threads, places, strict=True):
            resolved = resolves.get(obj.id)
            out.append(CommentInfo(obj.hex, branch_id.hex(), obj.author, obj.ts,
                                   payload["text"], payload["quote"], start, end,
                                   tuple(replies.get(obj.id, ())), resolved is not None,
                                   resolved.author if resolved is not None else None))
        return sorted(out, key=lambda c: (c.start is None, c.start or 0, c.end or 0, c.ts, c.id))

    def _places(self, branch: bytes, payloads: list[dict]) -> list[tuple[int | None, int | None]]:
        """Where each comment's words are in the text at the branch's heads."""
        detached = (None, None)
        heads = frozenset(bytes.fromhex(h) for h in self.commits.heads(branch.hex()))
        if not heads:
            return [detached] * len(payloads)
        live = self.states.at(branch, heads)
        try:
            scratch = _Scratch(live)
        except (ValueError, IndexError):  # content no text has: nothing to anchor to
            return [detached] * len(payloads)
        units = _Units(live.value())
        out: list[tuple[int | None, int | None]] = []
        for payload in payloads:
            start, end = scratch.offset(payload["start"]), scratch.offset(payload["end"])
            if start is None or end is None or start >= end:
                out.append(detached)
            else:
                out.append((units.codepoint(start), units.codepoint(end)))
        return out

    def _counting(self, branch: bytes) -> list[tuple[Object, str, dict]]:
        """The branch's comments, replies and resolves that count (see the module docstring)
        but for the resolver's rights, with their kind and payload, oldest first."""
        objects = sorted((o for o in self.held.current(self.held.streams.get(branch, ()))
                          if o.type == KIND), key=lambda o: (o.ts, o.id))
        if not objects:
            return []
        refreshes = [(r.body["epoch"], r.ts) for r in self.held.in_root("doc/key-refresh")
                     if r.body["branch"] == branch and self.root_branch.counts(r)]
        found: list[tuple[Object, str, dict]] = []
        for obj in objects:
            epoch = obj.body["epoch"]
            if any(newer > epoch and ts < obj.ts for newer, ts in refreshes):
                continue  # a key that a refresh had replaced by then
            payload = self._payload(obj)
            kind = _shape(payload)
            if kind is not None and payload is not None:
                found.append((obj, kind, payload))
        threads = {o.id for o, kind, _ in found if kind == "comment"}
        return [(o, kind, p) for o, kind, p in found
                if kind == "comment" or p.get("reply", p.get("resolve")) in threads]

    def _payload(self, obj: Object) -> dict | None:
        """The payload in the box, decrypted once; None when no key held opens it."""
        payload = self.held.payloads.get(obj.id)
        if payload is None and self.branch_keys.by_epoch.get((obj.stream, obj.body["epoch"])):
            plain = self.branch_keys.open_box(obj.stream, obj.body["epoch"], obj.body["box"],
                                              obj.body["nonce"])
            try:
                payload = encoding.loads(plain) if plain is not None else None
            except encoding.EncodingError:
                payload = None
            self.held.payloads[obj.id] = payload if isinstance(payload, dict) else None
        return self.held.payloads.get(obj.id)

    def _resolves(self, branch: bytes, found: list[tuple[Object, str, dict]] | None = None
                  ) -> dict[bytes, Object]:
        """Comment id -> its first resolve that counts, for the branch's resolved comments."""
        found = self._counting(branch) if found is None else found
        authors = {o.id: o.author for o, kind, _ in found if kind == "comment"}
        out: dict[bytes, Object] = {}
        for obj, kind, payload in found:
            if kind != "resolve":
                continue
            target = payload["resolve"]
            if target not in out and (
                    obj.author == authors[target] or self._editor_in(obj.author,
                                                                     payload["root"])):
                out[target] = obj
        return out

    def _editor_in(self, key: bytes, root: list[bytes]) -> bool:
        """Whether `key` was an editor in the root state at `root`, and every removal of it is
        in that state (so one removed since counts for nothing where it was not seen)."""
        index = self.root_branch.index()
        before = frozenset().union(*(index.changes[h] for h in root if h in index.changes))
        return key in self.root_branch.editors(root) and all(
            removal in before for removal, _ in index.removals.get(key, ()))

    def _thread(self, ref: str) -> Object:
        """The comment that counts named by `ref` (hex id or unique prefix); a reply's id
        stands for the comment it answers."""
        ref = ref.strip().lower()
        if len(ref) < MIN_ID_PREFIX:
            raise DocumentError(f"give at least {MIN_ID_PREFIX} hex digits of a comment's id")
        matches = [o for oid, o in self.held.objects.items()
                   if o.type == KIND and oid.hex().startswith(ref)]
        if len(matches) > 1:
            raise DocumentError(f"{ref!r} matches {len(matches)} comments; give more of it")
        obj = matches[0] if matches else None
        found = {o.id: (o, kind, p) for o, kind, p in self._counting(obj.stream)} \
            if obj is not None and obj.stream in self.root_branch.branch_ids() else {}
        if obj is not None and obj.id in found:
            _, kind, payload = found[obj.id]
            if kind == "comment":
                return obj
            if kind == "reply":
                return found[payload["reply"]][0]
        raise DocumentError(f"no comment {ref!r} that you can read in this document")
