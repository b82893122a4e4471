"""`hearth backup` and `hearth restore` of a workspace holding ~500 MB of attached files (issue
#33, "Your data"), beside a plain `cp -r` of the same workspace folder in the same run.

A workspace gets FILES random files of --size-mb / FILES MB each, attached to one channel (its
chunk store then holds that much ciphertext in packs). Then, each a process of its own, timed
by wall clock and measured by its peak RSS (the kernel's ru_maxrss for that child, os.wait4):
- cp: `cp -r` of the workspace's folder (replica and chunks): the baseline;
- backup: `python -m app backup` of it (the replica's online snapshot, every chunk read through
  the store, checked against its id and written uncompressed into the zip, the zip sealed as
  it is written: one argon2id, then XChaCha20-Poly1305 in parts of 1 MiB);
- restore: `python -m app restore` of that backup into a fresh data folder (the backup
  decrypted into the temporary folder, then every chunk through the store's checked put, in a
  folder moved in whole);
- seal: the backup file's bytes read and sealed again, to nowhere, by the same writer
  (app/backup_seal.py) with argon2id at its smallest costs: what sealing costs a backup;
- argon2id: one stretch at the costs a backup uses.
Figures: the times, `backup_vs_cp` and `restore_vs_cp` (time ratios), the peak RSS of each, the
backup file's size over the files' bytes, sealing's rate and its share of the backup's time,
and the stretch's time. The page cache holds the files for all three
(they were just written): these are CPU and copying costs, not a cold disk's.
Target: the backup's peak RSS <= 150 MB at 500 MB (a backup streams; it never holds the store).

Usage: python bench/backup.py [--size-mb N] [--tiny]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import Target, options, report  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FILES = 10
PASS = "bench pass phrase"
SEAL = """
import sys, time
from app.backup_seal import PART, SealingWriter
from core import passphrase

class Nowhere:
    def write(self, data): return len(data)
    def flush(self): pass

start = time.perf_counter()
passphrase.stretch("bench", bytes(16))
stretch = time.perf_counter() - start
writer = SealingWriter(Nowhere(), "bench", ops=1, mem=8192)
start = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    while piece := f.read(PART):
        writer.write(piece)
writer.close()
print(time.perf_counter() - start, stretch)
"""


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of a child process that must succeed. This process imports
    nothing of Hearth's (the workspace is made by commands too), so what a child inherits
    before its exec, which the kernel counts in its peak, is small."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{argv[:4]} exited {child.returncode}")
    return seconds, usage.ru_maxrss * 1024 / 1e6  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=500, help="the files' bytes, in MB")
    args = options(__doc__, parser)
    size_mb = 4 if args.tiny else args.size_mb
    env = {**os.environ, "HEARTH_PASSPHRASE": PASS}
    app = [sys.executable, "-m", "app"]
    with tempfile.TemporaryDirectory(prefix="hearth-bench-backup-") as tmp:
        root = Path(tmp)
        data = root / "data"
        subprocess.run([*app, "init", "--nick", "ada", "--data", str(data)], cwd=ROOT,
                       env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([*app, "channel", "create", "files", "--data", str(data)], cwd=ROOT,
                       env=env, check=True, stdout=subprocess.DEVNULL)
        each = size_mb * 1_000_000 // FILES
        files = []
        for n in range(FILES):
            files.append(root / f"file{n}.bin")
            with open(files[-1], "wb") as f:
                left = each
                while left:
                    piece = os.urandom(min(left, 4 << 20))
                    f.write(piece)
                    left -= len(piece)
        for part in range(0, FILES, 4):  # a message carries up to 4 files
            subprocess.run([*app, "attach", "files", *map(str, files[part:part + 4]), "--data",
                            str(data)], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
        for path in files:
            path.unlink()
        folder = data / "workspaces" / "default"
        cp_s, cp_rss = timed(["cp", "-r", str(folder), str(root / "copy")], env)
        out, small = root / "backup.zip", root / "small.zip"
        without_s, without_rss = timed(
            [*app, "backup", str(small), "--without-files", "--data", str(data)], env)
        backup_s, backup_rss = timed([*app, "backup", str(out), "--data", str(data)], env)
        restore_s, restore_rss = timed(
            [*app, "restore", str(out), "--data", str(root / "restored")], env)
        seal_s, stretch_s = map(float, subprocess.run(
            [sys.executable, "-c", SEAL, str(out)], cwd=ROOT, env=env, check=True,
            capture_output=True, text=True).stdout.split())
        figures = {
            "files_mb": round(FILES * each / 1e6, 1),
            "cp_ms": round(cp_s * 1000, 1), "cp_peak_rss_mb": round(cp_rss, 1),
            "backup_ms": round(backup_s * 1000, 1), "backup_peak_rss_mb": round(backup_rss, 1),
            "without_files_ms": round(without_s * 1000, 1),
            "without_files_peak_rss_mb": round(without_rss, 1),
            "files_extra_rss_mb": round(backup_rss - without_rss, 1),
            "restore_ms": round(restore_s * 1000, 1),
            "restore_peak_rss_mb": round(restore_rss, 1),
            "backup_vs_cp": round(backup_s / cp_s, 2),
            "backup_files_vs_cp": round((backup_s - without_s) / cp_s, 2),
            "restore_vs_cp": round(restore_s / cp_s, 2),
            "backup_size_over_files": round(out.stat().st_size / (FILES * each), 3),
            "seal_ms": round(seal_s * 1000, 1),
            "seal_mb_s": round(out.stat().st_size / 1e6 / seal_s, 1),
            "seal_share_of_backup": round(seal_s / backup_s, 3),
            "argon2id_ms": round(stretch_s * 1000, 1),
        }
    report("backup", figures, [Target("files_extra_rss_mb", "<=", 50, at_scale=True)])


if __name__ == "__main__":
    main()
