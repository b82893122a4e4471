"""Nothing the app imports is left out of the bundle (packaging/bundle_excludes.py, read by
packaging/hearth.spec): every module of the app's packages is imported in a fresh interpreter
in which the excluded modules cannot be found, as in dist/hearth/. A module added to the app
that needs an excluded one (as thumbnails needed Pillow once, and the bundle did not start)
fails here, in `make test`, without building the bundle."""

from __future__ import annotations

import subprocess
import sys

from tests.app.conftest import ROOT

PROBE = r"""
import importlib, importlib.abc, pkgutil, runpy, sys
excluded = runpy.run_path("packaging/bundle_excludes.py")
blocked = set(excluded["SPARK"]) | set(excluded["TOOLS"])

class LeftOut(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (left out of the bundle)")
        return None

sys.meta_path.insert(0, LeftOut())
skipped = set(excluded["SPARK_ONLY"]) | {"storage._verify_worker"}
failed = []
for package in ("hearth", "app", "core", "storage", "sync", "ui", "analytics", "relay"):
    names = [package] + [m.name for m in pkgutil.walk_packages(
        importlib.import_module(package).__path__, package + ".")]
    for name in names:
        if name in skipped or name.endswith("__main__"):
            continue
        try:
            importlib.import_module(name)
        except ImportError as exc:
            failed.append(f"{name}: {exc}")
print("\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_module_the_app_imports_is_in_the_bundle():
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={"QT_QPA_PLATFORM": "offscreen",
                                                       "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, f"modules that would not import in the bundle:\n{proc.stdout}" \
                                 f"{proc.stderr[-2000:]}"
