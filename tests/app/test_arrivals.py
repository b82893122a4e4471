"""What the Node says stored objects changed (app/arrivals.py): per channel the messages, the
channel's state, the document (and branch), nicknames, membership."""

from __future__ import annotations

from pathlib import Path

from app.arrivals import Arrivals
from app.documents import Documents
from app.events import (
    ChannelChanged,
    DocumentChanged,
    MembershipChanged,
    MessagesArrived,
    NicknamesChanged,
)
from app.workspace import Workspace
from tests.support import channels, create_workspace, members_in_step, share


def test_stored_objects_say_what_they_changed(tmp_path: Path):
    ws = Workspace.open(create_workspace(tmp_path))
    try:
        made: list[bytes] = []
        ws.on_created = lambda obj: made.append(obj.id)
        channels(ws, "design")
        first = ws.post("design", "hello").id
        ws.topic("design", "plans")
        second = ws.post("Design", "again").id  # the same channel, named in another case
        ws.nick("ada")
        doc = Documents(ws).new("Plan")
        changes = Arrivals(ws).changes(made)
        arrived = [e for e in changes if isinstance(e, MessagesArrived)]
        assert arrived == [MessagesArrived("design", (first, second))]
        assert arrived[0].names("DESIGN") and not arrived[0].names("general")
        assert ChannelChanged("design") in changes
        assert {e.doc for e in changes if isinstance(e, DocumentChanged)} == {bytes.fromhex(doc.id)}
        assert NicknamesChanged() in changes
        assert MembershipChanged() not in changes
    finally:
        ws.close()


def test_a_branch_whose_commits_arrive_before_it_is_its_documents_once_it_arrives(tmp_path: Path):
    """Sync brings a document's streams in any order: bob may hold commits of ada's new branch
    before the doc/branch object that names it. Later commits on it still say which document
    and branch changed, so a window showing that branch reloads (it once took the branch for a
    document of its own, for good)."""
    with members_in_step(tmp_path, ["ada", "bob"]) as (ada, bob):
        docs = Documents(ada)
        doc = bytes.fromhex(docs.new("Plan").id)
        docs.write(docs.open(doc), "plan")
        share(ada, bob)
        made: list = []
        ada.on_created = made.append
        docs.fork(docs.open(doc), "main", "alt")
        docs.write(docs.open(doc), "plan, alt", branch="alt")
        commits = [o for o in made if o.type == "doc/commit"]
        rest = [o for o in made if o.type != "doc/commit"]
        assert commits and any(o.type == "doc/branch" for o in rest)
        arrivals = Arrivals(bob)

        def arrive(objects: list) -> list:
            bob.replica.ingest([o.raw for o in objects])
            return arrivals.changes([o.id for o in objects])

        assert arrive(commits) == []  # which document is not known yet
        assert arrive(rest) == [DocumentChanged(doc, None)]
        made.clear()
        docs.write(docs.open(doc), "plan, alt, more", branch="alt")
        assert arrive(made) == [DocumentChanged(doc, "alt")]
