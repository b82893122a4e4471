"""A concurrent editing trace made from the (single-author) automerge-paper trace, and a bare
pycrdt replay of such a trace: what bench/doc_concurrent.py replays and measures against.

The trace is in the josephg/editing-traces concurrent format: {"kind": "concurrent",
"numAgents", "startContent", "endContent", "txns": [{"agent", "parents", "numChildren",
"patches"}]}, where `parents` are indexes of earlier txns and each txn's patches
([position, delete, insert], positions in the text as it becomes) apply to the text at the
union of its parents' pasts.

It is made by actually running one pycrdt document per author: the original txns are cut into
runs of a few txns; each run goes to one author, who first (often) pulls the others' latest
states, which makes the run's first txn a merge (two or more parents); the original patches are
applied with positions clamped to that author's text. A final txn merges every author, so the
trace ends with one head whose text is `endContent`.

Each author's txns form a chain (every txn of an author has the author's previous one in its
past), so the state at any txn is, per author, a prefix of that author's txns: a version vector.
That is what `Replica` keeps, to bring an author's document to a txn's parents by applying only
the updates it lacks."""

from __future__ import annotations

import gzip
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import pycrdt

AGENTS = 3
SEED = 15
LONGEST_RUN = 4  # txns per run: 1..LONGEST_RUN, evenly
PULL = 0.5  # chance, at the start of a run, of pulling each other author's latest state
MAX_SHIFT = 200  # characters an insert may move to stay out of a concurrent insert's gap
VERSION = 1  # of the generator: part of the cache's name


def patch(text: pycrdt.Text, patches: list) -> None:
    """Apply a txn's patches ([position, delete, insert], positions in the text as it becomes;
    ASCII, so bytes and codepoints alike) to `text` in one transaction."""
    with text.doc.transaction():
        for position, delete, insert in patches:
            if delete:
                del text[position:position + delete]
            if insert:
                text.insert(position, insert)


@dataclass
class Replica:
    """One pycrdt document per author, each at a version vector, and every txn's Yjs update."""

    agents: int
    client_ids: list[int] | None = None
    docs: list[pycrdt.Doc] = field(init=False)
    texts: list[pycrdt.Text] = field(init=False)
    lengths: list[int] = field(init=False)
    at: list[list[int]] = field(init=False)  # author -> txns of each author its doc holds
    updates: list[list[bytes]] = field(init=False)  # author -> its txns' updates, in order
    versions: list[tuple[int, ...]] = field(default_factory=list)  # txn -> its version vector

    def __post_init__(self) -> None:
        ids = self.client_ids or [n + 1 for n in range(self.agents)]
        self.docs = [pycrdt.Doc(client_id=ids[n]) for n in range(self.agents)]
        self.texts = [doc.get("text", type=pycrdt.Text) for doc in self.docs]
        self.lengths = [0] * self.agents
        self.at = [[0] * self.agents for _ in range(self.agents)]
        self.updates = [[] for _ in range(self.agents)]

    def version(self, parents: list[int]) -> list[int]:
        """The version vector of the union of `parents`' pasts."""
        vector = [0] * self.agents
        for parent in parents:
            vector = [max(a, b) for a, b in zip(vector, self.versions[parent], strict=True)]
        return vector

    def bring(self, agent: int, parents: list[int]) -> int:
        """Bring `agent`'s document to the union of `parents`' pasts by applying the updates it
        lacks; returns the length of its text there."""
        target, mine = self.version(parents), self.at[agent]
        if target != mine:
            doc = self.docs[agent]
            for other in range(self.agents):
                if target[other] < mine[other]:
                    raise ValueError("a txn's parents must include its author's previous txn")
                for update in self.updates[other][mine[other]:target[other]]:
                    doc.apply_update(update)
            self.at[agent] = target
            self.lengths[agent] = len(self.texts[agent])  # ASCII: bytes are characters
        return self.lengths[agent]

    def step(self, agent: int, parents: list[int], patches: list[list]) -> None:
        """Bring `agent`'s document to `parents`, apply `patches` in one transaction, record it."""
        self.bring(agent, parents)
        doc, text = self.docs[agent], self.texts[agent]
        before = doc.get_state()
        patch(text, patches)
        self.lengths[agent] += sum(len(insert) - delete for _, delete, insert in patches)
        self.updates[agent].append(doc.get_update(before))
        version = list(self.at[agent])
        version[agent] += 1
        self.at[agent] = version
        self.versions.append(tuple(version))

    def text(self, agent: int) -> str:
        return str(self.texts[agent])


def replay_bare(trace: dict, client_ids: list[int] | None = None) -> Replica:
    """Replay a trace made by `generate` into bare pycrdt documents, one per author."""
    replica = Replica(trace["numAgents"], client_ids)
    for txn in trace["txns"]:
        replica.step(txn["agent"], txn["parents"], txn["patches"])
    return replica


