"""A first start that fails uses nothing up (issue #29, 4): Qt's platform is known to load
before anything is written, a missing system library is named by its package, the welcome
comes again until it is answered, and joining from it leaves no stray workspace."""

from __future__ import annotations

import os
import subprocess
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from app import qt_check  # noqa: E402
from app.paths import WELCOME_PENDING, Paths, workspaces  # noqa: E402
from app.workspaces import opening  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.app import Controller  # noqa: E402

from .test_window_features import ROOT, local_node  # noqa: E402

LDD = """\
\tlinux-vdso.so.1 (0x00007ffd)
\tlibxcb-icccm.so.4 => not found
\tlibQt6Gui.so.6 => /venv/PySide6/Qt/lib/libQt6Gui.so.6 (0x00007f)
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-icccm.so.4 => not found
\tlibweird.so.9 => not found
"""


def test_the_missing_libraries_are_named_by_their_packages():
    missing = qt_check.missing_from_ldd(LDD)
    assert missing == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libweird.so.9"]
    line = qt_check.advice(missing)
    assert "sudo apt install libxcb-icccm4 libxcb-keysyms1 " in line
    assert "the packages that provide libweird.so.9" in line and "\n" not in line
    assert qt_check.platform({"QT_QPA_PLATFORM": "offscreen"}) == "offscreen"
    assert qt_check.platform({"DISPLAY": ":0"}) == "xcb"
    assert qt_check.platform({"WAYLAND_DISPLAY": "wayland-0"}) == "wayland"
    assert qt_check.problem({"QT_QPA_PLATFORM": "offscreen"}) is None


def test_a_platform_qt_cannot_load_creates_nothing(tmp_path):
    data = tmp_path / "fresh"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTH_")}
    env.update(QT_QPA_PLATFORM="nosuch", PYTHONPATH=ROOT, HEARTH_DATA=str(tmp_path / "unused"))
    proc = subprocess.run([sys.executable, "-m", "hearth", "--data", str(data), "gui",
                           "--no-mdns"], capture_output=True, text=True, timeout=60, env=env,
                          cwd=ROOT)
    assert proc.returncode != 0
    assert not data.exists() or workspaces(data) == [], "a failed start left a workspace"
    assert not (data / "identity.key").exists()


def test_the_welcome_comes_again_until_it_is_answered(qtbot, tmp_path):
    paths = Paths.resolve(tmp_path / "new", "default")
    opened, first_run = opening(paths, default=True)
    assert first_run and workspaces(paths.data) == ["default"]
    # The window never came up (or was closed unanswered): the next start welcomes again.
    assert opening(paths, default=True) == (opened, True)
    assert workspaces(paths.data) == ["default"]
    controller = Controller(opened, local_node, first_run=True)
    try:
        controller.start(local_node(opened).start())
        panel = controller.window.first_run
        assert panel is not None
        panel.nick.setText("grace")
        with qtbot.waitSignal(panel.nicknameSaved, timeout=WAIT_MS):
            panel.save_nick()
        assert not (paths.data / WELCOME_PENDING).exists()
        assert result(controller.node.facade.run(lambda ws: ws.nickname())) == "grace"
    finally:
        controller.window and controller.window.close()
        controller.close()
    assert opening(paths, default=True) == (opened, False)


def test_joining_from_the_welcome_leaves_no_stray_workspace(qtbot, tmp_path):
    ada = Paths.resolve(tmp_path / "ada", "default")
    opening(ada, default=True)
    (ada.data / WELCOME_PENDING).unlink()
    ada_node = local_node(ada).start()
    mine, first_run = opening(Paths.resolve(tmp_path / "mine", "default"), default=True)
    assert first_run
    code = result(ada_node.facade.run(lambda ws: ws.members.invite(uses=1, expires_ms=0)[0]))
    controller = Controller(mine, local_node, first_run=True)
    try:
        controller.start(local_node(mine).start())
        with qtbot.waitSignal(controller.opened, timeout=WAIT_MS):
            controller.join(code, "grace", f"127.0.0.1:{ada_node.port}")
        joined = controller.paths.workspace
        assert joined.startswith("ws-")
        assert workspaces(mine.data) == [joined]  # no empty "default" beside it
        assert not (mine.data / WELCOME_PENDING).exists()
    finally:
        controller.window and controller.window.close()
        controller.close()
        ada_node.stop()
