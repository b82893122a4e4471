"""Documents over real sync: two Nodes of one workspace on 127.0.0.1 edit one document at once.

The replicas are made the way people make them (Workspace.init, then sharing.invite and
join_workspace); each runs as an app.node.Node (real sockets, no mDNS), bob's dialling alice's:
tests/conftest.py's `two_members` and `two_nodes`.
Document operations run through app.documents either on a Node's own thread (Node.call) or from
a second connection to the same data folder, which the Node notices and pushes. Waits poll with
a deadline; nothing sleeps a fixed time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from app.documents import Documents
from app.node import Node
from app.paths import Paths
from app.workspace import Workspace, WorkspaceError
from core.documents import Document, DocumentError
from tests.support import TIMEOUT_S, TwoNodes, node_call, node_submit, wait_until

T = TypeVar("T")


def on_node(node: Node, action: Callable[[Documents], T]) -> T:
    """Run `action` with the node's Documents, on the node's thread (its one writer)."""
    return node_call(node, lambda: action(Documents(node.workspace)))


def state(node: Node, doc_id: str, branch: str = "main") -> tuple[list[str], str] | None:
    """(heads, text) of a branch as the node's replica holds it now; None while unreadable."""
    def read(docs: Documents) -> tuple[list[str], str] | None:
        try:
            doc = docs.open(doc_id)
            heads = doc.heads(branch)
            return heads, doc.text(heads)
        except (WorkspaceError, DocumentError):
            return None
    return on_node(node, read)


def converged(a: Node, b: Node, doc_id: str, *, heads: int) -> tuple[list[str], str] | None:
    first, second = state(a, doc_id), state(b, doc_id)
    if first is not None and first == second and len(first[0]) == heads:
        return first
    return None


def create_shared(a: Node, b: Node, text: str) -> str:
    """Alice creates a document, writes `text` and makes bob an editor; bob can read it."""
    def create(docs: Documents) -> str:
        doc = docs.new("Shared")
        docs.write(doc, text)
        docs.add_editor(doc, b.key.hex())
        return doc.id
    doc_id = on_node(a, create)
    wait_until(lambda: (found := state(b, doc_id)) is not None and found[1] == text,
               what="bob to receive the document and its key")
    return doc_id


def test_concurrent_edits_on_two_nodes_converge(two_nodes: TwoNodes) -> None:
    a, b = two_nodes
    doc_id = create_shared(a, b, "shared base")
    base_heads = state(a, doc_id)[0]

    # Each opens the document at the same heads, then both commit at once.
    opened: dict[str, Document] = {
        "a": on_node(a, lambda docs: docs.open(doc_id)),
        "b": on_node(b, lambda docs: docs.open(doc_id)),
    }
    assert opened["a"].heads() == opened["b"].heads() == base_heads
    futures = [
        node_submit(a, lambda: Documents(a.workspace).edit(opened["a"], [(0, 0, "A> ")])),
        node_submit(b, lambda: Documents(b.workspace).edit(opened["b"], [(11, 0, " <B")])),
    ]
    commits = sorted(f.result(TIMEOUT_S) for f in futures)

    heads, text = wait_until(lambda: converged(a, b, doc_id, heads=2),
                             what="both replicas to hold both commits")
    assert heads == commits
    assert text == "A> shared base <B"

    # The next edit on either side merges the fork, and the merge reaches the other.
    merge = on_node(b, lambda docs: docs.write(docs.open(doc_id), "A> shared base <B!"))
    heads, text = wait_until(lambda: converged(a, b, doc_id, heads=1),
                             what="the merge commit to reach alice")
    assert heads == [merge] and text == "A> shared base <B!"


def test_edits_from_another_connection_are_pushed(two_nodes: TwoNodes,
                                                  two_members: tuple[Paths, Paths]) -> None:
    """A `hearth doc write` beside a running Node: the Node notices the outside write."""
    a, b = two_nodes
    _, bob = two_members
    doc_id = create_shared(a, b, "one two three")
    with Workspace.open(bob) as ws:  # a second connection to bob's replica file
        docs = Documents(ws)
        beside = docs.open(doc_id)
    alice_doc = on_node(a, lambda docs: docs.open(doc_id))
    with Workspace.open(bob) as ws:
        outside = Documents(ws).edit(beside, [(3, 1, "_")])  # "one_two three"
    inside = on_node(a, lambda docs: docs.edit(alice_doc, [(8, 0, "and ")]))

    heads, text = wait_until(lambda: converged(a, b, doc_id, heads=2),
                             what="the outside write to reach alice and hers to reach bob")
    assert heads == sorted([outside, inside])
    assert text == "one_two and three"

    # Bob forks and merges from outside too; branches travel like everything else.
    with Workspace.open(bob) as ws:
        docs = Documents(ws)
        doc = docs.open(doc_id)
        docs.fork(doc, "main", "bob's draft")
        docs.write(doc, "DRAFT " + doc.text(doc.heads("bob's draft")), branch="bob's draft")
    # The fork and the write are two objects: alice may hold the branch a moment before its
    # write.
    wait_until(lambda: (state(a, doc_id, "bob's draft") or ([], ""))[1]
               == "DRAFT one_two and three", what="bob's branch and its write to reach alice")
    on_node(a, lambda docs: docs.merge(docs.open(doc_id), "bob's draft", "main"))
    heads, text = wait_until(lambda: converged(a, b, doc_id, heads=1),
                             what="alice's merge to reach bob")
    assert text == "DRAFT one_two and three"
