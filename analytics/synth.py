"""Synthetic analytics logs in the collector's layout, for tests and benchmarks.

`python -m analytics.synth --installs N --days D --out DIR [--seed S] [--start YYYY-MM-DD]
[--events-target N]` writes `DIR/date=YYYY-MM-DD/*.jsonl`, one canonical JSON event a line (sorted
keys, like the collector writes them). The data looks like real use: a few heavy installs and
many light ones (lognormal activity), fewer events at night (local time) and at weekends, long
tailed sync sessions, conflicts (mostly 2 heads, rarely 50+) each followed by its convergence,
document commits, forks, merges and comments (doc_comment, of schema 3), some rejections,
reactions, edits and thread replies (of schema 2), invites made and members admitted (of schema
4, rarer still), files attached (mostly small images and documents) and private channels made
(of schema 5), changes to what a computer keeps and history fetches (of schema 6, their objects
and seconds going together), so every version is read, and a few malformed lines (truncated
JSON, an unknown event, an extra field). pid is a keyed hash of (install secret,
day), so it rotates daily. The output depends only on the arguments: days are generated in
parallel, each from its own random stream.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import math
import os
import re
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import date, timedelta
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from .events import (
    CONFLICT_KINDS,
    FILE_SIZE_BUCKETS,
    LENGTH_BUCKETS,
    OBJECTS_BUCKETS,
    SECONDS_BUCKETS,
)

DEFAULT_START = date(2025, 1, 6)  # a Monday
MALFORMED_RATE = 1e-4
LINES_PER_FILE = 500_000
# Mean events of an install with activity weight 1 on an active weekday (first line excluded).
BASE_RATE = 40.0

# How each event after an install's first one of the day is chosen ("conflict" brings its
# convergence along as the next line).
MIX = {
    "message_sent": 0.426, "reaction_added": 0.045, "thread_reply": 0.03,
    "message_edited": 0.015, "doc_commit": 0.16, "sync_session": 0.15, "app_started": 0.03,
    "conflict": 0.025, "doc_comment": 0.02, "channel_joined": 0.015, "doc_fork": 0.006,
    "doc_merge": 0.005, "rejection": 0.004, "member_admitted": 0.004, "invite_created": 0.003,
    "file_attached": 0.01, "private_channel_created": 0.002, "history_fetched": 0.003,
    "channels_kept": 0.002, "notify_level_set": 0.003, "notify_dnd_set": 0.0015,
    "notify_option_set": 0.001, "relay_changed": 0.0003, "data_moved": 0.0006,
}
KIND_WEIGHTS = {"concurrent_heads": 0.6, "lww_overwrite": 0.3, "concurrent_doc_edit": 0.1}
REASONS = {
    "bad_signature": 0.25, "policy": 0.2, "oversize": 0.12, "malformed": 0.1, "frame": 0.08,
    "bad_links": 0.07, "non_canonical": 0.06, "bad_body": 0.05, "bad_field": 0.03,
    "too_many_links": 0.02, "unknown_version": 0.02,
}
# invite_created's buckets (analytics.events.uses_bucket, expiry_bucket): mostly for one
# person, most often for the window's default of 7 days.
USES = {"one": 0.5, "few": 0.22, "many": 0.03, "any": 0.25}
EXPIRIES = {"hour": 0.08, "day": 0.25, "week": 0.45, "longer": 0.04, "never": 0.18}
ADMITTED = {"invite": 0.85, "personal": 0.15}  # member_admitted's `how`
# file_attached's kind, and how many files its message holds (analytics.events.file_kind).
FILE_KINDS = {"image": 0.45, "document": 0.25, "video": 0.08, "audio": 0.04, "archive": 0.06,
              "other": 0.12}
FILES = {1: 0.72, 2: 0.14, 3: 0.07, 4: 0.07}
DM_SHARE = 0.6  # private_channel_created: direct messages started, beside named channels
# channels_kept: back to keeping all, or how many channels and documents are chosen (buckets of
# analytics.events.KEPT_BUCKETS); history_fetched: most computers keep all, and fetch more.
KEEP_ALL_SHARE = 0.3
KEPT_CHANNELS = {0: 0.03, 1: 0.3, 2: 0.45, 6: 0.19, 21: 0.03}
KEPT_DOCUMENTS = {0: 0.45, 1: 0.25, 2: 0.21, 6: 0.08, 21: 0.01}
FETCHED_KEEPING_ALL = 0.75
# The notification settings' events: channels muted most, direct messages least.
LEVELS_SET = {"none": 0.45, "all": 0.25, "mentions": 0.15, "default": 0.15}
LEVEL_KINDS = {"channel": 0.7, "private": 0.2, "dm": 0.1}
TIMED_SHARE = 0.3  # levels set until a time
DND_PAUSED_SHARE = 0.6
DND_SCHEDULED_SHARE = 0.4
OPTIONS = {"keywords": 0.7, "show_text": 0.3}
OPTION_ON_SHARE = 0.7
# Relays named (most) and taken back; data moved: backups most, then imports and archives.
RELAY_ADDED_SHARE = 0.8
MOVES = {"backup": 0.5, "slack_import": 0.15, "archive_sqlite": 0.1, "archive_json": 0.05,
         "archive_html": 0.1, "restore": 0.1}
PLATFORMS = {"linux": 0.45, "windows": 0.33, "darwin": 0.2, "other": 0.02}
UIS = {"window": 0.82, "serve": 0.12, "cli": 0.06}
VERSIONS = {"0.1.0": 0.2, "0.1.1": 0.5, "0.2.0": 0.3}
TZ_HOURS = {-8: 0.12, -5: 0.2, 0: 0.12, 1: 0.25, 2: 0.08, 5: 0.08, 8: 0.08, 9: 0.07}
# Local-time activity by hour: quiet at night, busiest in the afternoon.
DIURNAL = np.array([0.15, 0.08, 0.05, 0.04, 0.04, 0.08, 0.25, 0.6, 1.0, 1.3, 1.4, 1.35,
                    1.1, 1.3, 1.45, 1.4, 1.3, 1.1, 0.9, 0.8, 0.75, 0.65, 0.45, 0.3])
WEEKDAY_FACTOR = (1.0, 1.0, 1.0, 1.0, 0.95, 0.55, 0.5)

TEMPLATES = {
    "app_started": '{"event":"app_started","pid":"%s","platform":"%s","schema":1,"ts":"%s","ui":"%s","version":"%s"}',
    "message_sent": '{"event":"message_sent","length":%d,"pid":"%s","schema":1,"ts":"%s"}',
    "channel_joined": '{"event":"channel_joined","pid":"%s","schema":1,"stream":"%s","ts":"%s"}',
    "doc_commit": '{"event":"doc_commit","pid":"%s","schema":1,"size":%d,"stream":"%s","ts":"%s"}',
    "doc_fork": '{"event":"doc_fork","pid":"%s","schema":1,"stream":"%s","ts":"%s"}',
    "doc_merge": '{"event":"doc_merge","pid":"%s","schema":1,"stream":"%s","ts":"%s"}',
    "sync_session": '{"bytes":%d,"duration_ms":%d,"event":"sync_session","objects":%d,"peers":%d,"pid":"%s","rounds":%d,"schema":1,"ts":"%s"}',
    "conflict": '{"event":"conflict","heads":%d,"kind":"%s","pid":"%s","schema":1,"stream":"%s","ts":"%s"}',
    "convergence": '{"event":"convergence","ms":%d,"pid":"%s","schema":1,"stream":"%s","ts":"%s"}',
    "rejection": '{"event":"rejection","pid":"%s","reason":"%s","schema":1,"ts":"%s"}',
    "reaction_added": '{"event":"reaction_added","pid":"%s","schema":2,"stream":"%s","ts":"%s"}',
    "message_edited": '{"event":"message_edited","length":%d,"pid":"%s","schema":2,"stream":"%s","ts":"%s"}',
    "thread_reply": '{"broadcast":%s,"event":"thread_reply","length":%d,"pid":"%s","schema":2,"stream":"%s","ts":"%s"}',
    "doc_comment": '{"event":"doc_comment","pid":"%s","schema":3,"stream":"%s","ts":"%s"}',
    "invite_created": '{"event":"invite_created","expires":"%s","pid":"%s","schema":4,"ts":"%s","uses":"%s"}',
    "member_admitted": '{"event":"member_admitted","how":"%s","pid":"%s","schema":4,"ts":"%s"}',
    "file_attached": '{"event":"file_attached","files":%d,"kind":"%s","pid":"%s","schema":5,"size":%d,"stream":"%s","ts":"%s"}',
    "private_channel_created": '{"dm":%s,"event":"private_channel_created","pid":"%s","schema":5,"ts":"%s"}',
    "channels_kept": '{"all":%s,"channels":%d,"documents":%d,"event":"channels_kept","pid":"%s","schema":6,"ts":"%s"}',
    "history_fetched": '{"event":"history_fetched","kept_all":%s,"objects":%d,"pid":"%s","schema":6,"seconds":%d,"ts":"%s"}',
    "notify_level_set": '{"event":"notify_level_set","kind":"%s","level":"%s","pid":"%s","schema":7,"timed":%s,"ts":"%s"}',
    "notify_dnd_set": '{"event":"notify_dnd_set","paused":%s,"pid":"%s","scheduled":%s,"schema":7,"ts":"%s"}',
    "notify_option_set": '{"event":"notify_option_set","on":%s,"option":"%s","pid":"%s","schema":7,"ts":"%s"}',
    "relay_changed": '{"added":%s,"event":"relay_changed","pid":"%s","schema":8,"ts":"%s"}',
    "data_moved": '{"event":"data_moved","messages":%d,"pid":"%s","schema":8,"ts":"%s","what":"%s"}',
}
BROADCAST_SHARE = 0.1  # thread replies also sent to the channel
TYPES = tuple(MIX) + ("convergence",)
_EVENT_NAME = re.compile(r'"event":"[a-z_]+"')
_T = {name: i for i, name in enumerate(TYPES)}


@dataclass(frozen=True)
class SynthConfig:
    installs: int
    days: int
    out: Path
    seed: int = 0
    start: date = DEFAULT_START
    events_target: int | None = None
    malformed_rate: float = MALFORMED_RATE
    workers: int | None = None


@dataclass(frozen=True)
class Population:
    """Who the installs are: fixed for the whole run, drawn from the seed."""

    secrets: list[bytes]
    weight: np.ndarray      # activity, lognormal: a few heavy installs, many light ones
    p_active: np.ndarray    # chance to be used on a weekday
    joined: np.ndarray      # first day index the install exists
    tz: np.ndarray          # UTC offset in hours
    platform: np.ndarray    # object arrays of the app_started fields
    ui: np.ndarray
    version: np.ndarray


@dataclass(frozen=True)
class SynthResult:
    lines: int
    malformed: int
    files: list[Path]


def population(installs: int, days: int, seed: int) -> Population:
    rng = np.random.default_rng([seed, 0xA11])
    weight = rng.lognormal(0.0, 1.3, installs)
    p_active = np.clip(0.2 + 0.35 * np.log1p(weight), 0.05, 0.97)
    late = rng.random(installs) < 0.3
    joined = np.where(late, rng.integers(0, max(days, 1), installs), 0)
    return Population(
        secrets=[rng.bytes(32) for _ in range(installs)],
        weight=weight, p_active=p_active, joined=joined,
        tz=_pick(rng, TZ_HOURS, installs).astype(np.int64),
        platform=_pick(rng, PLATFORMS, installs), ui=_pick(rng, UIS, installs),
        version=_pick(rng, VERSIONS, installs),
    )


def pid(secret: bytes, day: date) -> str:
    """The install's pseudonymous id for one UTC day, made the way the recorder makes it."""
    return _keyed(secret, b"pid", day.isoformat().encode())


