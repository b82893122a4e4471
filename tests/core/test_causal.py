"""Tests for core.causal: heads and causal order are functions of the set of objects."""

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from core.causal import causal_order, heads, next_ts


@dataclass(frozen=True)
class Obj:
    id: bytes
    ts: int
    links: tuple[bytes, ...] = ()


def ob(name: str, ts: int, *links: str) -> Obj:
    return Obj(name.encode(), ts, tuple(link.encode() for link in links))


def names(objects) -> list[str]:
    return [obj.id.decode() for obj in objects]


@st.composite
def dags(draw, *, causal_ts: bool = False):
    """Objects whose links point only to earlier ones (or to ids not in the set).

    Timestamps come from a tiny range so ties (broken by id) are common; with `causal_ts`
    every object's ts is next_ts(now, its parents' ts), as authors assign them.
    """
    rows = draw(st.lists(
        st.tuples(st.binary(min_size=1, max_size=3),  # id
                  st.integers(0, 4),  # ts (or "now" with causal_ts)
                  st.integers(0, 2**14 - 1),  # which earlier objects it links to
                  st.integers(0, 3)),  # which missing ids it links to
        max_size=14, unique_by=lambda row: row[0]))
    missing = [b"gone", b"lost"]
    rnd = draw(st.randoms(use_true_random=False))
    objects: list[Obj] = []
    for i, (oid, ts, parent_bits, missing_bits) in enumerate(rows):
        parents = [objects[j] for j in range(i) if parent_bits >> j & 1]
        if causal_ts:
            ts = next_ts(ts, (p.ts for p in parents))
        links = [p.id for p in parents] + [m for k, m in enumerate(missing) if missing_bits >> k & 1]
        rnd.shuffle(links)  # the order of links means nothing
        objects.append(Obj(oid, ts, tuple(links)))
    return objects


@st.composite
def shuffled(draw, objects):
    """The same set in another arrival order, some objects arriving more than once."""
    extra = draw(st.lists(st.sampled_from(objects), max_size=4)) if objects else []
    return draw(st.permutations(objects + extra))


def expected_heads(objects) -> set[bytes]:
    linked = set()
    for obj in objects:
        linked.update(obj.links)
    return {obj.id for obj in objects if obj.id not in linked}


# Functions of the set -------------------------------------------------------------------------


@settings(max_examples=150)
@given(st.data())
def test_heads_and_order_do_not_depend_on_arrival_order(data):
    objects = data.draw(dags())
    arrived = data.draw(shuffled(objects))
    assert heads(arrived) == heads(objects) == expected_heads(objects)
    assert causal_order(arrived) == causal_order(objects)
    # Iterators are fine too (each is consumed once).
    assert heads(iter(arrived)) == heads(objects)
    assert causal_order(iter(arrived)) == causal_order(objects)


@settings(max_examples=150)
@given(st.data())
def test_causal_order_is_a_linear_extension(data):
    objects = data.draw(dags())
    order = causal_order(data.draw(shuffled(objects)))
    ids = [obj.id for obj in order]
    assert sorted(ids) == sorted(obj.id for obj in objects)  # each object exactly once
    position = {oid: i for i, oid in enumerate(ids)}
    for obj in order:
        for link in obj.links:
            if link in position:  # links to absent objects are ignored
                assert position[link] < position[obj.id]


@settings(max_examples=150)
@given(st.data())
def test_causal_order_always_takes_the_smallest_ready_object(data):
    """Kahn's algorithm by (ts, id): concurrent objects come in (ts, id) order."""
    objects = data.draw(dags())
    order = causal_order(data.draw(shuffled(objects)))
    present = {obj.id for obj in objects}
    placed: set[bytes] = set()
    for obj in order:
        ready = [o for o in objects if o.id not in placed
                 and all(link in placed for link in o.links if link in present)]
        assert (obj.ts, obj.id) == min((o.ts, o.id) for o in ready)
        placed.add(obj.id)


