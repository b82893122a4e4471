"""The window on a channel of 100,000 messages, offscreen: ms to the first paint of the
message list with the newest page in it (target <= 100 ms), s to scroll to the top through lazy
loading (target <= 10 s), peak RSS of the window's process (target <= 300 MB), and the longest
GUI-thread stall (a 10 ms timer) while 10,000 messages arrive by sync (target <= 50 ms). The
peer they come from runs in the window's process too, and takes in the whole channel meanwhile,
so the peak RSS before the sync (the window with every row loaded) is reported as well. The
window runs as `hearth gui` runs it: ui.app's application() and set_up() (the theme, and
Python's garbage collection on the GUI thread, ui/collector.py) come before it.

Two replicas are measured in one run: "plain" holds only the messages; "mix" holds the same
messages with a conversation mix among them (bench/_corpus.Mix: reactions on 20% of messages,
5% of messages edited, a few reactions taken back), and so do the 10,000 that arrive by sync.
Each is measured `--rounds` times (default HEARTH_BENCH_UI_ROUNDS or 3), alternating plain,
mix, plain, mix, ...; the report gives the medians, each round's figures, and mix/plain. The
targets hold for both (issue #17: the mix must not regress), and the run exits 1 when one is
missed. They are for the full size on a quiet machine: a smaller run (`--messages 200`, or
`--tiny`, which tests/bench runs) reports the time targets unchecked.

The replicas are filled by child processes (`--fill`), and each measurement runs in a child of
its own (`--measure`) on a fresh copy of them, so the peak RSS is that process's alone: Qt,
the Node, every message row once scrolled to the top, and then the peer. One more round per
variant runs under cProfile (the window's thread); the top of each profile goes to
bench/results/ui_channel-profile.txt (ui_channel-small-profile.txt below the full size) and its
first lines into the report (`profile_top`), so where the time goes is there beside the
figures."""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtCore import QEvent, QEventLoop, QObject, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app import joining, sharing  # noqa: E402
from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from bench._common import RESULTS, report  # noqa: E402
from bench._corpus import conversation, posts  # noqa: E402
from storage import Replica  # noqa: E402
from ui.app import application, set_up  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402

FULL_MESSAGES = 100_000  # the size the targets are for
CHANNEL_MESSAGES = int(os.environ.get("HEARTH_BENCH_UI_MESSAGES", FULL_MESSAGES))
SYNC_MESSAGES = 10_000
ROUNDS = int(os.environ.get("HEARTH_BENCH_UI_ROUNDS", 3))
TINY = {"messages": 200, "sync": 100, "rounds": 1}
VARIANTS = ("plain", "mix")
FIGURES = ("first_page_ms", "scroll_to_top_s", "peak_rss_mb", "peak_rss_before_sync_mb",
           "longest_gui_stall_ms", "sync_s")
# figure, most allowed, whether it is checked below the full size (times mean little there)
TARGETS = (("first_page_ms", 100, False), ("scroll_to_top_s", 10, False),
           ("peak_rss_mb", 300, True), ("longest_gui_stall_ms", 50, False))
PROFILE_LINES = 25  # of each variant's profile, by cumulative time, in the results file
PROFILE_REPORTED = 12  # of those, in the JSON report
TIMEOUT_S = 300
MEASURE_TIMEOUT_S = 1200  # one child: start, first paint, scroll to the top, sync


def wait(app: QApplication, condition) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)


def fill(paths: Paths, variant: str, count: int, offset: int = 0) -> dict[str, int]:
    """Fill the replica with `count` messages (and for "mix" the conversation around them);
    returns the objects by kind."""
    with Replica(paths.replica) as replica:
        args = dict(channels=1, authors=50, workspace=replica.workspace.id, offset=offset)
        if variant == "mix":
            made = conversation(count, **args)
            raws, kinds = made.raws, dict(made.kinds)
        else:
            raws = posts(count, **args)
            kinds = {"post/text": len(raws)}
        for start in range(0, len(raws), 5000):
            replica.ingest(raws[start:start + 5000])
    return kinds