def stream_id(secret: bytes, day: date, stream: int) -> str:
    """A stream id as the recorder hashes it: keyed by the install and the day."""
    return _keyed(secret, b"id:" + day.isoformat().encode(), stream.to_bytes(8, "little"))


def _keyed(secret: bytes, label: bytes, value: bytes) -> str:
    return hmac.new(secret, label + b"\0" + value, hashlib.sha256).hexdigest()[:32]


def day_counts(cfg: SynthConfig, pop: Population) -> np.ndarray:
    """Lines per (day, install); sums to cfg.events_target exactly when it is set."""
    n, d = cfg.installs, cfg.days
    rng = np.random.default_rng([cfg.seed, 0xC0])
    factor = np.array([WEEKDAY_FACTOR[(cfg.start + timedelta(i)).weekday()] for i in range(d)])
    exists = np.arange(d)[:, None] >= pop.joined[None, :]
    p = np.clip(pop.p_active[None, :] * (0.4 + 0.6 * factor[:, None]), 0, 1) * exists
    lam = pop.weight[None, :] * factor[:, None]
    scale = BASE_RATE
    if cfg.events_target is not None:
        # E[lines] = sum p * (1 + scale * lam): pick the scale that hits the target on average.
        fixed, per_scale = p.sum(), (p * lam).sum()
        if cfg.events_target < fixed * 0.5 or per_scale == 0:
            raise ValueError(f"--events-target {cfg.events_target} is too small for "
                             f"{n} installs over {d} days")
        scale = max(cfg.events_target - fixed, 0) / per_scale
    active = rng.random((d, n)) < p
    counts = np.where(active, 1 + rng.poisson(scale * lam), 0)
    if cfg.events_target is not None:
        counts = _adjust(rng, counts, lam * active, cfg.events_target)
    return counts


