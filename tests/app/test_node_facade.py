"""The Node's facade without Qt, over real Nodes on 127.0.0.1: what the window calls (every
method a future, run on the Node's thread), the events it hears, the workspaces of a data
folder (app.workspaces, `hearth leave-workspace`), and that ui/ reaches the app through the
facade only."""

from __future__ import annotations

import ast
import queue
from concurrent.futures import Future
from pathlib import Path

import pytest

from app import joining, sharing, slash
from app.channel_list import channel_list
from app.doc_views import commit_typed, document_view
from app.documents import on_document
from app.events import Delivered, NodeEvent, ObjectsStored
from app.invite import Invite
from app.node import Node, NodeStopped
from app.paths import Paths, workspaces
from app.records import ChannelList, DocumentView, WorkspaceEntry
from app.workspace import Workspace, WorkspaceError
from app.workspaces import (
    folder_entries,
    join_by_invite,
    joined_folder,
    leave_workspace,
    workspace_entries,
)
from tests.support import channels, node_call, node_read
from tests.sync.nodes import CHANNEL, TIMEOUT_S, Cluster, wait_online, wait_until

ROOT = Path(__file__).resolve().parents[2]


def result(future: Future):
    assert isinstance(future, Future)
    return future.result(TIMEOUT_S)


@pytest.fixture
def cluster(tmp_path: Path):
    with Cluster(tmp_path) as running:
        yield running


# Chat ------------------------------------------------------------------------------------------

def test_a_post_through_one_facade_is_read_and_heard_through_the_other(cluster: Cluster):
    pa, pb = cluster.members(2)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    heard: queue.SimpleQueue[NodeEvent] = queue.SimpleQueue()
    unsubscribe = b.facade.subscribe(heard.put)
    posted = a.facade.run(lambda ws: ws.post(CHANNEL, "hello through the facade").id)
    post_id = result(posted)
    assert isinstance(post_id, bytes) and len(post_id) == 32

    def heard_it() -> bool:
        while not heard.empty():
            event = heard.get()
            if isinstance(event, ObjectsStored) and post_id in event.ids:
                return True
        return False

    wait_until(heard_it, what="b's facade to hear of the post")
    unsubscribe()
    page = result(b.facade.run(lambda ws: ws.read(CHANNEL, limit=1)))
    assert [(m.id, m.text, m.author) for m in page] == [
        (post_id, "hello through the facade", a.key)]
    older = result(b.facade.run(lambda ws: ws.read(CHANNEL, limit=50, before=page[0].cursor)))
    assert post_id not in [m.id for m in older]
    assert [m.id for m in result(b.facade.run(lambda ws: ws.search("facade"))).messages] == [post_id]
    # The blocking convenience of the CLI and tests reads the same.
    assert [m.id for m in node_read(b, CHANNEL, limit=1)] == [post_id]


def test_mark_read_clears_what_channels_counts_as_unread(cluster: Cluster):
    pa, pb = cluster.members(2)  # alice and bob
    with Workspace.open(pb) as bob:
        channels(bob, "design")
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    result(b.facade.run(lambda ws: ws.post("design", "first").id))
    result(b.facade.run(lambda ws: ws.post("design", "alice, a second one").id))

    def unread() -> tuple[int, bool] | None:
        return result(a.facade.run(channel_list)).unread.get("design")

    wait_until(lambda: unread() == (2, True), what="alice's unread count of #design")
    listed = result(a.facade.run(channel_list))
    assert isinstance(listed, ChannelList)
    assert "design" in [c.name for c in listed.channels]
    assert listed.names["design"].label == "design"
    assert result(a.facade.run(lambda ws: ws.mark_read("design"))) is None
    assert unread() == (0, False)
    result(b.facade.run(lambda ws: ws.post("design", "third").id))
    wait_until(lambda: unread() == (1, False), what="the next message to count")


def test_private_unread_counts_are_in_the_channel_list_and_marked_read(cluster: Cluster):
    pa, pb = cluster.members(2)  # alice and bob
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    dm = result(b.facade.run(lambda ws: ws.private.create("", [a.key], dm=True)))
    result(b.facade.run(lambda ws: ws.private.post(dm, "alice, lunch?").id))

    def counted() -> ChannelList:
        return result(a.facade.run(channel_list))

    wait_until(lambda: counted().private_unread.get(dm) == (1, True),
               what="alice's unread count of the direct messages")
    assert counted().total_unread == 1
    assert result(a.facade.run(lambda ws: ws.private.mark_read(dm))) is None
    assert counted().private_unread[dm] == (0, False) and counted().total_unread == 0


