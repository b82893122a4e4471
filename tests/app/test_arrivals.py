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
from tests.support import channels, create_workspace


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
