"""Tests for core.containers: order independence (hypothesis) and the semantics by example."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.containers import (
    Add,
    AuthorizedKeys,
    Grant,
    LWWRegister,
    ORSet,
    Remove,
    Update,
)

ROOT, K1, K2, K3 = b"root", b"k1", b"k2", b"k3"
KEYS = [ROOT, K1, K2, K3]
MAX_OPS = 30


def oid(i: int) -> bytes:
    return i.to_bytes(2, "big")


# ---------------------------------------------------------------------------------------------
# Generated operations. Small pools of keys, elements and timestamps so that grants by non-root
# keys, concurrent adds of one element, removes naming (not yet) received adds, and timestamp
# ties all happen often. Op ids are the operation's position, hence unique.

authors = st.sampled_from(KEYS)
bodies = st.one_of(
    st.tuples(st.just("grant"), authors, st.sampled_from(KEYS)),
    st.tuples(st.just("add"), authors, st.sampled_from("abc")),
    st.tuples(st.just("remove"), authors, st.frozensets(st.integers(0, MAX_OPS - 1), max_size=4)),
    st.tuples(st.just("update"), authors, st.integers(0, 3), st.sampled_from("xyz")),
)


def build(i, body):
    kind, author, *rest = body
    if kind == "grant":
        return Grant(oid(i), author, rest[0])
    if kind == "add":
        return Add(oid(i), author, rest[0])
    if kind == "remove":
        return Remove(oid(i), author, frozenset(oid(j) for j in rest[0]))
    return Update(oid(i), author, rest[0], rest[1])


operations = st.lists(bodies, max_size=MAX_OPS).map(
    lambda bs: [build(i, b) for i, b in enumerate(bs)]
)


def replay(ops, reads=frozenset()):
    """Deliver `ops` in order to authorized and open containers; return their observable state.

    At each position in `reads` the state is read first, to exercise the caches mid-stream.
    """
    auth = AuthorizedKeys(ROOT)
    guarded_set, guarded_reg = ORSet(auth), LWWRegister(auth)
    open_set, open_reg = ORSet(), LWWRegister()

    def state():
        return (
            auth.keys(),
            guarded_set.members(),
            guarded_reg.latest(),
            guarded_reg.value(),
            open_set.members(),
            open_reg.latest(),
        )

    for i, op in enumerate(ops):
        if i in reads:
            state()
        if isinstance(op, Grant):
            auth.add_grant(op)
        elif isinstance(op, Add | Remove):
            guarded_set.apply(op)
            open_set.apply(op)
        else:
            guarded_reg.apply(op)
            open_reg.apply(op)
    return state()


def seed_state(ops):
    """The same state read straight off the seed's Datalog definitions (4.6, 4.7, 5.1.4, 5.2.4)."""
    keys = frozenset({ROOT} | {op.key for op in ops if isinstance(op, Grant) and op.author == ROOT})

    def container(authorized):
        removed = {
            i for op in ops if isinstance(op, Remove) and authorized(op.author) for i in op.removes
        }
        members = frozenset(
            op.element
            for op in ops
            if isinstance(op, Add) and authorized(op.author) and op.op_id not in removed
        )
        updates = [op for op in ops if isinstance(op, Update) and authorized(op.author)]
        latest = max(updates, key=lambda u: (u.ts, u.op_id), default=None)
        return members, latest

    guarded_members, guarded_latest = container(lambda k: k in keys)
    open_members, open_latest = container(lambda k: True)
    guarded_value = None if guarded_latest is None else guarded_latest.value
    return keys, guarded_members, guarded_latest, guarded_value, open_members, open_latest


@given(operations, st.data())
def test_state_is_independent_of_order_and_duplication(ops, data):
    dupes = data.draw(st.lists(st.sampled_from(ops), max_size=10)) if ops else []
    delivered = data.draw(st.permutations(ops + dupes), label="delivery order")
    reads = data.draw(st.frozensets(st.integers(0, len(delivered))), label="reads")
    assert replay(delivered, reads) == replay(ops)


@given(operations)
def test_state_matches_seed_definition(ops):
    assert replay(ops) == seed_state(ops)


# ---------------------------------------------------------------------------------------------
# Authorized keys


def test_root_is_authorized_without_grants():
    auth = AuthorizedKeys(ROOT)
    assert auth.is_authorized(ROOT)
    assert not auth.is_authorized(K1)
    assert auth.keys() == {ROOT}


def test_root_grant_authorizes_and_is_idempotent():
    auth = AuthorizedKeys(ROOT)
    assert auth.add_grant(Grant(oid(1), ROOT, K1)) is True
    assert auth.add_grant(Grant(oid(1), ROOT, K1)) is False
    assert auth.add_grant(Grant(oid(2), ROOT, K1)) is False
    assert auth.keys() == {ROOT, K1}


def test_grant_by_non_root_key_is_ignored_even_if_that_key_is_granted():
    auth = AuthorizedKeys(ROOT)
    assert auth.add_grant(Grant(oid(1), K2, K3)) is False
    auth.add_grant(Grant(oid(2), ROOT, K1))
    assert auth.add_grant(Grant(oid(3), K1, K2)) is False
    assert auth.keys() == {ROOT, K1}
    assert not auth.is_authorized(K2)
    assert not auth.is_authorized(K3)