def test_create_channel_makes_a_public_channel_on_the_nodes_thread(cluster: Cluster):
    (pa,) = cluster.members(1)
    a = cluster.start(pa)
    made = result(a.facade.run(lambda ws: ws.create_channel("planning", public=True).id))
    assert isinstance(made, bytes) and len(made) == 32
    assert "planning" in [c.name for c in result(a.facade.run(channel_list)).channels]


def test_channel_state_topic_members_and_nicknames(cluster: Cluster):
    (pa,) = cluster.members(1)
    with Workspace.open(pa) as alice:
        channels(alice, "design")
    a = cluster.start(pa)
    facade = a.facade
    assert isinstance(result(facade.run(lambda ws: ws.topic("design", "Sketches").id)), bytes)
    result(facade.run(lambda ws: ws.join("design").id))
    result(facade.run(lambda ws: ws.nick("alice l.").id))
    state = result(facade.run(lambda ws: ws.state("design")))
    assert state.topic == "Sketches" and [m.key for m in state.members] == [a.key]
    assert [m.key for m in result(facade.run(lambda ws: ws.channel_members("design")))] == [a.key]
    assert result(facade.run(lambda ws: ws.nickname())) == "alice l."
    assert result(facade.run(lambda ws: ws.nicknames())) == {a.key: "alice l."}
    channel, note = result(facade.run(lambda ws: slash.apply(ws, "design", "/me waves")))
    assert (channel, note) == ("design", None)
    mine = result(facade.run(lambda ws: ws.read("design")))[-1]
    result(facade.run(lambda ws: ws.conversation.delete(mine.id).id))
    assert mine.id not in [m.id for m in result(facade.run(lambda ws: ws.read("design")))]
    result(facade.run(lambda ws: ws.leave("design").id))
    assert result(facade.run(lambda ws: ws.channel_members("design"))) == []
    with pytest.raises(WorkspaceError):
        result(facade.run(lambda ws: ws.state("nobody-posted-here")))
    assert facade.info.key == a.key == facade.key
    assert facade.info.folder == pa.workspace and facade.info.data == pa.data
    code = result(facade.run(lambda ws: ws.members.invite(uses=2)[0]))
    assert Invite.decode(code).workspace == facade.info.workspace_id
    (listed,) = result(facade.run(lambda ws: ws.members.invites()))
    assert (listed.uses, listed.used, listed.creator) == (2, 0, a.key)
    assert [(m.key, m.nick, m.admin) for m in result(facade.run(lambda ws: ws.members.all()))] == [
        (a.key, "alice l.", True)]


def test_my_posts_are_pending_until_a_peer_has_them(cluster: Cluster):
    pa, pb = cluster.members(2)
    a = cluster.start(pa)
    post_id = result(a.facade.run(lambda ws: ws.post(CHANNEL, "nobody has this yet").id))
    assert post_id in a.facade.pending()
    delivered: queue.SimpleQueue[NodeEvent] = queue.SimpleQueue()
    a.facade.subscribe(lambda e: isinstance(e, Delivered) and delivered.put(e))
    cluster.start(pb, peers=[a])
    wait_until(lambda: post_id not in a.facade.pending(), what="a peer to receive the post")
    assert not delivered.empty()


# Sync ------------------------------------------------------------------------------------------

def test_peers_lists_an_incoming_peer_and_one_added_by_address(cluster: Cluster):
    pa, pb = cluster.members(2)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    wait_online(a, b)
    assert result(a.facade.online()) == {b.key}
    incoming = [r for r in result(a.facade.peers()) if r["source"] == "incoming"]
    assert [(r["key"], r["connected"]) for r in incoming] == [(b.key.hex(), True)]
    dialled = [r for r in result(b.facade.peers()) if r["port"] == a.port]
    assert [(r["key"], r["connected"]) for r in dialled] == [(a.key.hex(), True)]
    assert result(a.facade.add_peer("127.0.0.1", 9)) is None
    assert any(r["address"] == "127.0.0.1:9" and r["source"] == "manual" and not r["connected"]
               for r in result(a.facade.peers()))