def _frontier(replica: Replica, candidates: list[int]) -> list[int]:
    """Of the txns `candidates`, those not in the past of another: the parents to name."""
    versions = {c: replica.versions[c] for c in set(candidates)}
    return sorted(c for c in versions if not any(
        o != c and all(a >= b for a, b in zip(versions[o], versions[c], strict=True))
        for o in versions))


def _clamp(patches: list[list], length: int) -> list[list]:
    out = []
    for position, delete, insert in patches:
        position = min(position, length)
        delete = min(delete, length - position)
        if delete or insert:
            out.append([position, delete, insert])
            length += len(insert) - delete
    return out


def _clean(text: pycrdt.Text, length: int, union: pycrdt.Text, position: int) -> bool:
    """Whether inserting at `position` of `text` (`length` characters) is into a gap of the
    union of every author's text that no concurrent (unmerged) insert went into: the two sides
    of the gap are still adjacent there. Concurrent inserts into one gap are ordered by Yjs
    client id, and a replay with other client ids must end with the same text."""
    with union.doc.transaction() as txn:
        left = 0 if position == 0 else pycrdt.StickyIndex.decode(text.sticky_index(
            position, pycrdt.Assoc.BEFORE).encode()).get_index(txn)
        right = len(union) if position == length else pycrdt.StickyIndex.decode(
            text.sticky_index(position, pycrdt.Assoc.AFTER).encode()).get_index(txn)
    return left == right


def _unambiguous(replica: Replica, agent: int, union: pycrdt.Text,
                 patches: list[list]) -> list[list]:
    """`patches` (one, as in the automerge-paper trace) with an insert moved to the nearest
    clean gap (`_clean`) when the author has not seen everything yet."""
    if len(patches) != 1 or not patches[0][2] or replica.at[agent] == [
            len(u) for u in replica.updates]:
        return patches
    position, delete, insert = patches[0]
    text, length = replica.texts[agent], replica.lengths[agent]
    for shift in range(MAX_SHIFT + 1):
        for moved in (position + shift, position - shift):
            if 0 <= moved <= length and _clean(text, length, union, moved):
                return [[moved, delete, insert]]
    raise ValueError(f"no unambiguous gap near {position}")


def generate(original: list[dict], count: int, *, agents: int = AGENTS,
             seed: int = SEED) -> dict:
    """A concurrent trace of the first `count` txns of `original` (plus a final merge)."""
    rng = random.Random(seed)
    replica = Replica(agents)
    union = pycrdt.Doc().get("text", type=pycrdt.Text)  # every author's txns
    txns: list[dict] = []
    latest: list[int | None] = [None] * agents  # author -> its latest txn
    n, agent = 0, 0
    while n < count:
        if n:  # each run is another author's
            agent = (agent + rng.randrange(1, agents)) % agents
        # A newcomer starts from everything there is: two empty starts would collide.
        pulls = [latest[o] for o in range(agents) if o != agent and latest[o] is not None
                 and (latest[agent] is None or rng.random() < PULL)]
        own = [latest[agent]] if latest[agent] is not None else []
        parents = _frontier(replica, own + pulls)  # type: ignore[arg-type]
        for _ in range(min(rng.randint(1, LONGEST_RUN), count - n)):
            patches = _clamp(original[n]["patches"], replica.bring(agent, parents))
            patches = _unambiguous(replica, agent, union, patches)
            replica.step(agent, parents, patches)
            union.doc.apply_update(replica.updates[agent][-1])
            txns.append({"agent": agent, "parents": parents, "patches": patches})
            latest[agent] = len(txns) - 1
            parents = [len(txns) - 1]
            n += 1
    last = [t for t in latest if t is not None]
    replica.step(0, last, [])
    txns.append({"agent": 0, "parents": last, "patches": []})
    children = [0] * len(txns)
    for txn in txns:
        for parent in txn["parents"]:
            children[parent] += 1
    for txn, number in zip(txns, children, strict=True):
        txn["numChildren"] = number
    return {"kind": "concurrent", "numAgents": agents, "startContent": "",
            "endContent": replica.text(0), "txns": txns}


def merges(trace: dict) -> int:
    return sum(len(t["parents"]) > 1 for t in trace["txns"])


def load_or_generate(original: list[dict], count: int, cache: Path) -> dict:
    """The trace for `count` txns, from `cache` (a directory) when made before."""
    path = cache / f"doc-concurrent-{count}-a{AGENTS}-s{SEED}-v{VERSION}.json.gz"
    if path.exists():
        with gzip.open(path, "rt") as f:
            return json.load(f)
    trace = generate(original, count)
    cache.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump(trace, f, separators=(",", ":"))
    return trace
