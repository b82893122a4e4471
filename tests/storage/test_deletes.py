"""Deletes and re-indexing (chat-views seed, docs/ARCHITECTURE.md "Who may do what" and "Storage")."""

from __future__ import annotations

import pytest

from core.identity import Identity
from storage import Status
from tests.support import FakeClock

from .conftest import (
    World,
    add,
    allow,
    assert_healthy,
    channel_info,
    member_keys,
    new_replica,
    texts,
)


def _one_by_one(replica, objs) -> None:
    for obj in objs:
        assert replica.ingest([obj])[0].status is not Status.REJECTED


@pytest.fixture
def same_either_way(tmp_path, world):
    """Ingest objects forwards and backwards into two more replicas; their digests must agree."""
    def check(reference, objs) -> None:
        digests = {reference.digest()}
        for n, order in enumerate((list(objs), list(reversed(objs)))):
            clock = FakeClock(reference.now_ms() / 1000)
            other = new_replica(tmp_path / f"order{n}.sqlite", world, clock)
            _one_by_one(other, order)
            digests.add(other.digest())
            assert_healthy(other)
            other.close()
        assert len(digests) == 1
    return check


# Re-indexing what a deleted post fed -------------------------------------------------------------


def test_delete_topic_brings_back_previous(replica, world, people, same_either_way):
    alice, bob = people["alice"], people["bob"]
    t1 = world.topic(alice, "general", "first")
    t2 = world.topic(bob, "general", "second")
    add(replica, t1, t2)
    assert replica.topic("general") == "second"
    d = world.delete(bob, t2)
    add(replica, d)
    assert replica.topic("general") == "first"
    assert channel_info(replica, "general").topic == "first"
    assert [e.value for e in replica.channel_state("general").history] == ["first"]
    d1 = world.delete(alice, t1)
    add(replica, d1)
    assert replica.topic("general") is None
    same_either_way(replica, [t1, t2, d, d1])


def test_delete_join_recomputes_membership(replica, world, people, same_either_way):
    alice = people["alice"]
    j1 = world.join(alice, "general")
    leave = world.leave(alice, "general")
    j2 = world.join(alice, "general")
    add(replica, j1, leave, j2)
    assert member_keys(replica, "general") == {alice.public_key}
    d = world.delete(alice, j2)
    add(replica, d)
    assert member_keys(replica, "general") == set()  # back to the leave
    assert channel_info(replica, "general").members == 0
    same_either_way(replica, [j1, leave, j2, d])


def test_delete_leave_recomputes_membership(replica, world, people):
    alice = people["alice"]
    join = world.join(alice, "general")
    leave = world.leave(alice, "general")
    add(replica, join, leave)
    assert member_keys(replica, "general") == set()
    add(replica, world.delete(alice, leave))
    assert member_keys(replica, "general") == {alice.public_key}


def test_delete_info_brings_back_previous_nick(replica, world, people, same_either_way):
    alice = people["alice"]
    n1 = world.nick(alice, "al")
    n2 = world.nick(alice, "alice")
    join = world.join(alice, "general")
    add(replica, n1, n2, join)
    assert replica.nickname(alice.public_key) == "alice"
    d = world.delete(alice, n2)
    assert d.stream == world.profile(alice)
    add(replica, d)
    assert replica.nickname(alice.public_key) == "al"
    assert replica.members("general")[0].nick == "al"
    assert replica.nicknames() == {alice.public_key: "al"}
    same_either_way(replica, [n1, n2, d, join])


def test_delete_text_removes_it_everywhere(replica, world, people, same_either_way):
    alice, bob = people["alice"], people["bob"]
    keep = world.text(alice, "general", "keep this message")
    gone = world.text(bob, "general", "remove this message")
    add(replica, keep, gone)
    assert member_keys(replica, "general") == {alice.public_key, bob.public_key}
    assert channel_info(replica, "general").messages == 2
    d = world.delete(bob, gone)
    add(replica, d)
    assert texts(replica, "general") == ["keep this message"]
    assert [m.text for m in replica.search("remove")] == []
    assert [m.text for m in replica.search("message")] == ["keep this message"]
    info = channel_info(replica, "general")
    assert (info.messages, info.members) == (1, 1)  # bob only joined by posting it
    assert member_keys(replica, "general") == {alice.public_key}
    assert replica.get(gone.id) is None
    assert replica.is_deleted(gone.id)
    assert replica.posts_by(bob.public_key) == [d.id]  # the delete is kept, the post is not
    same_either_way(replica, [keep, gone, d])


def test_delete_one_of_two_texts_keeps_membership(replica, world, people):
    bob = people["bob"]
    t1 = world.text(bob, "general", "one")
    t2 = world.text(bob, "general", "two")
    add(replica, t1, t2, world.delete(bob, t2))
    assert member_keys(replica, "general") == {bob.public_key}
    assert channel_info(replica, "general").messages == 1