def _adjust(rng: np.random.Generator, counts: np.ndarray, lam: np.ndarray,
            target: int) -> np.ndarray:
    flat = counts.ravel().copy()
    diff = target - int(flat.sum())
    if diff > 0:
        if lam.sum() == 0:
            raise ValueError("no install is active: raise --installs or --days")
        flat += rng.multinomial(diff, (lam.ravel() / lam.sum()))
    elif diff < 0:
        # Take lines away without emptying an active install-day (its first line stays).
        spare = np.maximum(flat - 1, 0)
        if spare.sum() < -diff:
            raise ValueError(f"--events-target {target} is fewer than the {flat.sum() - spare.sum()}"
                             " install-days that are active: lower --installs or --days")
        flat -= rng.multivariate_hypergeometric(spare, -diff, method="marginals")
    return flat.reshape(counts.shape)


def generate(cfg: SynthConfig) -> SynthResult:
    """Write the logs of cfg.days days under cfg.out; returns what was written."""
    if cfg.installs < 1 or cfg.days < 1:
        raise ValueError("--installs and --days must be at least 1")
    pop = population(cfg.installs, cfg.days, cfg.seed)
    counts = day_counts(cfg, pop)
    cfg.out.mkdir(parents=True, exist_ok=True)
    jobs = [(cfg, pop, i, counts[i]) for i in range(cfg.days)]
    workers = min(cfg.workers or os.cpu_count() or 1, cfg.days)
    if workers <= 1 or (cfg.workers is None and counts.sum() < 200_000):
        results = [_write_day(*job) for job in jobs]
    else:
        # spawn: the caller may hold threads (a Spark gateway) that fork would copy half-way.
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            results = list(pool.map(_write_day, *zip(*jobs, strict=True)))
    return SynthResult(lines=sum(r[0] for r in results), malformed=sum(r[1] for r in results),
                       files=[f for r in results for f in r[2]])


