"""A live pycrdt (Yjs) text at a set of heads: edits in codepoints applied as UTF-8 byte offsets,
the Yjs update each transaction makes, and undo of this holder's own edits."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pycrdt

from ._records import Edit

CLIENT_ID_BITS = 53  # Yjs client ids are safe integers in JavaScript
TEXT = "text"
LOCAL = "local"  # origin of this holder's own edits: the only ones undo and redo touch


@dataclass
class _Live:
    """A pycrdt document at a set of heads, that commits may continue from.

    Its client id is used by this instance only, and only while its state moves forward, so a
    client id is never reused from two different states.
    """

    heads: frozenset[bytes]
    doc: pycrdt.Doc
    text: pycrdt.Text
    # The text, kept once it was read or holds non-ASCII characters: reading it back after
    # each commit then costs nothing, while a bulk replay that never reads it keeps none.
    mirror: str | None = None
    ascii: bool = True  # False also when not known
    undo: pycrdt.UndoManager | None = None
    length: int | None = None  # in codepoints; None when unknown
    complete: bool = True  # False when built while an ancestor commit was missing
    # Ids of the branch's objects in the causal past of `heads` (all of them, so a walk back
    # from other heads can stop at the first it meets); None until needed.
    absorbed: set[bytes] | None = None
    # The updates of the transactions `capture` is watching for; None while it is not.
    captured: list[bytes] | None = field(default=None, repr=False)

    @classmethod
    def empty(cls) -> _Live:
        doc: pycrdt.Doc[pycrdt.Text] = pycrdt.Doc(client_id=secrets.randbits(CLIENT_ID_BITS) or 1)
        live = cls(frozenset(), doc, doc.get(TEXT, type=pycrdt.Text))
        # One subscription for the state's life: subscribing per commit costs more than the
        # edit itself.
        doc.observe(live._transacted)
        return live

    def _transacted(self, event: pycrdt.TransactionEvent) -> None:
        if self.captured is not None:
            self.captured.append(event.update)

    def advance(self, commit: bytes) -> None:
        """The state is now at `commit`, made from it (its only parents were the heads)."""
        self.heads = frozenset([commit])
        if self.absorbed is not None:
            self.absorbed.add(commit)

    def past(self) -> set[bytes] | None:
        """`absorbed` while it is known to cover the heads (else it is stale: unknown)."""
        if self.absorbed is not None and not self.heads <= self.absorbed:
            self.absorbed = None
        return self.absorbed

    def absorb(self, update: bytes) -> None:
        self.doc.apply_update(update)
        self.forget()

    def forget(self) -> None:
        """The text changed in ways not tracked here: recompute what is derived from it."""
        self.mirror, self.ascii, self.length = None, False, None

    def value(self) -> str:
        if self.mirror is not None:
            return self.mirror
        value = self.mirror = str(self.text)
        self.ascii = value.isascii()
        return value

    def _offset(self, position: int) -> int:
        """UTF-8 byte offset of a codepoint position (pycrdt counts bytes)."""
        if self.ascii:
            return position
        return len(self.value()[:position].encode())

    def apply(self, edits: Iterable[Edit], *, track_undo: bool = True,
              origin: str = LOCAL) -> bytes:
        """Apply edits in one transaction; returns that transaction's Yjs update. Undo and
        redo touch only transactions of origin LOCAL (this holder's own typing)."""
        if self.undo is None and track_undo:
            self.undo = pycrdt.UndoManager(scopes=[self.text], capture_timeout_millis=0)
            self.undo.include_origin(LOCAL)
        if self.mirror is None and not self.ascii:
            self.value()

        def run() -> None:
            with self.doc.transaction(origin=origin):
                for position, delete, insert in edits:
                    self._edit(position, delete, insert)
        return self.capture(run)

    def capture(self, action: Callable[[], object]) -> bytes:
        """Run `action`; return the Yjs update of the transactions it made."""
        updates = self.captured = []
        try:
            action()
        finally:
            self.captured = None
        return updates[0] if len(updates) == 1 else _merge(updates)

    def _length(self) -> int:
        """Length in codepoints (cached: pycrdt's len() is bytes, and not free)."""
        if self.length is None:
            self.length = len(self.value())
        return self.length

    def _edit(self, position: int, delete: int, insert: str) -> None:
        length = self._length()  # edits were checked against it (_check_edits)
        start = self._offset(position)
        if delete:
            end = self._offset(position + delete)
            del self.text[start:end]
        if insert:
            self.text.insert(start, insert)
        self.length = length - delete + len(insert)
        if self.mirror is not None:
            self.mirror = self.mirror[:position] + insert + self.mirror[position + delete:]
            self.ascii = self.ascii and insert.isascii()
        elif not insert.isascii():
            self.ascii = False
            self.value()


def _merge(updates: list[bytes]) -> bytes:
    if not updates:
        return b""
    return pycrdt.merge_updates(*updates)
