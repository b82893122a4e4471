"""Before the window: whether Qt's platform plugin can load on this computer, and if not, the
system packages to install, by name.

Qt aborts the process when its platform plugin does not load, and names the wrong library
(it dlopens libxcb-cursor itself, so its message speaks of that one whatever is missing). So
`hearth gui` asks the dynamic loader first (`ldd` on the plugin and Qt's XCB library) and
stops with the packages before anything is created. Imports no Qt: only files are read.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

LDD_TIMEOUT_S = 10.0

# Shared libraries Qt's xcb platform needs that a minimal Debian or Ubuntu may lack, and the
# package that brings each (the names are the same on both).
PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-xinput.so.0": "libxcb-xinput0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb.so.1": "libxcb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
}
# Loaded by Qt at run time (dlopen), so ldd never lists it.
DLOPENED = ("libxcb-cursor.so.0",)
# Where the loader looks besides LD_LIBRARY_PATH (Debian's multiarch folders and the classics).
_LIB_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib")


def platform(env: Mapping[str, str] | None = None) -> str:
    """The Qt platform the window will use: QT_QPA_PLATFORM's first choice, else xcb under X11
    and wayland under Wayland (what Qt picks on Linux)."""
    env = os.environ if env is None else env
    chosen = env.get("QT_QPA_PLATFORM", "").split(";")[0].split(":")[0].strip()
    if chosen:
        return chosen
    return "wayland" if env.get("WAYLAND_DISPLAY") and not env.get("DISPLAY") else "xcb"


def missing_from_ldd(output: str) -> list[str]:
    """The libraries `ldd` says are not found, in its order, each once."""
    found = re.findall(r"^\s*(\S+) => not found", output, re.M)
    return list(dict.fromkeys(found))


def _on_disk(library: str) -> bool:
    dirs = [*filter(None, os.environ.get("LD_LIBRARY_PATH", "").split(":")), *_LIB_DIRS]
    for folder in dirs:
        base = Path(folder)
        if (base / library).exists() or any(base.glob(f"*-linux-gnu*/{library}")):
            return True
    return False


def missing_libraries() -> list[str]:
    """Shared libraries the xcb platform plugin needs and this computer lacks ([] when it
    cannot tell: no ldd, no plugin, not Linux)."""
    spec = importlib.util.find_spec("PySide6")
    ldd = shutil.which("ldd")
    if spec is None or spec.origin is None or ldd is None:
        return []
    qt = Path(spec.origin).parent / "Qt"
    binaries = [qt / "plugins" / "platforms" / "libqxcb.so", *qt.glob("lib/libQt6XcbQpa.so*")]
    missing: list[str] = []
    for binary in binaries:
        if not binary.exists():
            continue
        try:
            out = subprocess.run([ldd, str(binary)], capture_output=True, text=True,
                                 timeout=LDD_TIMEOUT_S).stdout
        except (OSError, subprocess.TimeoutExpired):
            return []
        missing += missing_from_ldd(out)
    missing += [lib for lib in DLOPENED if not _on_disk(lib)]
    return list(dict.fromkeys(missing))


def problem(env: dict[str, str] | None = None) -> str | None:
    """Why the window cannot start here, with what to install; None when it can (or when
    only Qt itself can tell: another platform than xcb)."""
    if platform(env) != "xcb" or not sys.platform.startswith("linux"):
        return None
    missing = missing_libraries()
    return advice(missing) if missing else None


def advice(missing: list[str]) -> str:
    """The one line that names the packages bringing `missing` libraries."""
    packages = sorted({PACKAGES.get(lib, lib) for lib in missing})
    unknown = [lib for lib in missing if lib not in PACKAGES]
    hint = f"sudo apt install {' '.join(p for p in packages if p not in unknown)}"
    if unknown:
        hint += f" (and the packages that provide {', '.join(unknown)})"
    return f"the window needs system libraries this computer lacks: {hint}"