def test_delete_text_after_leave_keeps_leave(replica, world, people):
    bob = people["bob"]
    join = world.join(bob, "general")
    leave = world.leave(bob, "general")
    text = world.text(bob, "general", "re-joined by posting")
    add(replica, join, leave, text)
    assert member_keys(replica, "general") == {bob.public_key}
    add(replica, world.delete(bob, text))
    assert member_keys(replica, "general") == set()


def test_delete_text_that_named_the_channel(replica, world, people, same_either_way):
    alice = people["alice"]
    first = world.text(alice, "Dev", "first")
    second = world.text(alice, "DEV", "second")
    add(replica, first, second)
    assert channel_info(replica, "dev").name == "Dev"
    d = world.delete(alice, first)
    add(replica, d)
    info = channel_info(replica, "dev")
    assert (info.name, info.messages) == ("DEV", 1)
    same_either_way(replica, [first, second, d])


def test_heads_after_deleting_a_head(replica, world, people):
    alice = people["alice"]
    stream = world.channel("general")
    parent = world.text(alice, "general", "parent")
    child = world.text(alice, "general", "child")
    add(replica, parent, child)
    assert [h for h, _ in replica.heads(stream)] == [child.id]
    d = world.delete(alice, child)
    assert d.links == (child.id,)
    add(replica, d)
    # The deleted child no longer counts as linking the parent; the delete is a head too.
    assert sorted(h for h, _ in replica.heads(stream)) == sorted([parent.id, d.id])


# Delete before target ----------------------------------------------------------------------------


def test_delete_before_target(replica, world, people, same_either_way):
    alice = people["alice"]
    target = world.text(alice, "general", "never seen here")
    d = world.delete(alice, target)
    add(replica, d)
    assert not replica.is_deleted(target.id)  # nothing to delete yet
    first = replica.ingest([target])[0]
    assert first.status is not Status.REJECTED
    assert replica.is_deleted(target.id)
    assert replica.get(target.id) is None
    assert texts(replica, "general") == []
    assert [m.text for m in replica.search("seen")] == []
    assert member_keys(replica, "general") == set()
    assert channel_info(replica, "general") is None
    assert replica.ingest([target])[0].status is Status.DUPLICATE
    assert replica.ingest([target, target])[0].status is Status.DUPLICATE
    same_either_way(replica, [d, target])


def test_delete_and_target_in_one_batch(replica, world, people):
    alice = people["alice"]
    target = world.topic(alice, "general", "short lived")
    d = world.delete(alice, target)
    results = replica.ingest([d, target])
    assert [r.status for r in results] == [Status.ADDED, Status.ADDED]
    assert replica.is_deleted(target.id)
    assert replica.topic("general") is None
    assert replica.ingest([target])[0].status is Status.DUPLICATE


def test_delete_with_several_targets(replica, world, people):
    alice, bob = people["alice"], people["bob"]
    mine1 = world.text(alice, "general", "mine one")
    mine2 = world.text(alice, "general", "mine two")
    theirs = world.text(bob, "general", "theirs")
    add(replica, mine1, mine2, theirs)
    add(replica, world.delete(alice, mine1, mine2, theirs))
    assert texts(replica, "general") == ["theirs"]  # only alice's own posts went
    assert replica.is_deleted(mine1.id) and replica.is_deleted(mine2.id)
    assert not replica.is_deleted(theirs.id)


# Who may delete ------------------------------------------------------------------------------------


def test_delete_by_non_author_non_admin_is_not_honoured(replica, world, people, same_either_way):
    alice, bob = people["alice"], people["bob"]
    post = world.text(alice, "general", "mine")
    topic = world.topic(alice, "general", "my topic")
    d = world.delete(bob, post)
    d2 = world.delete(bob, topic)
    add(replica, post, topic, d, d2)
    assert texts(replica, "general") == ["mine"]
    assert replica.topic("general") == "my topic"
    assert not replica.is_deleted(post.id)
    assert replica.has(d.id)  # stored and relayed all the same
    same_either_way(replica, [post, topic, d, d2])


def test_delete_by_root_admin_is_honoured(replica, world, people):
    alice = people["alice"]
    post = world.text(alice, "general", "spam")
    nick = world.nick(alice, "spammer")
    add(replica, post, nick, world.delete(world.root, post), world.delete(world.root, nick))
    assert texts(replica, "general") == []
    assert replica.nickname(alice.public_key) is None
    assert replica.is_deleted(post.id) and replica.is_deleted(nick.id)


def test_delete_by_granted_admin_is_honoured(replica, world, people):
    alice, mod = people["alice"], people["carol"]
    post = world.text(alice, "general", "spam")
    add(replica, world.grant(world.root, mod), post)
    assert replica.is_admin(mod.public_key)
    add(replica, world.delete(mod, post))
    assert texts(replica, "general") == []


def test_delete_by_key_granted_admin_later(replica, world, people, same_either_way):
    alice, mod = people["alice"], people["carol"]
    post = world.text(alice, "general", "spam")
    join = world.join(alice, "general")
    d = world.delete(mod, post, join)
    add(replica, post, join, d)
    assert texts(replica, "general") == ["spam"]
    grant = world.grant(world.root, mod)
    add(replica, grant)
    assert texts(replica, "general") == []
    assert member_keys(replica, "general") == set()
    assert replica.is_deleted(post.id) and replica.is_deleted(join.id)
    same_either_way(replica, [post, join, d, grant])


