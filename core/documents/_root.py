"""The root branch: publishing objects, which root objects count (editors' changes and removals
in the root state an object names), editors, title, visibility, branches, main, tags, and
members' requests to edit.

Who edits. The editors in a root state are those the creator listed (`doc/root`, then its
`doc/editors` changes in that state's causal past) and, when the creator's latest `doc/editing`
in that causal past says "workspace", every member of the workspace too (`members`, handed in
by the app from the membership view). So a member who joins later edits as soon as their
admission is held, with no request; a removed member's objects are left out by storage
(those their removal did not keep), and the workspace epoch that the removal starts makes new
branch keys that they cannot open. A workspace-editable document is workspace-readable: its
members write with the keys published under the workspace secret (`BranchKeys.writing`). A
`doc/editing` is a kind of its own (an added field would make older versions refuse it); a
version that does not know it reads such a document as editable by those listed alone."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..causal import causal_order
from ..identity import Identity
from ..objects import Object, authored
from ._held import _Cache, _RootIndex
from ._records import DocumentError, RequestInfo

if TYPE_CHECKING:
    from ._document import Document

# Root kinds that count from the creator alone, and those that count from any member.
_CREATOR_KINDS = ("doc/editors", "doc/title", "doc/visibility", "doc/editing")
_MEMBER_KINDS = ("doc/edit-request",)


class RootBranch:
    """A document's root-branch state (`doc.root_branch`): publishing, who counts, who edits,
    title, visibility, requests to edit, branches, main, tags."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.held = doc.held
        self.root = doc.root

    # Publishing: new objects and the caches they change ---------------------------------------

    def publish(self, identity: Identity, kind: str, stream: bytes, body: dict,
                links: Iterable[bytes]) -> Object:
        heads = [(i, self.held.objects[i].ts) for i in set(links) if i in self.held.objects]
        now = self.held.now() if self.held.clock is not None else max(
            (t for _, t in heads), default=0)
        obj = authored(identity, kind, stream=stream, body=body, now_ms=now, heads=heads)
        self.held.store(obj)
        self.held.new.append(obj)
        if kind == "doc/commit":  # a new commit changes its branch's heads and nothing else
            self.held.cache.heads.pop(stream, None)
        elif stream == self.root.id and kind not in ("doc/editors", "doc/editing") \
                and self.held.cache.index is not None:
            self._extend_index(obj)
        else:
            self.held.cache = _Cache()
        return obj

    def publish_root(self, identity: Identity, kind: str, body: dict) -> Object:
        return self.publish(identity, kind, self.root.id, body, self.heads())

    # The root branch: editors, title, branches, main, tags ------------------------------------

    def is_change(self, obj: Object) -> bool:
        return obj.type == "doc/editors" and obj.author == self.root.author

    def is_root_change(self, obj: Object) -> bool:
        """A change of who edits: the creator's editors changes and editing modes."""
        return obj.type in ("doc/editors", "doc/editing") and obj.author == self.root.author

    def _inherit(self, changes: dict[bytes, frozenset[bytes]], obj: Object) -> frozenset[bytes]:
        parents = {changes[link] for link in obj.links if link in changes}
        own = frozenset([obj.id]) if self.is_root_change(obj) else frozenset()
        if len(parents) == 1 and not own:
            return parents.pop()
        return own.union(*parents)

    def index(self) -> _RootIndex:
        index = self.held.cache.index
        if index is None:
            members = self.held.streams.get(self.root.id, [])
            # Who is an editor where may change when a root object linked to arrives.
            self.held.cache.waiting.update(link for o in members for link in o.links
                                           if link not in self.held.objects)
            changes: dict[bytes, frozenset[bytes]] = {}
            for obj in causal_order(members):
                changes[obj.id] = self._inherit(changes, obj)
            removals: dict[bytes, list[tuple[bytes, frozenset[bytes]]]] = {}
            for obj in self.held.in_root("doc/editors"):
                if self.is_change(obj) and obj.body["remove"]:
                    past = frozenset(o.id for o in self.held.past([obj.id], self.root.id))
                    for key in obj.body["remove"]:
                        removals.setdefault(key, []).append((obj.id, past))
            every = frozenset(o.id for kind in ("doc/editors", "doc/editing")
                              for o in self.held.in_root(kind) if self.is_root_change(o))
            index = self.held.cache.index = _RootIndex(changes, every, removals)
        return index

    def _extend_index(self, obj: Object) -> None:
        """Take in a root object just made here (no editor change): nothing links to it yet."""
        index = self.index()
        index.changes[obj.id] = self._inherit(index.changes, obj)
        if index.heads is not None and self.counts(obj):
            index.heads.difference_update(obj.links)
            index.heads.add(obj.id)
        self.held.cache.branches = self.held.cache.branch_ids = self.held.cache.main = None
        self.held.cache.sealed.clear()

    def counts(self, obj: Object) -> bool:
        """Whether a root-branch object takes effect. Editors, titles and visibility: the
        creator's only. Requests to edit: any member's (they ask for nothing but attention).
        Others: its author was an editor in the root state it names, and each removal of its
        author either is in its causal past or acknowledges it (so what a removed editor makes
        in a stale view, or dates before the removal without it being seen, counts for nothing).
        """
        found = self.held.cache.counts.get(obj.id)
        if found is None:
            if obj.type in _CREATOR_KINDS:
                found = obj.author == self.root.author
            elif obj.type in _MEMBER_KINDS:
                found = True
            else:
                index = self.index()
                before = index.changes.get(obj.id, frozenset())
                found = obj.author in self.editors(obj.links) and all(
                    removal in before or obj.id in past
                    for removal, past in index.removals.get(obj.author, ()))
            self.held.cache.counts[obj.id] = found
        return found

    def heads(self) -> list[bytes]:
        """Heads of the root branch among the objects that count: what a new one acknowledges."""
        index = self.index()
        if index.heads is None:
            counting = [o for o in self.held.streams.get(self.root.id, []) if self.counts(o)]
            linked = {link for o in counting for link in o.links}
            index.heads = {o.id for o in counting if o.id not in linked}
        return sorted(index.heads)

    def _editing(self, root_heads: Iterable[bytes] | None) -> tuple[frozenset[bytes], bool]:
        """(editors listed, whether every member edits) in the root state at `root_heads`."""
        index = self.index()
        if root_heads is None:
            changes = index.every_change
        else:
            found = {index.changes[h] for h in root_heads if h in index.changes}
            changes = found.pop() if len(found) == 1 else frozenset().union(*found)
        state = self.held.cache.editors.get(changes)
        if state is None:
            current = set(self.root.body["editors"])
            # Concurrent modes (never made by one creator at once): the later (ts, id) wins.
            modes = []
            for change in causal_order(self.held.objects[c] for c in changes):
                if change.type == "doc/editing":  # only the creator's changes are here
                    modes.append(change)
                    continue
                current.update(change.body["add"])
                current.difference_update(change.body["remove"])
            latest = max(modes, key=lambda o: (o.ts, o.id), default=None)
            everyone = latest is not None and latest.body["mode"] == "workspace"
            state = self.held.cache.editors[changes] = (frozenset(current), everyone)
        return state

    def editors(self, root_heads: Iterable[bytes] | None = None) -> frozenset[bytes]:
        """Editors in the root-branch state at `root_heads` (default: everything held): those
        listed, and every member while the document is workspace-editable there."""
        listed, everyone = self._editing(root_heads)
        return listed | self.doc.members if everyone else listed

    def listed_editors(self) -> frozenset[bytes]:
        """The editors the creator listed (whatever the editing mode)."""
        return self._editing(None)[0]

    @property
    def editing(self) -> str:
        """"workspace" (every member edits) or "listed" (the editors listed alone)."""
        return "workspace" if self._editing(None)[1] else "listed"

    def require_editor(self, identity: Identity) -> None:
        if identity.public_key not in self.editors():
            raise DocumentError("only the document's editors can do that")

    def require_creator(self, identity: Identity) -> None:
        if identity.public_key != self.root.author:
            raise DocumentError("only the document's creator can do that")

    @property
    def title(self) -> str:
        titles = [o for o in self.held.current(self.held.in_root("doc/title")) if self.counts(o)]
        return max(titles, key=lambda o: (o.ts, o.id)).body["title"] if titles else \
            self.root.body["title"]

    def rename(self, identity: Identity, title: str) -> None:
        self.require_creator(identity)
        self.publish_root(identity, "doc/title", {"title": title})

    # Visibility ------------------------------------------------------------------------------

    @property
    def visibility(self) -> str:
        """"workspace" (every member reads every branch) or "private" (editors and capability
        holders): the creator's latest `doc/visibility`; a document with none is private, as
        every document made before visibility existed was."""
        modes = [o for o in self.held.current(self.held.in_root("doc/visibility"))
                 if self.counts(o)]
        return max(modes, key=lambda o: (o.ts, o.id)).body["mode"] if modes else "private"

    # Requests to edit ------------------------------------------------------------------------

    def _open_requests(self) -> dict[bytes, Object]:
        """Author -> their latest request, for those whose latest is open, who are not
        editors, and whom no editor change of the creator has answered (added or removed them
        with the request in its causal past: a removed editor's old request stays closed)."""
        latest: dict[bytes, Object] = {}
        for request in self.held.current(self.held.in_root("doc/edit-request")):
            known = latest.get(request.author)
            if known is None or (request.ts, request.id) > (known.ts, known.id):
                latest[request.author] = request
        editors = self.editors()
        wanted = {a for a, r in latest.items() if r.body["open"] and a not in editors}
        answers = [c for c in self.held.in_root("doc/editors") if self.is_change(c)
                   and wanted & set(c.body["add"] + c.body["remove"])]
        pasts = {c.id: {o.id for o in self.held.past([c.id], self.root.id)} for c in answers}
        return {a: r for a, r in latest.items() if a in wanted and not any(
            a in c.body["add"] + c.body["remove"] and r.id in pasts[c.id] for c in answers)}

    def requests(self) -> list[RequestInfo]:
        """Open requests to edit, oldest first (accepting one is `add_editor`)."""
        return [RequestInfo(r.hex, r.author, r.ts, r.body["note"])
                for r in sorted(self._open_requests().values(), key=lambda r: (r.ts, r.id))]

    def ask_edit(self, identity: Identity, note: str = "") -> None:
        """Ask the editors to make `identity` one of them."""
        if identity.public_key in self.editors():
            raise DocumentError("you are an editor of this document already")
        if identity.public_key in self._open_requests():
            raise DocumentError("you have asked already; an editor sees your request")
        self.publish_root(identity, "doc/edit-request", {"note": note, "open": True})

    def withdraw_request(self, identity: Identity) -> None:
        if identity.public_key not in self._open_requests():
            raise DocumentError("you have no open request to edit this document")
        self.publish_root(identity, "doc/edit-request", {"note": "", "open": False})

    def branch_objects(self) -> list[Object]:
        if self.held.cache.branches is None:
            self.held.cache.branches = sorted(
                (o for o in self.held.in_root("doc/branch") if self.counts(o)),
                key=lambda o: (o.ts, o.id))
        return self.held.cache.branches

    def branch_ids(self) -> frozenset[bytes]:
        if self.held.cache.branch_ids is None:
            self.held.cache.branch_ids = frozenset(b.id for b in self.branch_objects())
        return self.held.cache.branch_ids

    def main(self) -> bytes | None:
        horizon = self.held.horizon()
        found = self.held.cache.main
        if found is not None and (found[1] is None or horizon is None or horizon < found[1]):
            return found[0]
        branches = self.branch_ids()
        pointers = [o for o in self.held.in_root("doc/main")
                    if self.counts(o) and o.body["branch"] in branches]
        later = [o.ts for o in pointers if horizon is not None and o.ts > horizon]
        pointers = [o for o in pointers if horizon is None or o.ts <= horizon]
        if pointers:
            main = max(pointers, key=lambda o: (o.ts, o.id)).body["branch"]
        else:
            first = [b for b in self.branch_objects() if b.body["name"] == "main"]
            main = first[0].id if first else None
        self.held.cache.main = (main, min(later, default=None))
        return main

    def branch(self, name_or_id: str) -> bytes:
        """A branch by name ("main" follows set_main) or by hex id."""
        branches = self.branch_objects()
        if name_or_id == "main" and (main := self.main()) is not None:
            return main
        for branch in branches:
            if branch.id.hex() == name_or_id:
                return branch.id
        named = [b for b in branches if b.body["name"] == name_or_id]
        if not named:
            raise DocumentError(f"no branch {name_or_id!r}")
        return named[0].id

    def set_main(self, identity: Identity, branch: str) -> None:
        """Make `branch` the document's main (what opens by default)."""
        self.require_editor(identity)
        self.publish_root(identity, "doc/main", {"branch": self.branch(branch)})

    def tags(self) -> dict[str, str]:
        latest: dict[str, Object] = {}
        for tag in self.held.current(self.held.in_root("doc/tag")):
            if self.counts(tag):
                current = latest.get(tag.body["name"])
                if current is None or (tag.ts, tag.id) > (current.ts, current.id):
                    latest[tag.body["name"]] = tag
        return {name: tag.body["commit"].hex() for name, tag in sorted(latest.items())}