def _write_day(cfg: SynthConfig, pop: Population, index: int,
               counts: np.ndarray) -> tuple[int, int, list[Path]]:
    day = cfg.start + timedelta(index)
    rng = np.random.default_rng([cfg.seed, 0xDA7, index])
    lines = day_lines(rng, pop, day, counts)
    malformed = _spoil(rng, lines, cfg.malformed_rate)
    folder = cfg.out / f"date={day.isoformat()}"
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for k in range(max(1, math.ceil(len(lines) / LINES_PER_FILE))):
        name = f"{day:%Y%m%d}T235959Z-{rng.bytes(8).hex()}.jsonl"
        chunk = lines[k * LINES_PER_FILE:(k + 1) * LINES_PER_FILE]
        tmp = folder / f".{name}.tmp"  # the collector's convention: Spark skips dot files
        tmp.write_text("\n".join(chunk) + "\n" if chunk else "", encoding="utf-8")
        tmp.replace(folder / name)
        files.append(folder / name)
    return len(lines), malformed, files


def day_lines(rng: np.random.Generator, pop: Population, day: date,
              counts: np.ndarray) -> list[str]:
    """One day's events as canonical JSON lines, ordered by hour."""
    total = int(counts.sum())
    if total == 0:
        return []
    who = np.repeat(np.arange(len(counts)), counts)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))[counts > 0]
    first = np.zeros(total, dtype=bool)
    first[starts] = True
    kind = _event_types(rng, total, who, first)
    local = rng.choice(24, total, p=DIURNAL / DIURNAL.sum())
    hours = (local - pop.tz[who]) % 24
    # A session starts the day: the first event (app_started) takes the install's earliest hour.
    hours[starts] = np.minimum.reduceat(hours, starts)
    after = np.flatnonzero(kind == _T["convergence"])
    hours[after] = hours[after - 1]
    pids = np.empty(len(counts), dtype=object)
    for i in np.flatnonzero(counts):
        pids[i] = pid(pop.secrets[i], day)
    slot = _Slots(pids=pids[who], ts=_hour_stamps(day)[hours],
                  stream=_streams(rng, who, pop.secrets, day), heads=_heads(rng, total))
    slot.stream[after] = slot.stream[after - 1]  # a convergence closes the conflict before it
    out = np.empty(total, dtype=object)
    for name in TYPES:
        idx = np.flatnonzero(kind == _T[name])
        if len(idx):
            out[idx] = _format(rng, name, idx, slot, pop, who)
    return out[np.argsort(hours, kind="stable")].tolist()


