"""The packaged application (dist/hearth/, built by `make package`) does what the source checkout
does: `--version` and `--help`, `serve` syncing over loopback with a source checkout's node
(through the bundle's own signature helper process), `screenshot` offscreen, and a desktop
install into a prefix. Skipped at once when the bundle is not built or is older than the sources
(see conftest.py); `make package-test` builds it and runs them."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from app.paths import Paths
from app.workspace import Workspace
from storage import Replica
from tests.app.conftest import Hearth
from tests.app.test_sync_cli import LOCAL, Serve, digest, replica_path, serving, texts
from tests.support import wait_until

from .conftest import BUNDLE_DIR, EXE, ROOT, Bundle, needs_bundle

pytestmark = needs_bundle()

MAX_BUNDLE_MB = 250
BACKLOG = 600  # above storage._verify.PARALLEL_MIN: a catch-up batch may go to the helper process
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
APP_ID = "io.github.hearth.Hearth"
CACHES = {"mimeinfo.cache", "icon-theme.cache"}  # the desktop's indexes of every application


class PackagedServe(Serve):
    """`hearth serve` of the bundle in the background (tests/app/test_sync_cli.py's `Serve`,
    with the packaged executable in place of `python -m app`)."""

    def __init__(self, bundle: Bundle, data: Path, *extra: str):
        self.out = data.with_name(data.name + "-serve.out")
        self.err = data.with_name(data.name + "-serve.err")
        argv = bundle.argv("serve", "--data", data, "--no-mdns", "--interface", LOCAL,
                           "--port", "0", *extra)
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(argv, cwd=data.parent, env=bundle.env, stdout=out,
                                         stderr=err, stdin=subprocess.DEVNULL)
        self.port = int(wait_until(self._port_line, what="the packaged `hearth serve` to "
                                   "print its port").group(1))


def _children(pid: int) -> list[list[str]]:
    """The command lines of a process's children (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                found.append((stat.parent / "cmdline").read_bytes().decode().split("\0")[:-1])
        except (OSError, IndexError, ValueError):
            continue  # the process ended while we looked
    return found


def _messages(hearth: Hearth, data: Path) -> int:
    """How many messages `hearth channels` counts in #general."""
    channels = hearth("channels", "--json", data=data).json()
    return next(c["messages"] for c in channels if c["name"] == "general")


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def _size_mb(folder: Path) -> float:
    return sum(p.lstat().st_size for p in folder.rglob("*")) / 1e6


# The command line --------------------------------------------------------------------------------

def test_version_and_help_are_the_source_checkouts(bundle: Bundle, source: Hearth):
    version = bundle("--version").line
    assert version == source("--version").line
    assert version != "hearth 0.0.0+unknown"  # the bundle carries the installed metadata
    for args in (["--help"], ["serve", "--help"], ["screenshot", "--help"]):
        assert bundle(*args).stdout == source(*args).stdout, args
    wrong, reference = bundle("--no-such-option", ok=False), source("--no-such-option", ok=False)
    assert (wrong.returncode, wrong.stderr) == (reference.returncode, reference.stderr) != (0, "")


def test_the_bundle_carries_the_analytics_schema_and_leaves_out_spark_and_unused_qt():
    for version in (1, 8):  # the oldest, and the newest the app loads
        schema = next(BUNDLE_DIR.rglob(f"analytics/schema/events-v{version}.json"))
        assert schema.read_bytes() == (
            ROOT / f"analytics/schema/events-v{version}.json").read_bytes()
    names = {p.name for p in BUNDLE_DIR.rglob("*")}
    for left_out in ("pyspark", "matplotlib", "numpy", "pytest", "libQt6Qml.so.6",
                     "libQt6Quick.so.6", "libQt6WebEngineCore.so.6", "libQt6Multimedia.so.6",
                     "libQt6Pdf.so.6", "Qt3DCore.abi3.so", "libqgtk3.so"):
        assert left_out not in names, f"{left_out} should not be in the bundle"
    for needed in ("libQt6Widgets.so.6", "libqoffscreen.so", "libqxcb.so", "libqwayland.so",
                   "jsonschema"):  # analytics.recorder validates every event with it
        assert needed in names, f"{needed} is missing from the bundle"
    assert _size_mb(BUNDLE_DIR) < MAX_BUNDLE_MB


# serve ---------------------------------------------------------------------------------------------

