"""Export and import bundles of 10,000 and 100,000 signed posts (issue #12: import's memory).

Each export and import runs in a child process of its own (the way `hearth export` / `hearth
import` run), which reports its wall and CPU time and its peak RSS (/proc VmHWM) next to its
baseline: the peak RSS of the same child just before the call, every module loaded. Target: the
import's peak stays a few tens of MB above that baseline whatever the bundle's size. The
signature helper process that ingest starts for large batches is not counted (its memory
follows ingest's sub-batches, not the bundle).

HEARTH_BENCH_BUNDLE=10000,100000 sets the sizes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from app.paths import Paths  # noqa: E402
from app.workspace import Workspace, load_or_create_identity  # noqa: E402
from bench._common import Target, options, rate, report  # noqa: E402
from bench._corpus import posts  # noqa: E402
from storage import Replica  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SIZES = [int(n) for n in os.environ.get("HEARTH_BENCH_BUNDLE", "10000,100000").split(",")]
TINY_SIZES = [200, 1_000]
ABOVE_BASELINE_MB = 50
BATCH = 5_000
CHILD_TIMEOUT_S = 1800

# The child: load everything, note the peak RSS so far (the baseline), run one export or
# import, print the figures as JSON.
CHILD = """
import json, resource, sys, time
from pathlib import Path
from app import sharing
from app.paths import Paths

def peak_mb():
    # VmHWM: this address space's peak. ru_maxrss would also count the parent's RSS at fork,
    # which Linux carries across exec; it is only the fallback where there is no /proc.
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux

mode, data, bundle = sys.argv[1:4]
paths = Paths.resolve(data, "default")
def cpu_s():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

baseline = peak_mb()
start, cpu = time.perf_counter(), cpu_s()
if mode == "import":
    result = sharing.import_bundle(paths, Path(bundle))
else:
    result = sharing.export_bundle(paths, Path(bundle))
seconds, cpu = time.perf_counter() - start, cpu_s() - cpu
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "baseline_mb": baseline,
                  "peak_mb": peak_mb(), "result": result}))
"""


def child(mode: str, paths: Paths, bundle: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, str(paths.data), str(bundle)],
                          cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT_S, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def figures(run: dict, objects: int) -> dict:
    return {"seconds": round(run["seconds"], 2),
            "cpu_seconds": round(run["cpu_seconds"], 2),  # this process's; steadier on a busy box
            "objects_per_s": rate(objects, run["seconds"]),
            "baseline_rss_mb": round(run["baseline_mb"], 1),
            "peak_rss_mb": round(run["peak_mb"], 1),
            "above_baseline_mb": round(run["peak_mb"] - run["baseline_mb"], 1),
            "peak_to_baseline": round(run["peak_mb"] / run["baseline_mb"], 2)}


def one_size(count: int, tmp: Path) -> dict:
    source = Paths.resolve(tmp / "source", "default")
    with Workspace.init(source, "alice") as ws:
        raws = posts(count - ws.replica.count(), workspace=ws.id)
        for i in range(0, len(raws), BATCH):
            ws.replica.ingest(raws[i:i + BATCH])
        assert ws.replica.count() == count
        workspace, root = ws.id, ws.replica.workspace.root
    del raws
    bundle = tmp / "workspace.bundle"
    exported = child("export", source, bundle)
    assert exported["result"] == count, exported

    target = Paths.resolve(tmp / "target", "default")
    load_or_create_identity(target)
    Replica.create(target.replica, workspace, root).close()
    imported = child("import", target, bundle)
    assert imported["result"]["added"] == count, imported
    return {"objects": count, "bundle_mb": round(bundle.stat().st_size / 2**20, 1),
            "import": figures(imported, count), "export": figures(exported, count)}


def main() -> None:
    sizes = TINY_SIZES if options(__doc__).tiny else SIZES
    runs = {}
    for count in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            runs[str(count)] = one_size(count, Path(tmp))
    first, last = runs[str(sizes[0])]["import"], runs[str(sizes[-1])]["import"]
    report("bundle", {
        "sizes": runs,
        "cores": os.cpu_count(),
        "import_peak_growth": round(last["peak_rss_mb"] / first["peak_rss_mb"], 2),
        "largest_import_above_baseline_mb": last["above_baseline_mb"],
    }, [Target("largest_import_above_baseline_mb", "<=", ABOVE_BASELINE_MB)])


if __name__ == "__main__":
    main()