@dataclass(frozen=True)
class _Slots:
    """Per-line values shared by several event types (object arrays, one entry per line)."""

    pids: np.ndarray
    ts: np.ndarray
    stream: np.ndarray
    heads: np.ndarray


def _event_types(rng: np.random.Generator, total: int, who: np.ndarray,
                 first: np.ndarray) -> np.ndarray:
    names = list(MIX)
    p = np.array([MIX[k] for k in names])
    kind = np.array([_T[k] for k in names])[rng.choice(len(names), total, p=p / p.sum())]
    kind[first] = _T["app_started"]
    conflict = kind == _T["conflict"]
    conflict[1:] &= ~conflict[:-1]  # never two conflicts in a row: the second slot converges
    last = np.ones(total, dtype=bool)
    last[:-1] = who[1:] != who[:-1]
    conflict &= ~last  # the convergence must belong to the same install
    kind[(kind == _T["conflict"]) & ~conflict] = _T["message_sent"]
    kind[np.flatnonzero(conflict) + 1] = _T["convergence"]
    return kind


def _format(rng: np.random.Generator, name: str, idx: np.ndarray, slot: _Slots,
            pop: Population, who: np.ndarray) -> list[str]:
    n = len(idx)
    p, t = slot.pids[idx].tolist(), slot.ts[idx].tolist()
    if name == "app_started":
        i = who[idx]
        cols = [p, pop.platform[i].tolist(), t, pop.ui[i].tolist(), pop.version[i].tolist()]
    elif name == "message_sent":
        cols = [_lengths(rng, n, 3.7), p, t]
    elif name == "message_edited":
        cols = [_lengths(rng, n, 3.9), p, slot.stream[idx].tolist(), t]
    elif name == "thread_reply":
        broadcast = np.where(rng.random(n) < BROADCAST_SHARE, "true", "false")
        cols = [broadcast.tolist(), _lengths(rng, n, 3.4), p, slot.stream[idx].tolist(), t]
    elif name == "doc_commit":
        cols = [p, _pow2(rng.lognormal(5.7, 1.6, n)).tolist(), slot.stream[idx].tolist(), t]
    elif name in ("channel_joined", "doc_fork", "doc_merge", "reaction_added", "doc_comment"):
        cols = [p, slot.stream[idx].tolist(), t]
    elif name == "invite_created":
        cols = [_pick(rng, EXPIRIES, n).tolist(), p, t, _pick(rng, USES, n).tolist()]
    elif name == "member_admitted":
        cols = [_pick(rng, ADMITTED, n).tolist(), p, t]
    elif name == "file_attached":
        cols = [_pick(rng, FILES, n).astype(np.int64).tolist(), _pick(rng, FILE_KINDS, n).tolist(),
                p, _file_sizes(rng, n), slot.stream[idx].tolist(), t]
    elif name == "private_channel_created":
        dm = np.where(rng.random(n) < DM_SHARE, "true", "false")
        cols = [dm.tolist(), p, t]
    elif name == "channels_kept":
        every = rng.random(n) < KEEP_ALL_SHARE
        channels = np.where(every, 0, _pick(rng, KEPT_CHANNELS, n).astype(np.int64))
        documents = np.where(every, 0, _pick(rng, KEPT_DOCUMENTS, n).astype(np.int64))
        cols = [np.where(every, "true", "false").tolist(), channels.tolist(), documents.tolist(),
                p, t]
    elif name == "history_fetched":
        every = rng.random(n) < FETCHED_KEEPING_ALL
        objects, seconds = _history(rng, every)
        cols = [np.where(every, "true", "false").tolist(), objects, p, seconds, t]
    elif name == "notify_level_set":
        levels = _pick(rng, LEVELS_SET, n)
        timed = np.where((rng.random(n) < TIMED_SHARE) & (levels != "default"), "true", "false")
        cols = [_pick(rng, LEVEL_KINDS, n).tolist(), levels.tolist(), p, timed.tolist(), t]
    elif name == "notify_dnd_set":
        cols = [_flags(rng, n, DND_PAUSED_SHARE), p, _flags(rng, n, DND_SCHEDULED_SHARE), t]
    elif name == "notify_option_set":
        cols = [_flags(rng, n, OPTION_ON_SHARE), _pick(rng, OPTIONS, n).tolist(), p, t]
    elif name == "relay_changed":
        cols = [_flags(rng, n, RELAY_ADDED_SHARE), p, t]
    elif name == "data_moved":
        what = _pick(rng, MOVES, n)
        counts = rng.lognormal(9.0, 2.0, n).astype(np.int64)  # median ~8,000 messages
        buckets = np.where(np.isin(what, ["backup", "restore"]), 0,
                           2 ** np.floor(np.log2(np.maximum(counts, 1))).astype(np.int64))
        cols = [buckets.tolist(), p, t, what.tolist()]
    elif name == "sync_session":
        duration = rng.lognormal(5.5, 1.3, n)  # median ~250 ms, long tail
        objects = rng.poisson(np.sqrt(duration) * 0.8)
        rounds = 1 + rng.poisson(np.log1p(duration) / 2)
        nbytes = _pow2(objects * rng.lognormal(6.3, 0.8, n) + rng.integers(64, 512, n))
        peers = np.minimum(rng.geometric(0.6, n), 30)
        cols = [nbytes.tolist(), duration.astype(np.int64).tolist(), objects.tolist(),
                peers.tolist(), p, rounds.tolist(), t]
    elif name == "conflict":
        kinds = np.array(CONFLICT_KINDS, dtype=object)[
            rng.choice(len(CONFLICT_KINDS), n, p=[KIND_WEIGHTS[k] for k in CONFLICT_KINDS])]
        cols = [slot.heads[idx].tolist(), kinds.tolist(), p, slot.stream[idx].tolist(), t]
    elif name == "convergence":
        # Wider forks take longer to settle.
        ms = rng.lognormal(6.0, 1.1, n) * np.sqrt(slot.heads[idx - 1] - 1)
        cols = [ms.astype(np.int64).tolist(), p, slot.stream[idx].tolist(), t]
    else:  # rejection
        reasons = np.array(list(REASONS), dtype=object)
        w = np.array(list(REASONS.values()))
        cols = [p, reasons[rng.choice(len(reasons), n, p=w / w.sum())].tolist(), t]
    return [TEMPLATES[name] % row for row in zip(*cols, strict=True)]


