"""The packaged application (dist/hearth/, `make package`): its size on disk (target < 250 MB),
and the cold start to the first window, offscreen: from launching `hearth gui` on a workspace to
Qt flushing the window's first frame. The source checkout (`python -m hearth gui`) is measured the
same way in the same run as the baseline, with the ratio of the two.

The bundle is brought up to date first with `make package` (nothing to do when it is current;
about half a minute when it is not). "First launch" is the first start of each in this run; the
median is over the starts after it (files in the page cache, as when a person opens the app a
second time). `--version` times the process start alone, before any Qt.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from bench._common import Target, options, report  # noqa: E402

BUNDLE_DIR = ROOT / "dist" / "hearth"
EXE = BUNDLE_DIR / "hearth"
SOURCE = [sys.executable, "-m", "hearth"]  # the launcher: `python -m app` opens no window
STARTS = int(os.environ.get("HEARTH_BENCH_PACKAGE_STARTS", 6))  # the first, then the median
TARGET_MB = 250
TIMEOUT_S = 120
# Qt's paint log names the moment a top-level window's pixels are handed to the platform.
FIRST_FRAME = re.compile(r"qt\.widgets\.painting: Flushing .* to QWidgetWindow")
QT_ENV = {"QT_QPA_PLATFORM": "offscreen", "QT_LOGGING_RULES": "qt.widgets.painting.debug=true"}


def build() -> float | None:
    """`make package`; the seconds it took when it had something to build, else None."""
    before = EXE.stat().st_mtime if EXE.exists() else None
    start = time.perf_counter()
    made = subprocess.run([os.environ.get("MAKE", "make"), "-s", "package"], cwd=ROOT,
                          capture_output=True, text=True)
    if made.returncode != 0:
        raise SystemExit(f"`make package` failed:\n{made.stdout}{made.stderr}")
    took = time.perf_counter() - start
    return None if before is not None and EXE.stat().st_mtime == before else took


def size() -> dict:
    files = [p for p in BUNDLE_DIR.rglob("*") if p.is_file() and not p.is_symlink()]
    total = sum(p.stat().st_size for p in files)
    parts: dict[str, int] = {}
    for p in files:
        rel = p.relative_to(BUNDLE_DIR).parts
        top = rel[1] if rel[0] == "_internal" and len(rel) > 1 else rel[0]
        parts[top] = parts.get(top, 0) + p.stat().st_size
    largest = sorted(parts.items(), key=lambda kv: -kv[1])[:6]
    return {"bundle_mb": round(total / 1e6, 1),
            "bundle_files": len(files),
            "largest_mb": {name: round(n / 1e6, 1) for name, n in largest}}


def first_window_ms(command: list[str], data: Path, cwd: Path) -> float:
    """Launch `hearth gui` on `data`; ms until its first frame is flushed. The process is
    then stopped (SIGTERM) and waited for."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HEARTH_")}, **QT_ENV}
    argv = [*command, "gui", "--data", str(data), "--no-mdns", "--interface", "127.0.0.1"]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            errors="replace")
    watchdog = threading.Timer(TIMEOUT_S, proc.kill)
    watchdog.start()
    try:
        for line in proc.stderr:
            if FIRST_FRAME.search(line):
                return (time.perf_counter() - start) * 1000
        raise RuntimeError(f"{argv[0]} gui showed no window (exit {proc.wait()})")
    finally:
        watchdog.cancel()
        proc.terminate()
        proc.stderr.close()
        proc.wait(TIMEOUT_S)


def version_ms(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run([*command, "--version"], cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def starts(measure, count: int) -> dict:
    runs = [measure() for _ in range(count)]
    return {"first_launch_ms": round(runs[0], 1),
            "median_ms": round(statistics.median(runs[1:] or runs), 1)}


def main() -> None:
    tiny = options(__doc__).tiny
    if tiny and not EXE.exists():  # a tiny run measures the bundle there is, never builds one
        raise SystemExit(f"no bundle at {EXE}: `make package` first")
    build_s = None if tiny else build()
    count = 2 if tiny else STARTS
    figures = size()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        with Workspace.init(Paths.resolve(data, "default"), "ada", name="bench") as ws:
            for n in range(20 if tiny else 200):
                ws.post("general", f"message {n} of the bench's workspace")
        where = Path(tmp)
        packaged = starts(lambda: first_window_ms([str(EXE)], data, where), count)
        source = starts(lambda: first_window_ms(SOURCE, data, ROOT), count)
        packaged_version = starts(lambda: version_ms([str(EXE)], where), count)
        source_version = starts(lambda: version_ms(SOURCE, ROOT), count)
    report("package", {
        **figures,
        "built_now_s": round(build_s, 1) if build_s is not None else None,
        "first_window_offscreen": {
            "packaged": packaged, "source_checkout": source,
            "ratio_packaged_to_source": round(packaged["median_ms"] / source["median_ms"], 2),
        },
        "version_command": {"packaged": packaged_version, "source_checkout": source_version},
        "starts": count,
    }, [Target("bundle_mb", "<", TARGET_MB)])


if __name__ == "__main__":
    main()