def fill_in_child(paths: Paths, variant: str, count: int, offset: int = 0) -> dict[str, int]:
    done = subprocess.run([sys.executable, __file__, "--fill", str(paths.data), paths.workspace,
                           variant, str(count), str(offset)],
                          check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(done.stdout.splitlines()[-1])


def prepare(root: Path, variant: str, messages: int, sync: int) -> dict[str, int]:
    """Two members under `root` (a/ and b/): a holds the channel, b the messages to sync."""
    a = Paths.resolve(root / "a", "default")
    b = Paths.resolve(root / "b", "default")
    Workspace.init(a, "ada").close()
    sharing.join_workspace(b, sharing.invite_for(a, joining.identity_key(b)), nick="bob")
    held = fill_in_child(a, variant, messages)
    synced = fill_in_child(b, variant, sync, offset=messages)
    return {"channel_objects": sum(held.values()), "sync_objects": sum(synced.values()),
            "channel_objects_by_kind": held}


class FirstPaint(QObject):
    """Notes when the message list's viewport has first painted with rows in its model."""

    def __init__(self, window: MainWindow):
        super().__init__()
        self.window = window
        self.at: float | None = None
        self._seen = False
        window.message_view.viewport().installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Paint and not self._seen and \
                self.window.messages.rowCount() > 0:
            self._seen = True
            QTimer.singleShot(0, self._painted)  # runs once this paint is done
        return False

    def _painted(self) -> None:
        self.at = time.perf_counter()


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def measure(root: Path, messages: int, sync: int) -> dict:
    """The window on root/a's channel (`messages` of them), then root/b's `sync` messages
    arriving by sync."""
    a = Paths.resolve(root / "a", "default")
    b = Paths.resolve(root / "b", "default")
    app = application()
    collector = set_up(app, a.data)  # the theme and the GUI thread's garbage collection
    node_a = Node(a, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None).start()
    try:
        start = time.perf_counter()
        window = MainWindow(node_a)
        painted = FirstPaint(window)
        window.show()
        window.show_channel("channel-0")
        wait(app, lambda: painted.at is not None)
        first_page_ms = (painted.at - start) * 1000
        start = time.perf_counter()
        while window.messages.canFetchMore() or window.messages._loading:
            if window.messages.canFetchMore():
                window.messages.fetchMore()
            app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)
        scroll_s = time.perf_counter() - start
        window_rss_mb = peak_rss_mb()
        loaded = window.messages.messages
        shown = {  # what the rows had to show: zero in the mix would mean it measured plain rows
            "messages_loaded": len(loaded),
            "loaded_with_reactions": sum(1 for m in loaded if getattr(m, "reactions", ())),
            "loaded_edited": sum(1 for m in loaded if getattr(m, "edited", False)),
        }
        del loaded  # the rows go when the window leaves the channel, as they did before
        window.show_channel("general")

        began = time.monotonic()
        ticks: list[float] = [began]
        timer = QTimer(interval=10)
        timer.timeout.connect(lambda: ticks.append(time.monotonic()))
        timer.start()
        start = time.perf_counter()
        node_b = Node(b, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None,
                      peers=[("127.0.0.1", node_a.port)]).start()
        try:
            target = messages + sync
            wait(app, lambda: sum(c.messages for c in window.channels.channels) >= target)
            sync_s = time.perf_counter() - start
            ticks.append(time.monotonic())  # a small sync may end before the timer's 2nd tick
        finally:
            timer.stop()
            node_b.stop()
        stalls = [(y - x) * 1000 for x, y in zip(ticks, ticks[1:], strict=False)]
        window.close()
    finally:
        node_a.stop()
        collector.stop()
    return {
        "first_page_ms": round(first_page_ms, 1),
        "scroll_to_top_s": round(scroll_s, 2),
        "peak_rss_mb": peak_rss_mb(),
        "peak_rss_before_sync_mb": window_rss_mb,
        "longest_gui_stall_ms": round(max(stalls), 1),
        "sync_s": round(sync_s, 2),
        **shown,
    }


def measure_in_child(root: Path, messages: int, sync: int, profile: bool = False) -> dict:
    done = subprocess.run([sys.executable, __file__, "--measure", str(root), str(messages),
                           str(sync), *(["--profile"] if profile else [])], check=True,
                          stdout=subprocess.PIPE, text=True, timeout=MEASURE_TIMEOUT_S)
    return json.loads(done.stdout.splitlines()[-1])


def profiled(root: Path, messages: int, sync: int) -> dict:
    """measure under cProfile: the figures, and the top of the profile by cumulative time
    (the window's thread: the Node's runs beside it, unprofiled)."""
    profile = cProfile.Profile()
    profile.enable()
    figures = measure(root, messages, sync)
    profile.disable()
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text)
    stats.sort_stats("cumulative").print_stats(PROFILE_LINES)
    return {**figures, "profile": text.getvalue()}


def top_lines(profile: str) -> list[str]:
    """The first rows of a pstats listing, each "cumulative s  function"."""
    rows = []
    lines = profile.splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), None)
    for line in lines[start + 1 if start is not None else len(lines):]:
        parts = line.split(None, 5)
        if len(parts) == 6:
            rows.append(f"{parts[3]} s  {parts[5]}")
    return rows[:PROFILE_REPORTED]


def summary(rounds: list[dict]) -> dict:
    """Each figure's median over the rounds, and its values round by round."""
    out = {name: round(statistics.median(r[name] for r in rounds), 2) for name in FIGURES}
    for name in ("messages_loaded", "loaded_with_reactions", "loaded_edited"):
        out[name] = rounds[-1][name]
    out["rounds"] = {name: [r[name] for r in rounds] for name in FIGURES}
    return out


