"""A stateful model of a private channel's conversation across four members' replicas
(app/private_conversation.py): people post, reply, react, take reactions back and edit; the
channel's creator takes people out; objects travel between replicas in any order and any
subset, on the one ingest path a sync or a bundle uses; members close their workspace and open
it again (a start). The promises, checked after every step: someone taken out opens nothing
made by a writer who knew they were out (whatever they receive), and members who hold the
same objects read the same conversation; what a member reads, also from what the computer
kept of the channel after a start (app/private_kept.py), is what computing the channel again
from every box gives; out of the channel, the computer keeps nothing of it."""

from __future__ import annotations

import itertools
import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from app.private_conversation import PrivateConversation
from app.workspace import Workspace, WorkspaceError
from core.private_conversation import ConversationState
from tests.support import create_workspace, join_member, share_all

NICKS = ("ada", "bob", "cat", "dan")
WHO = st.integers(0, len(NICKS) - 1)
OTHERS = st.integers(1, len(NICKS) - 1)
EMOJI = st.sampled_from(["👍", "🎉", "👀"])


def _raws(ws: Workspace) -> list[bytes]:
    return [row[0] for row in ws.replica.conn.execute("SELECT raw FROM objects ORDER BY oid")]


def _recomputed(ws: Workspace, channel: bytes) -> list[tuple]:
    """The channel's messages computed again from every box, touching nothing stored."""
    view = ws.private.view(channel)
    state = ConversationState.compute(PrivateConversation(ws.private)._parsed(view, view.posts))
    return [(m.id, m.author, m.ts, m.text, m.edited, m.reply_to, len(m.replies),
             tuple((e, tuple(by)) for e, by in m.reactions.items()), m.in_channel,
             tuple(d["list"] for d in m.files))
            for m in map(state.messages.__getitem__, state.channel)]


def _shown(messages) -> list[tuple]:
    return [(m.id, m.author, m.ts, m.text, m.edited, m.reply_to, m.replies,
             tuple((r.emoji, r.by) for r in m.reactions), m.in_channel,
             tuple(f.list for f in m.files)) for m in messages]


class PrivateConversationModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._tmp = tempfile.TemporaryDirectory()
        root = Path(self._tmp.name)
        first = create_workspace(root, NICKS[0], NICKS[0])
        folders = [first] + [join_member(root, first, nick, nick) for nick in NICKS[1:]]
        self.folders = folders
        self.spaces = [Workspace.open(p) for p in folders]
        share_all(self.spaces)
        ada = self.spaces[0]
        self.channel = ada.private.create("model", [ws.key for ws in self.spaces[1:]])
        ada.private.post(self.channel, "the first message")
        share_all(self.spaces)
        self.out: set[int] = set()  # taken out of the channel
        # Sealed posts each writer made knowing who was out then: id -> those out
        self.made: dict[bytes, frozenset[int]] = {}
        self.texts = itertools.count()

    def teardown(self) -> None:
        for ws in self.spaces:
            ws.close()
        self._tmp.cleanup()

    def _in(self, who: int) -> bool:
        ws = self.spaces[who]
        return ws.key in ws.private.view(self.channel).current

    def _write(self, who: int, action) -> None:
        """Run `action(ws, messages)` for a member who holds the newest key; remember what it
        made and who was out by the writer's own replica."""
        ws = self.spaces[who]
        if not self._in(who):
            return
        view = ws.private.view(self.channel)
        out = frozenset(n for n, other in enumerate(self.spaces)
                        if other.key not in view.current)
        try:
            messages = ws.private.read(self.channel, limit=0)
            threads = [m for top in messages for m in ws.conversation.thread(top.id)]
            obj = action(ws, threads)
        except WorkspaceError as exc:  # a key not here yet; nothing to edit; reacted already
            note(f"{NICKS[who]}: refused: {exc}")
            return
        if obj is not None:
            self.made[obj.id] = out
            note(f"{NICKS[who]} wrote {obj.id.hex()[:8]} (out: {sorted(out)})")

    @rule(who=WHO)
    def post(self, who: int) -> None:
        text = f"message {next(self.texts)}"
        self._write(who, lambda ws, _: ws.private.post(self.channel, text))

    @rule(who=WHO, pick=st.integers(0, 50), broadcast=st.booleans())
    def reply(self, who: int, pick: int, broadcast: bool) -> None:
        text = f"reply {next(self.texts)}"
        self._write(who, lambda ws, shown: ws.conversation.reply(
            shown[pick % len(shown)].id, text, broadcast=broadcast) if shown else None)

    @rule(who=WHO, pick=st.integers(0, 50), emoji=EMOJI)
    def react(self, who: int, pick: int, emoji: str) -> None:
        self._write(who, lambda ws, shown: ws.conversation.react(
            shown[pick % len(shown)].id, emoji) if shown else None)

    @rule(who=WHO, pick=st.integers(0, 50), emoji=EMOJI)
    def unreact(self, who: int, pick: int, emoji: str) -> None:
        self._write(who, lambda ws, shown: ws.conversation.unreact(
            shown[pick % len(shown)].id, emoji) if shown else None)

    @rule(who=WHO, pick=st.integers(0, 50))
    def edit(self, who: int, pick: int) -> None:
        text = f"edited {next(self.texts)}"
        mine = lambda ws, shown: [m for m in shown if m.author == ws.key]  # noqa: E731
        self._write(who, lambda ws, shown: ws.conversation.edit(
            mine(ws, shown)[pick % len(mine(ws, shown))].id, text) if mine(ws, shown) else None)

    @rule(who=WHO, pick=st.integers(0, 50))
    def delete(self, who: int, pick: int) -> None:
        mine = lambda ws, shown: [m for m in shown if m.author == ws.key]  # noqa: E731
        self._write(who, lambda ws, shown: ws.conversation.delete(
            mine(ws, shown)[pick % len(mine(ws, shown))].id) if mine(ws, shown) else None)

    @rule(who=WHO)
    def reopen(self, who: int) -> None:
        """A member quits and starts again: what was in memory is gone."""
        self.spaces[who].close()
        self.spaces[who] = Workspace.open(self.folders[who])

    @precondition(lambda self: len(self.out) < len(NICKS) - 2)
    @rule(who=OTHERS, told=OTHERS)
    def take_out(self, who: int, told: int) -> None:
        """ada takes someone out; her sync with `told` is cut short right after the removal,
        before the new key sealed after it."""
        ada = self.spaces[0]
        if who in self.out:
            return
        note(f"ada takes {NICKS[who]} out; {NICKS[told]} hears of it without the new key")
        before = len(_raws(ada))
        ada.private.remove_member(self.channel, self.spaces[who].key)
        self.out.add(who)
        self.spaces[told].replica.ingest(_raws(ada)[:before + 1])

    @rule(source=WHO, to=WHO, seed=st.integers(0, 2**32 - 1), share=st.floats(0.1, 1.0))
    def deliver(self, source: int, to: int, seed: int, share: float) -> None:
        """A random part of what `source` holds reaches `to`, in a random order."""
        if source != to:
            raws = _raws(self.spaces[source])
            random.Random(seed).shuffle(raws)
            self.spaces[to].replica.ingest(raws[:max(1, int(len(raws) * share))])

    @rule(source=WHO, to=WHO, short=st.integers(1, 3))
    def deliver_cut_short(self, source: int, to: int, short: int) -> None:
        """All but the last `short` objects `source` stored reach `to` (a sync cut short: a
        removal, say, without the new key sealed after it)."""
        if source != to:
            self.spaces[to].replica.ingest(_raws(self.spaces[source])[:-short])

    @rule()
    def sync_all(self) -> None:
        """Everyone holds everything: the members in the channel read the same conversation."""
        share_all(self.spaces)
        seen = {}
        for n, ws in enumerate(self.spaces):
            if self._in(n):
                seen[NICKS[n]] = [(m.text, m.edited, m.replies, m.reactions,
                                   [r.text for r in ws.conversation.thread(m.id)])
                                  for m in ws.private.read(self.channel, limit=0)]
        assert len({repr(v) for v in seen.values()}) == 1, seen
        assert len({ws.replica.digest() for ws in self.spaces}) == 1

    @invariant()
    def what_is_read_is_what_computing_again_gives(self) -> None:
        """Each member in the channel reads what every box opened again gives: at a start (a
        new PrivateConversation: from what the index kept, with the posts arrived since taken
        over it) and in this process (the conversation in memory, grown as posts arrive)."""
        for n, ws in enumerate(self.spaces):
            if not self._in(n):
                continue
            again = _recomputed(ws, self.channel)
            # A start: what was kept when this member last read, with what arrived since
            started = PrivateConversation(ws.private)
            assert _shown(started.read(self.channel, limit=0)) == again, NICKS[n]
            assert _shown(ws.private.read(self.channel, limit=0)) == again
            # Nothing arrived since: the next start reads the page from what was kept,
            # opening no box.
            kept = PrivateConversation(ws.private)
            assert _shown(kept.read(self.channel, limit=3)) == again[-3:]
            assert not kept._states and not kept._opened

    @invariant()
    def out_of_the_channel_nothing_is_kept(self) -> None:
        for n, ws in enumerate(self.spaces):
            if not self._in(n):
                ws.private.unread()  # the window's sidebar asks at every change
                assert self.channel not in ws.replica.private_index.channels(), NICKS[n]

    @invariant()
    def the_removed_open_nothing_made_after(self) -> None:
        for n in self.out:
            ws = self.spaces[n]
            view = ws.private.view(self.channel)
            keys = ws.private._keys(view).values()
            for oid, out in self.made.items():
                if n not in out:
                    continue
                try:
                    post = ws.replica.object(oid)
                except Exception:  # not delivered to them (yet)
                    continue
                assert not any(ws.private.open_box(k, post.body) for k in keys), (
                    f"{NICKS[n]} opens {oid.hex()[:8]}, made after they were taken out")


PrivateConversationModel.TestCase.settings = settings(
    max_examples=12, stateful_step_count=14, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestPrivateConversationModel = PrivateConversationModel.TestCase
