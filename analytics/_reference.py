"""The report's tables computed again in one plain Python process, with no Spark: the tests and
the benchmark hold the pipeline to it.

It reads the same `date=YYYY-MM-DD/*.jsonl` files with the json module, checks each event against
the contract's rules (`_contract.rules()`, itself tested against `events.validate`, which is too
slow for millions of lines), and computes the percentiles the way Spark's `percentile` does.
A line's bad reason is the first that applies: not JSON (or a top-level value that is not an
object), an unknown event name, a schema rule broken (a repeated key included), a ts that is not a
real UTC hour, a ts outside its partition's day.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

from . import _contract as C
from .events import EVENT_TYPES, head_bucket


@dataclass
class Result:
    lines: int = 0
    bad: dict[str, int] = field(default_factory=lambda: dict.fromkeys(C.BAD_REASONS, 0))
    suppressed: dict[str, int] = field(default_factory=dict)
    rows: dict[str, list[tuple]] = field(default_factory=dict)

    @property
    def valid(self) -> int:
        return self.lines - sum(self.bad.values())


class _Repeated(dict):
    """An object in which some key appears more than once."""


def _pairs(pairs: list[tuple[str, object]]) -> dict:
    obj = dict(pairs)
    return obj if len(obj) == len(pairs) else _Repeated(obj)


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_no_constant)
_PATTERNS = {f.pattern: re.compile(f.pattern) for f in C.fields().values() if f.pattern}


def field_ok(rule: C.FieldRule, value: object) -> bool:
    if rule.boolean:
        if not isinstance(value, bool):
            return False
    elif rule.number:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if rule.integer and isinstance(value, float) and not value.is_integer():
            return False
    elif not isinstance(value, str):
        return False
    if rule.const is not None and value != rule.const:
        return False
    if rule.enum and value not in rule.enum:
        return False
    if rule.minimum is not None and not value >= rule.minimum:
        return False
    if rule.maximum is not None and not value <= rule.maximum:
        return False
    return rule.pattern is None or _PATTERNS[rule.pattern].search(value) is not None


def event_ok(obj: dict) -> bool:
    """Whether a decoded object follows the contract (what `events.validate` decides)."""
    rule = C.rules().get(obj.get("event")) if isinstance(obj.get("event"), str) else None
    if rule is None or isinstance(obj, _Repeated) or len(obj) != len(rule.fields):
        return False
    return all(f.name in obj and field_ok(f, obj[f.name]) for f in rule.fields)


def classify(line: str, part: str) -> tuple[str | None, dict | None]:
    """(bad reason or None, the event) of one line found in partition `part`."""
    try:
        obj = _DECODER.decode(line)
    except ValueError:
        return "not_json", None
    if not isinstance(obj, dict):
        return "not_json", None
    event = obj.get("event")
    if event is not None and (not isinstance(event, str) or event not in EVENT_TYPES):
        return "unknown_event", None
    if not event_ok(obj):
        return "invalid", None
    try:
        datetime.strptime(obj["ts"], "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return "bad_ts", None
    if obj["ts"][:10] != part:
        return "wrong_partition", None
    return None, obj


def partitions(root: Path, since: date | None = None, until: date | None = None) -> list[str]:
    names = [e.name for e in os.scandir(root) if e.is_dir() and e.name.startswith(
        C.PARTITION_PREFIX)]
    return sorted(n for n in names if _in_range(n.removeprefix(C.PARTITION_PREFIX), since, until))


def _in_range(day: str, since: date | None, until: date | None) -> bool:
    if since is None and until is None:
        return True
    try:
        d = date.fromisoformat(day)
    except ValueError:
        return False
    return (since is None or d >= since) and (until is None or d <= until)


def lines(folder: Path):
    """Every line of the folder's `*.jsonl` files, skipping the names Spark treats as hidden."""
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if (entry.is_file() and entry.name.endswith(".jsonl")
                and not entry.name.startswith((".", "_"))):
            with open(entry.path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    yield line[:-1] if line.endswith("\n") else line


def percentile(ordered: list[int], p: float) -> float:
    """Spark's exact percentile: linear interpolation between the two nearest ranks, with the
    same floating-point steps as Spark 4 (so the results compare equal, not just close)."""
    position = (len(ordered) - 1) * p
    lower, higher = math.floor(position), math.ceil(position)
    low, high = float(ordered[lower]), float(ordered[higher])
    if higher == lower or low == high:
        return low
    return low + (position - lower) * (high - low)


class _Group:
    __slots__ = ("count", "pids", "values", "heads")

    def __init__(self) -> None:
        self.count = 0
        self.pids: set[str] = set()
        self.values: tuple[list[int], ...] = ([], [], [], [])
        self.heads: Counter = Counter()


def compute(root: Path, since: date | None = None, until: date | None = None,
            min_cohort: int = 5) -> Result:
    """Every table of the report from the files under `root`, suppressed like the pipeline's."""
    result = Result()
    groups: dict[str, defaultdict] = {name: defaultdict(_Group) for name in C.TABLES}
    for part in partitions(root, since, until):
        day = part.removeprefix(C.PARTITION_PREFIX)
        for line in lines(root / part):
            result.lines += 1
            reason, ev = classify(line, day)
            if reason is not None:
                result.bad[reason] += 1
                continue
            _add(groups, day, ev)
    for name in C.TABLES:
        rows = sorted((_row(name, key, g) for key, g in groups[name].items()),
                      key=lambda r: r[:len(C.KEYS[name])])
        installs = [c for c, _ in C.COLUMNS[name]].index("installs")
        kept = [r for r in rows if r[installs] >= min_cohort]
        result.suppressed[name] = len(rows) - len(kept)
        result.rows[name] = kept
    return result


def _add(groups: dict[str, defaultdict], day: str, ev: dict) -> None:
    name, pid = ev["event"], ev["pid"]
    targets = [groups["daily_active"][(day,)], groups["events_daily"][(day, name)]]
    if name == "sync_session":
        g = groups["sync_sessions"][(day,)]
        for values, key in zip(g.values, ("duration_ms", "rounds", "bytes", "objects"),
                               strict=True):
            values.append(int(ev[key]))
        targets.append(g)
    elif name == "conflict":
        g = groups["conflicts"][(day, ev["kind"])]
        g.heads[head_bucket(int(ev["heads"]))] += 1
        targets.append(g)
    elif name == "convergence":
        g = groups["convergence"][(day,)]
        g.values[0].append(int(ev["ms"]))
        targets.append(g)
    elif name == "rejection":
        targets.append(groups["rejections"][(day, ev["reason"])])
    for g in targets:
        g.count += 1
        g.pids.add(pid)


def _row(name: str, key: tuple, g: _Group) -> tuple:
    d, installs = date.fromisoformat(key[0]), len(g.pids)
    if name == "daily_active":
        return (d, installs)
    if name in ("events_daily", "rejections"):
        return (d, key[1], g.count, installs)
    if name == "conflicts":
        return (d, key[1], g.count, installs, *(g.heads[label] for label in C.HEAD_LABELS))
    ordered = [sorted(v) for v in g.values]
    if name == "sync_sessions":
        return (d, g.count, installs, *(percentile(ordered[0], p) for p in C.SYNC_DURATION_PCTS),
                *(percentile(v, 0.5) for v in ordered[1:]))
    return (d, g.count, installs, *(percentile(ordered[0], p) for p in C.CONVERGENCE_PCTS))