@settings(max_examples=150)
@given(st.data())
def test_with_causal_timestamps_the_order_is_by_ts_then_id(data):
    objects = data.draw(dags(causal_ts=True))
    order = causal_order(data.draw(shuffled(objects)))
    assert order == sorted(objects, key=lambda o: (o.ts, o.id))


@settings(max_examples=150)
@given(st.data())
def test_missing_links_do_not_block(data):
    objects = data.draw(dags())
    drop = set(data.draw(st.lists(st.sampled_from([o.id for o in objects]), max_size=4))
               if objects else [])
    kept = [o for o in objects if o.id not in drop]
    # Links to deleted/missing objects act as if they were not there at all.
    stripped = [Obj(o.id, o.ts, tuple(link for link in o.links
                                      if link in {k.id for k in kept}))
                for o in kept]
    assert [o.id for o in causal_order(kept)] == [o.id for o in causal_order(stripped)]
    assert len(causal_order(kept)) == len(kept)
    assert heads(kept) == expected_heads(kept)


# Hand-written cases ---------------------------------------------------------------------------


def test_empty():
    assert heads([]) == set()
    assert causal_order([]) == []


def test_a_fork_has_two_heads_and_the_next_post_merges_it():
    a, b, c = ob("a", 1), ob("b", 2, "a"), ob("c", 2, "a")
    assert heads([a, b, c]) == {b"b", b"c"}
    d = ob("d", 3, "b", "c")
    assert heads([a, b, c, d]) == {b"d"}
    assert names(causal_order([d, c, b, a])) == ["a", "b", "c", "d"]


def test_concurrent_objects_by_ts_then_id():
    objs = [ob("z", 1), ob("a", 2), ob("m", 1), ob("b", 1)]
    assert names(causal_order(objs)) == ["b", "m", "z", "a"]
    assert heads(objs) == {b"z", b"a", b"m", b"b"}


def test_a_link_wins_over_a_smaller_timestamp():
    # y claims an earlier time than x but links to it: it still comes after x.
    x, y, z = ob("x", 10), ob("y", 1, "x"), ob("z", 5)
    assert names(causal_order([y, z, x])) == ["z", "x", "y"]


def test_links_to_missing_objects_do_not_block():
    a = ob("a", 5, "gone")
    b = ob("b", 1, "a", "also-gone")
    c = ob("c", 3)
    assert names(causal_order([b, a, c])) == ["c", "a", "b"]
    assert heads([a, b, c]) == {b"b", b"c"}  # a missing id is never a head
    assert heads([b]) == {b"b"}
    assert names(causal_order([b])) == ["b"]


def test_duplicates_are_dropped():
    a, b = ob("a", 1), ob("b", 2, "a")
    assert names(causal_order([b, a, b, a, a])) == ["a", "b"]
    assert heads([b, a, b]) == {b"b"}


def test_long_chain():
    chain = [ob(f"{i:04}", 1000 - i, *([f"{i - 1:04}"] if i else [])) for i in range(500)]
    assert names(causal_order(reversed(chain))) == [f"{i:04}" for i in range(500)]
    assert heads(chain) == {b"0499"}


# next_ts --------------------------------------------------------------------------------------


@settings(max_examples=300)
@given(st.integers(0, 2**62), st.lists(st.integers(0, 2**62), max_size=8))
def test_next_ts_is_after_every_parent_and_not_before_now(now, parents):
    ts = next_ts(now, parents)
    assert ts >= now
    assert all(ts > parent for parent in parents)
    assert ts == max([now, *(p + 1 for p in parents)])  # and no later than it needs to be
    assert next_ts(now, iter(parents)) == ts


def test_next_ts_examples():
    assert next_ts(100, []) == 100
    assert next_ts(100, [5, 99]) == 100
    assert next_ts(100, [100]) == 101
    assert next_ts(100, [250, 7]) == 251
