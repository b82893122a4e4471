"""The freedesktop files in packaging/linux/ (desktop entry, icons, AppStream metainfo) and the
install script are well-formed and agree with each other and with the project. These need no
built bundle, so they run in `make test` too."""

from __future__ import annotations

import configparser
import shutil
import struct
import subprocess
import tomllib
import xml.etree.ElementTree as ET

import pytest

from tests.app.conftest import ROOT

LINUX = ROOT / "packaging" / "linux"
APP_ID = "io.github.hearth.Hearth"
DESKTOP = LINUX / f"{APP_ID}.desktop"
METAINFO = LINUX / f"{APP_ID}.metainfo.xml"
ICONS = LINUX / "icons" / "hicolor"
PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_the_desktop_entry_opens_the_window_with_the_icon():
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # keys are case-sensitive
    entry.read(DESKTOP, encoding="utf-8")
    group = entry["Desktop Entry"]
    assert group["Type"] == "Application" and group["Name"] == "Hearth"
    assert group["Exec"] == "hearth gui" and group["TryExec"] == "hearth"
    assert group["Icon"] == APP_ID and group["Terminal"] == "false"
    if shutil.which("desktop-file-validate"):
        check = _run("desktop-file-validate", str(DESKTOP))
        assert check.returncode == 0 and not check.stdout.strip(), check.stdout + check.stderr


def test_the_metainfo_describes_this_app_and_its_current_release():
    root = ET.parse(METAINFO).getroot()
    assert root.tag == "component" and root.get("type") == "desktop-application"
    assert root.findtext("id") == APP_ID
    assert root.find("launchable").text == DESKTOP.name
    assert root.find("provides/binary").text == "hearth"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert root.findtext("project_license") == project["license"]["text"]
    releases = [r.get("version") for r in root.iter("release")]
    assert project["version"] in releases, "add a <release> for the version in pyproject.toml"
    tool = shutil.which("appstreamcli")
    if tool:
        check = _run(tool, "validate", "--no-net", str(METAINFO))
        assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("size", PNG_SIZES)
def test_each_png_icon_has_the_size_of_its_folder(size: int):
    data = (ICONS / f"{size}x{size}" / "apps" / f"{APP_ID}.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (size, size)


def test_the_svg_icon_is_square_svg():
    root = ET.parse(ICONS / "scalable" / "apps" / f"{APP_ID}.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    _x, _y, width, height = map(float, root.get("viewBox").split())
    assert width == height


def test_the_install_script_is_valid_sh():
    check = _run("sh", "-n", str(LINUX / "install.sh"))
    assert check.returncode == 0, check.stderr