def test_a_node_that_is_not_running_answers_with_nodestopped(cluster: Cluster):
    (pa,) = cluster.members(1)
    node = Node(pa, interfaces=["127.0.0.1"], mdns=False)
    with pytest.raises(NodeStopped):  # not started: a failed future, never a raise
        result(node.facade.run(lambda ws: ws.post(CHANNEL, "too early").id))
    node.start()
    node.stop()
    for future in (node.facade.run(lambda ws: ws.post(CHANNEL, "too late").id), node.facade.run(channel_list),
                   node.facade.run(lambda ws: ws.documents.all())):
        with pytest.raises(NodeStopped):
            result(future)


# Documents -------------------------------------------------------------------------------------

def test_documents_through_run_edit_fork_merge_tag_and_undo(cluster: Cluster):
    (pa,) = cluster.members(1)
    node = cluster.start(pa)

    def on(doc: bytes | str, action):
        """action(the library's documents, the document) on the Node's thread, waited for."""
        return result(node.facade.run(on_document(doc, action)))

    def text(d) -> str:
        return d.text(d.heads("main"))

    doc = bytes.fromhex(result(node.facade.run(lambda ws: ws.documents.new("Plan").id)))
    view = on(doc, document_view)
    assert isinstance(view, DocumentView)
    assert (view.title, view.text, [b.name for b in view.branches]) == ("Plan", "", ["main"])
    committed = on(doc, lambda docs, d: commit_typed(docs, d, list(view.heads), "", "step one 😀"))
    assert committed.text == "step one 😀" and committed.heads == [committed.commit]
    assert on(doc, lambda docs, d: docs.fork(d, "main", "draft"))
    assert on(doc, lambda docs, d: docs.write(d, "step one 😀, step two", branch="draft"))
    assert on(doc, lambda _, d: text(d)) == "step one 😀"
    on(doc, lambda docs, d: docs.merge(d, "draft", "main"))
    assert on(doc, lambda _, d: text(d)) == "step one 😀, step two"
    tagged = on(doc, lambda docs, d: docs.tag(d, "v1", None, "main"))
    assert on(doc, lambda _, d: d.tags()) == {"v1": tagged}
    on(doc, lambda docs, d: docs.write(d, "step one 😀, step two, three"))
    on(doc, lambda docs, d: docs.undo(d))
    assert on(doc, lambda _, d: text(d)) == "step one 😀, step two"
    on(doc, lambda docs, d: docs.redo(d))
    assert on(doc, lambda _, d: text(d)) == "step one 😀, step two, three"
    assert on(doc, lambda _, d: d.text([committed.commit])) == "step one 😀"
    history = on(doc, lambda _, d: d.history("main"))
    assert committed.commit in [c.id for c in history]
    assert {c.author for c in history} == {node.key}
    on(doc, lambda docs, d: docs.set_main(d, "draft"))
    assert [b.name for b in on(doc, lambda _, d: d.branches()) if b.main] == ["draft"]
    on(doc, lambda docs, d: docs.rename(d, "Final plan"))
    assert [s.title for s in result(node.facade.run(lambda ws: ws.documents.all()))] \
        == ["Final plan"]
    assert on("Final plan", lambda _, d: sorted(d.editors())) == [node.key]  # as the CLI names it
    assert on(doc, lambda _, d: d.share("main").encode()).startswith("hearthcap1-")
    view = on(doc, lambda docs, d: document_view(docs, d, "main"))
    assert view.names == {node.key: "alice"} and view.branch == "main"


# Workspaces of a data folder -------------------------------------------------------------------

def test_leave_workspace_refuses_the_running_one_and_removes_a_stopped_one(cluster: Cluster):
    (pa,) = cluster.members(1)
    Workspace.init(Paths(pa.data, "second"), "alice").close()
    node = cluster.start(pa)
    with pytest.raises(WorkspaceError, match="running Hearth"):
        leave_workspace(pa.data, pa.workspace)
    assert pa.replica.exists()
    assert result(node.facade.run(lambda ws: ws.post(CHANNEL, "still here").id))
    leave_workspace(pa.data, "second")  # the running Node holds another one
    assert workspaces(pa.data) == [pa.workspace]
    with pytest.raises(WorkspaceError, match="no workspace"):
        leave_workspace(pa.data, "second")
    with pytest.raises(WorkspaceError):
        leave_workspace(pa.data, "../outside")
    node.stop()
    leave_workspace(pa.data, pa.workspace)
    assert not pa.workspace_dir.exists() and workspaces(pa.data) == []
    assert (pa.data / "node.lock").read_text() == ""  # released