def test_add_grant_rejects_other_operations():
    with pytest.raises(TypeError):
        AuthorizedKeys(ROOT).add_grant(Add(oid(1), ROOT, "a"))


# ---------------------------------------------------------------------------------------------
# OR-set


def test_concurrent_add_and_remove_keeps_the_unobserved_add():
    s = ORSet()
    s.apply(Add(oid(1), K1, "a"))
    s.apply(Remove(oid(2), K2, frozenset({oid(1)})))  # K2 had seen only the first add
    s.apply(Add(oid(3), K3, "a"))  # concurrent re-add of the same element
    assert s.members() == {"a"}
    s.apply(Remove(oid(4), K1, frozenset({oid(3)})))
    assert s.members() == frozenset()
    assert not s.contains("a")


def test_remove_arriving_before_its_add_still_removes_it():
    s = ORSet()
    s.apply(Remove(oid(2), K1, [oid(1)]))
    s.apply(Add(oid(1), K1, "a"))
    s.apply(Add(oid(3), K1, "b"))
    assert s.members() == {"b"}
    assert "a" not in s and "b" in s


def test_remove_names_adds_not_elements():
    s = ORSet()
    s.apply(Add(oid(1), K1, "a"))
    s.apply(Add(oid(2), K1, "b"))
    s.apply(Remove(oid(3), K1, {oid(2), oid(99)}))  # an unknown id is harmless
    assert s.members() == {"a"}


def test_unauthorized_set_ops_ignored_until_granted():
    auth = AuthorizedKeys(ROOT)
    s = ORSet(auth)
    s.apply(Add(oid(1), ROOT, "a"))
    s.apply(Add(oid(2), K1, "b"))
    s.apply(Remove(oid(3), K2, {oid(1)}))
    assert s.members() == {"a"}
    auth.add_grant(Grant(oid(4), ROOT, K1))
    assert s.members() == {"a", "b"}
    auth.add_grant(Grant(oid(5), ROOT, K2))
    assert s.members() == {"b"}


# ---------------------------------------------------------------------------------------------
# LWW register


def test_empty_register_has_no_value():
    r = LWWRegister()
    assert r.value() is None
    assert r.latest() is None


def test_greatest_timestamp_wins_regardless_of_op_id():
    r = LWWRegister()
    r.apply(Update(oid(9), K1, 1, "old"))
    r.apply(Update(oid(1), K1, 2, "new"))
    r.apply(Update(oid(8), K1, 0, "older"))
    assert r.value() == "new"


@pytest.mark.parametrize("reverse", [False, True], ids=["in-order", "reversed"])
def test_timestamp_tie_broken_by_larger_op_id(reverse):
    updates = [Update(oid(1), K1, 5, "x"), Update(oid(2), K2, 5, "y")]
    r = LWWRegister()
    for u in reversed(updates) if reverse else updates:
        r.apply(u)
    assert r.value() == "y"
    assert r.latest() == updates[1]


def test_unauthorized_update_ignored_until_granted():
    auth = AuthorizedKeys(ROOT)
    r = LWWRegister(auth)
    r.apply(Update(oid(1), ROOT, 1, "root's"))
    r.apply(Update(oid(2), K1, 7, "k1's"))
    assert r.value() == "root's"
    auth.add_grant(Grant(oid(3), K1, K1))  # self-grant: not by root, grants nothing
    assert r.value() == "root's"
    auth.add_grant(Grant(oid(4), ROOT, K1))
    assert r.value() == "k1's"


def test_register_values_need_not_be_hashable():
    r = LWWRegister()
    r.apply(Update(oid(1), K1, 1, [{"effect": "deny"}]))
    r.apply(Update(oid(1), K1, 1, [{"effect": "deny"}]))  # same op again
    assert r.value() == [{"effect": "deny"}]


# ---------------------------------------------------------------------------------------------
# Shared behaviour


def test_one_key_set_serves_several_containers():
    auth = AuthorizedKeys(ROOT)
    s, r = ORSet(auth), LWWRegister(auth)
    s.apply(Add(oid(1), K1, "a"))
    r.apply(Update(oid(2), K1, 1, "v"))
    auth.add_grant(Grant(oid(3), ROOT, K1))
    assert s.members() == {"a"}
    assert r.value() == "v"


def test_operations_applied_after_grant_count_immediately():
    auth = AuthorizedKeys(ROOT)
    auth.add_grant(Grant(oid(1), ROOT, K1))
    s = ORSet(auth)
    s.apply(Add(oid(2), K1, "a"))
    assert s.contains("a")


def test_conflicting_operations_with_one_op_id_rejected():
    s = ORSet()
    s.apply(Add(oid(1), K1, "a"))
    with pytest.raises(ValueError, match="op id"):
        s.apply(Add(oid(1), K1, "b"))
    with pytest.raises(ValueError, match="op id"):
        s.apply(Remove(oid(1), K1, set()))
    assert s.members() == {"a"}


@pytest.mark.parametrize(
    ("container", "op"),
    [
        pytest.param(ORSet(), Update(oid(1), K1, 1, "v"), id="update-into-set"),
        pytest.param(LWWRegister(), Add(oid(1), K1, "a"), id="add-into-register"),
        pytest.param(ORSet(), Grant(oid(1), ROOT, K1), id="grant-into-set"),
    ],
)
def test_wrong_operation_type_rejected(container, op):
    with pytest.raises(TypeError):
        container.apply(op)
