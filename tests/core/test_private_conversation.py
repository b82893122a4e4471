"""A private channel's conversation from its opened sealed posts (core/private_conversation.py):
the box shapes it reads, and the rules, the same whatever the order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.chat_kinds import MAX_EMOJI_PER_MEMBER
from core.identity import Identity
from core.objects import build
from core.private_conversation import ConversationState, content, parse

ADA, BOB = Identity.generate(), Identity.generate()
CHANNEL = b"\x07" * 32


def _post(who: Identity, ts: int, kind: str, body: dict):
    opened = content(kind, body)
    obj = build(who, "post/sealed", stream=CHANNEL, ts=ts, body={
        "channel": CHANNEL, "epoch": 0, "nonce": bytes(24), "box": repr(opened).encode()})
    parsed = parse(opened)
    assert parsed is not None, opened
    return (obj, *parsed)


def test_the_box_shapes_it_reads():
    assert parse({"text": "hi"}) == ("post/text", {"text": "hi"})
    assert parse({"type": "post/react", "target": bytes(32), "emoji": "👍"}) == (
        "post/react", {"target": bytes(32), "emoji": "👍"})
    assert parse({"type": "post/delete", "targets": [bytes(32)]})[0] == "post/delete"
    for bad in ({"text": ""}, {"text": "hi", "extra": 1}, {"type": "post/topic", "topic": "x"},
                {"type": "post/react", "target": bytes(32), "emoji": "a b"},
                {"type": "post/reply", "text": "x", "parent": bytes(32)},
                {"type": "post/edit", "target": b"short", "text": "x"},
                {"type": "post/reply", "text": "x", "parent": bytes(32), "broadcast": 1}):
        assert parse(bad) is None, bad


def _scene():
    first = _post(ADA, 10, "post/text", {"text": "the plan"})
    fid = first[0].id
    reply = _post(BOB, 11, "post/reply", {"text": "ok", "parent": fid, "broadcast": False})
    shout = _post(BOB, 12, "post/reply", {"text": "all", "parent": fid, "broadcast": True})
    nested = _post(ADA, 13, "post/reply", {"text": "no", "parent": reply[0].id,
                                           "broadcast": False})
    edit = _post(ADA, 14, "post/edit", {"target": fid, "text": "the new plan"})
    later = _post(ADA, 15, "post/edit", {"target": fid, "text": "the newest plan"})
    not_theirs = _post(BOB, 16, "post/edit", {"target": fid, "text": "bob's plan"})
    like = _post(BOB, 17, "post/react", {"target": fid, "emoji": "👍"})
    again = _post(BOB, 18, "post/react", {"target": fid, "emoji": "👍"})
    party = _post(ADA, 19, "post/react", {"target": fid, "emoji": "🎉"})
    taken_back = _post(ADA, 20, "post/delete", {"targets": [party[0].id]})
    not_mine = _post(ADA, 21, "post/delete", {"targets": [like[0].id, shout[0].id]})
    gone = _post(BOB, 22, "post/text", {"text": "oops"})
    deleted = _post(BOB, 23, "post/delete", {"targets": [gone[0].id]})
    return [first, reply, shout, nested, edit, later, not_theirs, like, again, party,
            taken_back, not_mine, gone, deleted]


def _summary(state: ConversationState):
    return ([(state.messages[i].text, state.messages[i].edited, len(state.messages[i].replies),
              state.messages[i].reactions) for i in state.channel],
            sorted(m.text for m in state.messages.values()))


def test_the_rules():
    posts = _scene()
    state = ConversationState.compute(posts)
    assert _summary(state) == (
        [("the newest plan", True, 2, {"👍": [BOB.public_key]}), ("all", False, 0, {})],
        ["all", "ok", "the newest plan"])
    fid = posts[0][0].id
    assert [m.text for m in state.thread(posts[1][0].id)] == ["the newest plan", "ok", "all"]
    assert [e[2] for e in state.messages[fid].edits] == ["the new plan", "the newest plan"]
    # Both of bob's adds of 👍 are his to take back, so none survives a delete naming them.
    assert len(state.my_reactions(fid, BOB.public_key, "👍")) == 2


def test_a_members_emoji_on_a_message_are_capped():
    first = _post(ADA, 10, "post/text", {"text": "x"})
    emoji = [chr(0x1F600 + n) for n in range(MAX_EMOJI_PER_MEMBER + 2)]
    reacts = [_post(BOB, 11 + n, "post/react", {"target": first[0].id, "emoji": e})
              for n, e in enumerate(emoji)]
    state = ConversationState.compute([first, *reacts])
    assert list(state.messages[first[0].id].reactions) == emoji[:MAX_EMOJI_PER_MEMBER]


@settings(max_examples=50, deadline=None)
@given(st.randoms(use_true_random=False))
def test_any_order_gives_the_same_conversation(rng):
    posts = _scene()
    expected = _summary(ConversationState.compute(posts))
    rng.shuffle(posts)
    assert _summary(ConversationState.compute(posts)) == expected


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 14), st.integers(0, 14))
def test_taking_later_posts_gives_what_computing_them_all_does(cut, step):
    """`extend` with the posts after a cut, in one go or a few at a time, is `compute` of all
    of them, or it says to compute again (a delete among them)."""
    posts = sorted(_scene(), key=lambda p: (p[0].ts, p[0].id))
    state = ConversationState.compute(posts[:cut])
    rest = posts[cut:]
    size = max(1, step)
    for n in range(0, len(rest), size):
        if state.extend(rest[n:n + size]) is None:
            state = ConversationState.compute(posts[:cut + n + size])
    assert _summary(state) == _summary(ConversationState.compute(posts))
    assert state.reactions == ConversationState.compute(posts).reactions


def _imported():
    """ada imported two messages and a reply (an origin of hers names them); bob's origin
    about her message, and one about a message not held, count for nothing."""
    first = _post(ADA, 1000, "post/text", {"text": "from slack"})
    reply = _post(ADA, 1001, "post/reply", {"text": "re", "parent": first[0].id,
                                            "broadcast": False})
    second = _post(ADA, 1002, "post/text", {"text": "second"})
    item = [[first[0].id, "U1", "zoe", "1577872800.000100", 0, "", [["👍", 3, ["U2"]]]],
            [reply[0].id, "U2", "yan", "1577872860.000000", 1577872900000, "", []],
            [second[0].id, "U1", "zoe", "not-a-ts", 0, "", []]]
    origin = _post(ADA, 1003, "post/origin", {"items": item})
    forged = _post(BOB, 1004, "post/origin", {"items": [
        [first[0].id, "U9", "mallory", "1.0", 0, "", []],
        [bytes(32), "U9", "mallory", "1.0", 0, "", []]]})
    return [first, reply, second, origin, forged]


def _origins(state: ConversationState):
    return sorted((m.text, m.ts, m.edited, m.origin and (m.origin.name, m.origin.reactions))
                  for m in state.messages.values())


def test_an_origin_names_who_wrote_its_authors_messages_and_when():
    state = ConversationState.compute(_imported())
    assert _origins(state) == [
        ("from slack", 1577872800000, False, ("zoe", (("👍", 3, ("U2",)),))),
        ("re", 1577872860000, True, ("yan", ())),
        ("second", 1002, False, ("zoe", ())),  # a ts that is not Slack's: its own time
    ]
    assert [state.messages[i].text for i in state.channel] == ["from slack", "second"]


@settings(max_examples=30, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(0, 5))
def test_origins_the_same_in_any_order_and_taken_later(rng, cut):
    posts = _imported()
    expected = _origins(ConversationState.compute(posts))
    shuffled = posts[:]
    rng.shuffle(shuffled)
    assert _origins(ConversationState.compute(shuffled)) == expected
    state = ConversationState.compute(posts[:cut])
    if state.extend(posts[cut:]) is None:
        state = ConversationState.compute(posts)
    assert _origins(state) == expected