def targets(medians: dict[str, dict], full: bool) -> list[dict]:
    """Each variant's figures against their targets; below the full size only those that
    still mean something are checked."""
    out = []
    for variant, figures in medians.items():
        for figure, most, always in TARGETS:
            value = figures[figure]
            out.append({"figure": f"{variant}.{figure}", "value": value, "op": "<=",
                        "target": most, "met": value <= most, "checked": full or always})
    return out


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=CHANNEL_MESSAGES,
                        help="messages in the channel (default %(default)s)")
    parser.add_argument("--sync", type=int, default=None,
                        help=f"messages that arrive by sync (default {SYNC_MESSAGES:,}, or a "
                             "tenth of --messages when that is smaller)")
    parser.add_argument("--rounds", type=int, default=None,
                        help=f"measurements per variant (default {ROUNDS}; 1 below the full "
                             "size)")
    parser.add_argument("--no-profile", action="store_true",
                        help="skip the profiled round")
    parser.add_argument("--tiny", action="store_true",
                        help=f"{TINY['messages']} messages, {TINY['sync']} synced, one round "
                             "(a smoke test: the times mean little)")
    args = parser.parse_args()
    if args.tiny:
        args.messages, args.sync, args.rounds = TINY["messages"], TINY["sync"], TINY["rounds"]
    if args.rounds is None:
        args.rounds = ROUNDS if args.messages >= FULL_MESSAGES else 1
    if args.sync is None:
        args.sync = min(SYNC_MESSAGES, max(1, args.messages // 10))
    return args


def main() -> None:
    if sys.argv[1:2] == ["--fill"]:
        data, workspace, variant, count, offset = sys.argv[2:7]
        print(json.dumps(fill(Paths.resolve(data, workspace), variant, int(count),
                              int(offset))))
        return
    if sys.argv[1:2] == ["--measure"]:
        root, messages, sync = Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
        run = profiled if "--profile" in sys.argv[5:] else measure
        print(json.dumps(run(root, messages, sync)))
        return
    args = options()
    full = args.messages >= FULL_MESSAGES
    profiles: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        made = {variant: prepare(Path(tmp) / variant, variant, args.messages, args.sync)
                for variant in VARIANTS}
        rounds: dict[str, list[dict]] = {variant: [] for variant in VARIANTS}
        plan = [(variant, False) for _ in range(args.rounds) for variant in VARIANTS]
        plan += [] if args.no_profile else [(variant, True) for variant in VARIANTS]
        for variant, profile in plan:  # alternating, so drift on a shared machine hits both
            run = Path(tmp) / "run"
            shutil.copytree(Path(tmp) / variant, run)
            try:
                figures = measure_in_child(run, args.messages, args.sync, profile)
            finally:
                shutil.rmtree(run)
            if profile:
                profiles[variant] = figures["profile"]
            else:
                rounds[variant].append(figures)
    plain, mix = summary(rounds["plain"]), summary(rounds["mix"])
    checked = targets({"plain": plain, "mix": mix}, full)
    figures = {
        "channel_messages": args.messages, "sync_messages": args.sync,
        "rounds": args.rounds, "order": "plain, mix, plain, mix, ...; figures are medians",
        **{k: v for k, v in plain.items() if k != "rounds"},
        "target_first_page_ms": 100, "target_scroll_to_top_s": 10, "target_peak_rss_mb": 300,
        "target_stall_ms": 50,
        "mix": {**made["mix"], **mix},
        "mix_vs_plain": {name: round(mix[name] / plain[name], 3) if plain[name] else None
                         for name in FIGURES},
        "plain_rounds": plain["rounds"],
        "profile_top": {variant: top_lines(text) for variant, text in profiles.items()},
        "targets": checked,
    }
    publish(figures, full, profiles)
    missed = [t for t in checked if t["checked"] and not t["met"]]
    for t in missed:
        print(f"ui_channel: {t['figure']} = {t['value']} misses its target <= {t['target']}",
              file=sys.stderr)
    if missed:
        sys.exit(1)


def publish(figures: dict, full: bool, profiles: dict[str, str]) -> None:
    """The report (bench/results/ui_channel.json; a smaller run's beside it, so it never
    replaces the full figures) and the profiles' top lines."""
    name = "ui_channel" if full else "ui_channel-small"
    RESULTS.mkdir(parents=True, exist_ok=True)
    if profiles:
        (RESULTS / f"{name}-profile.txt").write_text("".join(
            f"== {variant} ({figures['channel_messages']:,} messages)\n{text}\n"
            for variant, text in profiles.items()))
    if full:
        report("ui_channel", figures)
        return
    (RESULTS / f"{name}.json").write_text(json.dumps(
        {"benchmark": "ui_channel", "when": time.strftime("%Y-%m-%dT%H:%M:%S"), **figures},
        indent=2) + "\n")
    print(json.dumps({"benchmark": "ui_channel", **figures}, separators=(",", ":")))


if __name__ == "__main__":
    main()