def _flags(rng: np.random.Generator, n: int, share: float) -> list[str]:
    """JSON booleans, true for about `share` of them."""
    return np.where(rng.random(n) < share, "true", "false").tolist()


def _lengths(rng: np.random.Generator, n: int, mu: float) -> list[int]:
    """Text lengths in characters (lognormal around e**mu), as their buckets."""
    chars = rng.lognormal(mu, 1.2, n).astype(np.int64)
    bounds = np.array(LENGTH_BUCKETS)
    return bounds[np.searchsorted(bounds, chars, side="right") - 1].tolist()


def _file_sizes(rng: np.random.Generator, n: int) -> list[int]:
    """Attached files' sizes in bytes (lognormal around 400 KB, a long tail), as their buckets."""
    size = rng.lognormal(12.9, 2.2, n).astype(np.int64)
    bounds = np.array(FILE_SIZE_BUCKETS)
    return bounds[np.searchsorted(bounds, size, side="right") - 1].tolist()


def _history(rng: np.random.Generator, every: np.ndarray) -> tuple[list[int], list[int]]:
    """Objects fetched (lognormal, around 3,000 for a computer keeping all and 400 for one
    keeping some) and the seconds it took (a second's start, then some 1,500 objects a second),
    as their buckets."""
    n = len(every)
    objects = rng.lognormal(np.where(every, 8.0, 6.0), 1.7, n)
    seconds = 0.3 * rng.lognormal(0.0, 0.8, n) + objects / rng.lognormal(7.3, 0.6, n)
    objects_bounds, seconds_bounds = np.array(OBJECTS_BUCKETS), np.array(SECONDS_BUCKETS)
    return (objects_bounds[np.searchsorted(objects_bounds, objects.astype(np.int64),
                                           side="right") - 1].tolist(),
            seconds_bounds[np.searchsorted(seconds_bounds, seconds, side="right") - 1].tolist())