def test_a_joined_workspace_is_named_once_its_genesis_arrives(cluster: Cluster, tmp_path: Path):
    (pa,) = cluster.members(1)  # alice's, named "default" by its creator
    mine = Paths.resolve(tmp_path / "me", "default")
    Workspace.init(mine, "me", name="Home").close()
    code = sharing.invite_for(pa, joining.identity_key(mine))
    folder = join_by_invite(mine.data, code, "bob")
    assert folder == joined_folder(Invite.decode(code).workspace)
    assert join_by_invite(mine.data, code, "bob") == folder  # already here: kept
    assert [(e.folder, e.name) for e in workspace_entries(mine.data)] == [
        ("default", "Home"), (folder, None)]
    a = cluster.start(pa)
    me = cluster.start(Paths(mine.data, folder), peers=[a])
    assert me.facade.info.name == folder  # no genesis yet at start

    def listed() -> list[WorkspaceEntry]:
        return result(me.facade.run(folder_entries))

    wait_until(lambda: [(e.folder, e.name, e.current) for e in listed()] == [
        ("default", "Home", False), (folder, "default", True)], what="the genesis")
    assert [e.label for e in listed()] == ["Home", "default"]
    # Two workspaces whose creators named them alike are told apart by their folders.
    Workspace.init(Paths(mine.data, "zz"), "me", name="H\u043eme").close()  # a Cyrillic о
    assert [e.label for e in listed()] == ["Home (default)", "default", "H\u043eme (zz)"]


def test_hearth_leave_workspace(hearth, tmp_path: Path):
    data = tmp_path / "data"
    Workspace.init(Paths(data, "default"), "ada").close()
    Workspace.init(Paths(data, "other"), "ada").close()
    assert "left other" in hearth("leave-workspace", "other", data=data).stdout
    assert workspaces(data) == ["default"]
    assert "no workspace 'other'" in hearth.fails("leave-workspace", "other", data=data)


# The window's side -----------------------------------------------------------------------------

FORBIDDEN = {"submit", "call", "_submit", "replica", "service", "recorder", "activity",
             "_workspace", "_service", "workspace_for_tests", "service_for_tests"}
# Executors of the window's own (ThreadPoolExecutors), never the Node's: the Controller's
# worker, ui/image_viewer.py's decoder, ui/pending_files.py's writer of pasted images and
# ui/import_dialog.py's Slack import (its own connection, so the Node syncs on meanwhile).
ALLOWED = {("_worker", "submit"), ("_decoder", "submit"), ("_writer", "submit"),
           ("_pool", "submit")}


def test_the_window_reaches_the_app_only_through_the_facade():
    """No attribute of ui/ code names the Node's internals (a Paths' `workspace`, a folder
    name, is the one `.workspace` allowed)."""
    found = []
    for path in sorted((ROOT / "ui").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute):
                continue
            owner = node.value
            owner_name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
            if (owner_name, node.attr) in ALLOWED:
                continue
            if node.attr in FORBIDDEN or (node.attr == "workspace"
                                          and not owner_name.endswith("paths")):
                found.append(f"{path.name}:{node.lineno} .{node.attr}")
    assert found == []


def test_may_answers_what_the_channel_policies_let_me_post(cluster: Cluster):
    """The window offers topic editing only to those the channel's policies allow: `may`
    answers what ingest would decide (a denied topic would be stored hidden)."""
    from core.policy import Policy

    (pa,) = cluster.members(1)
    a = cluster.start(pa)
    assert result(a.facade.run(lambda ws: ws.may("design", "post/topic"))) is True
    deny = Policy("deny", frozenset({a.key.hex()}), frozenset({"post/topic"}),
                  frozenset({"append"}))
    node_call(a, lambda: a.workspace.set_policies("design", [deny]))
    assert result(a.facade.run(lambda ws: ws.may("design", "post/topic"))) is False
    assert result(a.facade.run(lambda ws: ws.may("design", "post/text"))) is True