def test_grant_by_non_root_does_not_make_deletes_count(replica, world, people):
    alice, mod, admin = people["alice"], people["carol"], people["dave"]
    post = world.text(alice, "general", "stays")
    add(replica, world.grant(world.root, admin), post, world.delete(mod, post))
    add(replica, world.grant(admin, mod))  # only the root's grants count
    assert not replica.is_admin(mod.public_key)
    assert texts(replica, "general") == ["stays"]


def test_delete_in_wrong_stream_is_not_honoured(replica, world, people, same_either_way):
    alice = people["alice"]
    post = world.text(alice, "general", "here to stay")
    nick = world.nick(alice, "al")
    wrong = [
        world.delete(alice, post, stream=world.channel("random")),
        world.delete(alice, post, stream=world.ws),
        world.delete(alice, nick, stream=world.channel("general")),
        world.delete(world.root, post, stream=world.profile(alice)),
    ]
    add(replica, post, nick, *wrong)
    assert texts(replica, "general") == ["here to stay"]
    assert replica.nickname(alice.public_key) == "al"
    assert not replica.is_deleted(post.id) and not replica.is_deleted(nick.id)
    same_either_way(replica, [post, nick, *wrong])


def test_delete_cannot_remove_non_chat_objects(replica, world, people, same_either_way):
    alice = people["alice"]
    grant = world.grant(world.root, alice)
    policy = world.policy(world.root, "general", [allow([alice])])
    thing = world.unknown(alice, world.channel("general"))
    doc = world.publish(alice, "doc/root", world.channel("general"),
                        {"title": "notes", "editors": [alice.public_key], "nonce": bytes(16)})
    post = world.text(alice, "general", "x")
    first_delete = world.delete(alice, post)
    add(replica, grant, policy, thing, doc, post, first_delete)
    deletes = [
        world.delete(world.root, world.genesis, stream=world.genesis.stream),
        world.delete(world.root, grant),
        world.delete(world.root, policy),
        world.delete(alice, thing),
        world.delete(alice, doc),
        world.delete(alice, first_delete),  # a delete cannot be deleted either
    ]
    add(replica, *deletes)
    for obj in (world.genesis, grant, policy, thing, doc, first_delete):
        assert replica.has(obj.id), obj.type
        assert not replica.is_deleted(obj.id), obj.type
    assert replica.is_admin(alice.public_key)
    assert replica.policies("general") == [allow([alice])]
    same_either_way(replica, [grant, policy, thing, doc, post, first_delete, *deletes])


def test_delete_of_other_workspace_admin_is_ignored(tmp_path, people):
    # A root of another workspace is nobody here.
    other_root = Identity.from_seed(bytes(range(32)))
    world = World()
    replica = new_replica(tmp_path / "r.sqlite", world)
    post = world.text(people["alice"], "general", "hi")
    add(replica, post, world.delete(other_root, post))
    assert texts(replica, "general") == ["hi"]
    assert replica.integrity_check() == "ok"
    replica.close()


GRANT_PURGE_BUG = (
    "storage/_ingest.py Batch.add: _grant runs before _texts/_state/_info and honours the new "
    "admin's stored deletes, purging a target that arrived in the same batch from `objects`; "
    "indexing it afterwards fails with sqlite3.IntegrityError (FOREIGN KEY constraint failed) "
    "and the whole batch is lost")


@pytest.mark.parametrize("kind", ["post/text", "post/topic", "post/join", "post/info"])
def test_grant_arriving_with_target_of_pending_delete(replica, world, people, kind):
    alice, mod = people["alice"], people["carol"]
    target = {
        "post/text": lambda: world.text(alice, "general", "spam"),
        "post/topic": lambda: world.topic(alice, "general", "spam"),
        "post/join": lambda: world.join(alice, "general"),
        "post/info": lambda: world.nick(alice, "spammer"),
    }[kind]()
    add(replica, world.delete(mod, target))  # not honoured yet: mod is no admin
    results = replica.ingest([target, world.grant(world.root, mod)])
    assert [r.status for r in results] == [Status.ADDED, Status.ADDED]
    assert replica.is_admin(mod.public_key)
    assert replica.is_deleted(target.id)
    assert replica.get(target.id) is None


def test_one_large_batch_with_delete_then_grant_and_target(replica, world, people):
    from storage import replica as replica_module

    alice, mod = people["alice"], people["carol"]
    target = world.text(alice, "general", "spam")
    delete = world.delete(mod, target)
    size = getattr(replica_module, "SUB_BATCH", 250)
    filler = [world.text(alice, "random", f"filler {n}") for n in range(size)]
    results = replica.ingest([delete, *filler, target, world.grant(world.root, mod)])
    assert {r.status for r in results} == {Status.ADDED}
    assert replica.is_deleted(target.id)
