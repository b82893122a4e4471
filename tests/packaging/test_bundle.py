"""The packaged application (dist/hearth/, built by `make package`) does what the source checkout
does: `--version` and `--help`, `serve` syncing over loopback with a source checkout's node
(through the bundle's own signature helper process), a Slack import big enough for its helper
processes (`hearth --slack-worker`), a file kept in its chunk packs and sent to a peer, a desktop
notification on a real session D-Bus, `screenshot` offscreen, and a desktop install into a
prefix. Skipped at once when the bundle is not built or is older than the sources
(see conftest.py); `make package-test` builds it and runs them."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from app.paths import Paths
from app.slack_import import HELPERS_MIN
from app.workspace import Workspace
from bench.import_slack import build_export
from core.attachments import CHUNK_SIZE
from storage import Replica
from tests.app.conftest import CLI_TIMEOUT_S, Hearth
from tests.app.slack_fixture import public_shape
from tests.app.test_sync_cli import (
    LOCAL,
    Serve,
    digest,
    member_folders,
    replica_path,
    serving,
    texts,
)
from tests.notify_support import NotificationServer, notification_service, session_bus  # noqa: F401
from tests.support import wait_until

from .conftest import BUNDLE_DIR, EXE, ROOT, Bundle, needs_bundle

pytestmark = needs_bundle()

MAX_BUNDLE_MB = 250
BACKLOG = 600  # above storage._verify.PARALLEL_MIN: a catch-up batch may go to the helper process
SLACK_MESSAGES = HELPERS_MIN + 400  # just enough for the import's helper processes
SLACK_CHANNELS = 4  # two for each of two helpers
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
    # the session was ended, not dropped (serve says how each session ended on stdout)
    assert "shutting down" in node_a.out.read_text() + node_b.out.read_text()
    with Replica(replica_path(a)) as replica:
        assert replica.integrity_check() == "ok"


# import-slack ---------------------------------------------------------------------------------------

def _shape(data: Path) -> dict:
    with Workspace.open(Paths.resolve(data, "default")) as ws:
        return public_shape(ws, limit=SLACK_MESSAGES)


def test_packaged_import_slack_runs_its_helpers_and_imports_as_the_source_checkout(
        bundle: Bundle, source: Hearth, tmp_path: Path):
    export = tmp_path / "export.zip"
    build_export(export, SLACK_MESSAGES, SLACK_CHANNELS)
    a, b = tmp_path / "packaged", tmp_path / "source"
    for hearth, data in ((bundle, a), (source, b)):
        hearth.env["HEARTH_VERIFY_PROCESSES"] = "2"  # helpers even on a single core
        hearth("init", "--nick", "ada", data=data)

    out, err = tmp_path / "import.out", tmp_path / "import.err"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = subprocess.Popen(bundle.argv("import-slack", export, "--quiet", "--data", a),
                                cwd=bundle.cwd, env=bundle.env, stdout=stdout, stderr=stderr,
                                stdin=subprocess.DEVNULL)
    try:
        def helpers() -> list[list[str]]:
            found = [c for c in _children(proc.pid) if c[1:] == ["--slack-worker"]]
            if not found and proc.poll() is not None:
                raise AssertionError("the packaged import ended without helper processes: "
                                     + err.read_text(errors="replace"))
            return found

        # The packaged import converts and signs in its own helpers: `hearth --slack-worker`.
        seen = wait_until(helpers, what="the packaged import's helper processes")
        assert Path(seen[0][0]).resolve() == EXE.resolve()
        assert proc.wait(CLI_TIMEOUT_S) == 0, err.read_text(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in err.read_text(errors="replace")
    packaged = out.read_text().strip()
    assert packaged.startswith(f"imported {SLACK_MESSAGES} messages (")
    assert packaged == source("import-slack", export, "--quiet", data=b).line
    imported = _shape(a)
    # every message came, in its channel or in its thread (a thread lists its root first)
    assert sum(len(shown) + sum(len(thread) - 1 for thread in threads)
               for shown, threads in imported.values()) == SLACK_MESSAGES
    assert any(threads for _, threads in imported.values())  # threads and reactions came too
    assert any(reactions for shown, _ in imported.values() for *_, reactions, _ in shown)
    assert imported == _shape(b)


# attach and download -----------------------------------------------------------------------------

def test_packaged_attach_keeps_the_file_in_chunk_packs_reads_it_back_and_serves_it(
        bundle: Bundle, source: Hearth, tmp_path: Path):
    a, b = member_folders(tmp_path)
    original = os.urandom(3 * CHUNK_SIZE + 1000)  # four chunks
    sent = tmp_path / "plan.bin"
    sent.write_bytes(original)
    message = bundle("attach", "general", sent, "--text", "the plan", data=a).line

    # The bundle stored the chunks in packs, found through index.db (storage/_chunk_packs.py),
    # not as a file per chunk (the layout before packs).
    chunks = replica_path(a).parent / "chunks"
    packs = list((chunks / "packs").glob("*.pack"))
    assert packs and (chunks / "index.db").is_file()
    assert sum(p.stat().st_size for p in packs) > len(original)
    assert {p.name for p in chunks.iterdir()} <= {"packs", "index.db", "index.db-wal",
                                                   "index.db-shm"}
    saved = Path(bundle("download", message, "--out", tmp_path / "packaged-out", data=a).line)
    assert saved.name == "plan.bin" and saved.read_bytes() == original

    # The packaged node reads them from its packs for a peer: the source checkout downloads.
    node = PackagedServe(bundle, a)
    try:
        source("sync", "--peer", node.address, "--once", data=b)
        got = Path(source("download", message, "--out", tmp_path / "source-out", "--peer",
                          node.address, "--no-mdns", data=b).line)
        assert got.read_bytes() == original
        assert node.terminate() == 0, node.stderr
    finally:
        node.kill()
    assert "Traceback" not in node.stderr, node.stderr


# serve --notify ----------------------------------------------------------------------------------

def test_packaged_serve_notify_raises_a_notification_on_the_session_bus(
        bundle: Bundle, source: Hearth, tmp_path: Path,
        notification_service: NotificationServer, session_bus: str):  # noqa: F811
    a, b = member_folders(tmp_path)
    bundle.env["DBUS_SESSION_BUS_ADDRESS"] = session_bus
    node = PackagedServe(bundle, a, "--notify")
    try:
        said = wait_until(lambda: re.search(r"notifications: .*", node.out.read_text()),
                          what="the packaged serve to say where notifications go")
        assert said.group(0) == "notifications: through the desktop's notification service " \
            "(org.freedesktop.Notifications)", node.stderr
        source("post", "general", "lunch?", data=b)  # #general notifies mentions only
        source("post", "general", "alice: are you there?", data=b)
        source("sync", "--peer", node.address, "--once", data=b)
        notified, = notification_service.wait_for(1, "the packaged app's notification")
        wait_until(lambda: "bob mentioned you in #general: alice: are you there?"
                   in node.out.read_text(), what="the printed notification")
        assert node.terminate() == 0, node.stderr
    finally:
        node.kill()
    assert (notified.app, notified.summary, notified.body) == (
        "Hearth", "bob mentioned you in #general", "alice: are you there?")
    assert "default" in notified.actions  # a click opens it
    assert "lunch?" not in node.out.read_text()
    assert "Traceback" not in node.stderr, node.stderr


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