def _heads(rng: np.random.Generator, n: int) -> np.ndarray:
    """Heads of a fork: 2 most of the time, a handful sometimes, 50 or more rarely."""
    u = rng.random(n)
    few = 2 + rng.geometric(0.45, n)
    many = 8 + rng.lognormal(2.2, 0.6, n).astype(np.int64)
    huge = 50 + rng.geometric(0.05, n)
    return np.select([u < 0.8, u < 0.97, u < 0.998], [2, few, np.minimum(many, 49)], huge)


def _streams(rng: np.random.Generator, who: np.ndarray, secrets: list[bytes],
             day: date) -> np.ndarray:
    """Each install works in a few streams (channels, documents), most in its first ones."""
    pick = who * 8 + np.minimum(rng.geometric(0.4, len(who)), 8) - 1
    keys = np.unique(pick)
    hexes = np.array([stream_id(secrets[k >> 3], day, k & 7) for k in keys.tolist()],
                     dtype=object)
    return hexes[np.searchsorted(keys, pick)]


def _hour_stamps(day: date) -> np.ndarray:
    return np.array([f"{day.isoformat()}T{h:02d}:00:00Z" for h in range(24)], dtype=object)


def _pow2(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros(len(x), dtype=np.int64)
    pos = x >= 1
    out[pos] = 1 << np.floor(np.log2(x[pos])).astype(np.int64)
    return out


def _pick(rng: np.random.Generator, weights: dict, n: int) -> np.ndarray:
    keys = np.array(list(weights), dtype=object)
    p = np.array(list(weights.values()), dtype=np.float64)
    return keys[rng.choice(len(keys), n, p=p / p.sum())]


def _spoil(rng: np.random.Generator, lines: list[str], rate: float) -> int:
    """Turn a few lines into what a buggy client or a torn write leaves behind."""
    if not lines or rate <= 0:
        return 0
    count = min(len(lines), max(3, int(rng.binomial(len(lines), rate))))
    for n, i in enumerate(rng.choice(len(lines), count, replace=False).tolist()):
        line = lines[i]
        match n % 3:
            case 0:
                lines[i] = line[: len(line) // 2]
            case 1:
                lines[i] = _EVENT_NAME.sub('"event":"screen_viewed"', line, count=1)
            case _:
                lines[i] = line[:-1] + ',"user":"alice"}'
    return count


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analytics.synth", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--installs", type=_positive, required=True)
    parser.add_argument("--days", type=_positive, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=date.fromisoformat, default=DEFAULT_START,
                        help="first UTC day, YYYY-MM-DD (default %(default)s)")
    parser.add_argument("--events-target", type=_positive, default=None,
                        help="write exactly this many lines in total")
    parser.add_argument("--workers", type=_positive, default=None,
                        help="processes (default: one per CPU)")
    args = parser.parse_args(argv)
    cfg = SynthConfig(installs=args.installs, days=args.days, out=args.out, seed=args.seed,
                      start=args.start, events_target=args.events_target, workers=args.workers)
    try:
        result = generate(cfg)
    except (ValueError, OSError) as exc:
        print(f"synth: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {result.lines} lines ({result.malformed} malformed) in {len(result.files)} "
          f"files under {cfg.out}")
    return 0


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


if __name__ == "__main__":
    sys.exit(main())