def test_packaged_serve_syncs_with_a_source_checkout_node(bundle: Bundle, source: Hearth,
                                                          tmp_path: Path):
    # One workspace: created by the bundle, joined by the source checkout, which has a backlog.
    a, b = tmp_path / "packaged", tmp_path / "source"
    bundle("init", "--nick", "alice", data=a)
    key = source("identity", "show", data=b).line
    source("join-workspace", bundle("invite", "--for", key, data=a).line, "--nick", "bob",
           data=b)
    bundle("post", "general", "written by the bundle", data=a)
    with Workspace.open(Paths.resolve(b, "default")) as ws:
        for n in range(BACKLOG):
            ws.post("general", f"backlog {n}")

    with serving(source, b) as node_b:
        node_a = PackagedServe(bundle, a, "--peer", node_b.address)
        try:
            # The packaged node checks signatures in its own helper: `hearth --verify-worker`.
            helpers = wait_until(lambda: [c for c in _children(node_a.proc.pid)
                                          if c[1:] == ["--verify-worker"]],
                                 what="the packaged node's signature helper")
            assert Path(helpers[0][0]).resolve() == EXE.resolve()

            wait_until(lambda: digest(a) == digest(b), what="the replicas to converge")
            assert _messages(bundle, a) == BACKLOG + 1 == _messages(source, b)

            # Live, both ways: a post written beside each running node reaches the other one.
            bundle("post", "general", "live from the bundle", data=a)
            source("post", "general", "live from the source", data=b)
            wait_until(lambda: "live from the bundle" in texts(source, b),
                       what="the bundle's post to reach the source checkout's node")
            wait_until(lambda: "live from the source" in texts(bundle, a),
                       what="the source checkout's post to reach the packaged node")
            wait_until(lambda: digest(a) == digest(b), what="the replicas to converge again")

            codes = node_a.terminate(), node_b.terminate()
        finally:
            node_a.kill()
    errors = node_a.stderr
    assert codes == (0, 0), errors + node_b.stderr
    assert "Traceback" not in errors and "signature helper" not in errors, errors
    assert "shutting down" in errors  # the session was ended, not dropped
    with Replica(replica_path(a)) as replica:
        assert replica.integrity_check() == "ok"


# screenshot -----------------------------------------------------------------------------------------

def test_packaged_screenshot_renders_the_same_views_offscreen(bundle: Bundle, source: Hearth,
                                                              tmp_path: Path):
    packaged_out, source_out = tmp_path / "packaged-shots", tmp_path / "source-shots"
    with ThreadPoolExecutor(2) as pool:  # each waits on its window most of the time
        runs = pool.map(lambda run: run[0]("screenshot", "--out", run[1]),
                        [(bundle, packaged_out), (source, source_out)])
        written, expected = ([Path(line) for line in run.stdout.splitlines()] for run in runs)
    assert written and [p.name for p in written] == [p.name for p in expected]
    for shot in written:
        assert shot.parent == packaged_out and shot.stat().st_size > 5_000
        width, height = _png_size(shot)  # dialogs are sized by their text: no exact match
        assert width >= 200 and height >= 100, (shot.name, width, height)


# install-desktop ----------------------------------------------------------------------------------

def test_install_desktop_into_a_prefix_and_uninstall(tmp_path: Path):
    prefix = tmp_path / "prefix"
    env = {**os.environ, "PREFIX": str(prefix)}
    script = ROOT / "packaging" / "linux" / "install.sh"
    subprocess.run(["sh", str(script)], env=env, check=True, capture_output=True, timeout=120)

    link = prefix / "bin" / "hearth"
    version = subprocess.run([str(link), "--version"], capture_output=True, text=True,
                             cwd=tmp_path, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("hearth ")
    entry = prefix / "share" / "applications" / f"{APP_ID}.desktop"
    text = entry.read_text()
    assert f'Exec="{prefix}/lib/hearth/hearth" gui' in text
    assert f"Icon={APP_ID}" in text
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(entry)], capture_output=True,
                               text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr
    icons = prefix / "share" / "icons" / "hicolor"
    assert (icons / "scalable" / "apps" / f"{APP_ID}.svg").is_file()
    for size in (16, 32, 48, 64, 128, 256, 512):
        assert _png_size(icons / f"{size}x{size}" / "apps" / f"{APP_ID}.png") == (size, size)
    assert (prefix / "share" / "metainfo" / f"{APP_ID}.metainfo.xml").is_file()

    subprocess.run(["sh", str(script), "--uninstall"], env=env, check=True,
                   capture_output=True, timeout=120)
    left = [p for p in prefix.rglob("*") if (p.is_file() or p.is_symlink())
            and p.name not in CACHES]
    assert left == [], left
