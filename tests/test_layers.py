"""Imports only point down the layers (docs/ARCHITECTURE.md "Layers").

Every .py file of each layer is parsed with `ast`: `import x` and `from x import y`, absolute and
relative, wherever they stand (inside functions and `if TYPE_CHECKING:` too). A layer may import
itself, the layers its row names, the standard library and the third-party packages its row
names. Dynamic imports (importlib) are not seen.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Third-party packages by import name (pynacl is `nacl`, noiseprotocol `noise`).
CORE = {"core", "nacl", "cbor2", "pycrdt"}
STORAGE = {"storage", "core", "cbor2"}  # cbor2 frames the verify helper's pipe
SYNC = {"sync", "core", "storage", "aiohttp", "zeroconf", "noise", "ifaddr"}
ANALYTICS = {"analytics", "core", "aiohttp", "jsonschema", "pyspark", "matplotlib", "numpy"}
# The relay holds no replica: core's envelope checks and sync's wire pieces, never storage's.
RELAY = {"relay", "core", "sync", "aiohttp", "noise"}
ALLOWED = {
    "core": CORE,
    "storage": STORAGE,
    "sync": SYNC,
    "analytics": ANALYTICS,
    "relay": RELAY,
    # everything above and what it uses, and where the platform keeps data
    # PIL: thumbnails of attached images (app/thumbnails.py); desktop_notifier: desktop
    # notifications (app/desktop_notify.py); sqlite_utils: the open archive (app/archive_sqlite.py)
    "app": {"app", "platformdirs", "emoji", "fast_diff_match_patch", "PIL", "desktop_notifier",
            "sqlite_utils"}
    | CORE | STORAGE | SYNC | ANALYTICS | RELAY,
    "ui": {"ui", "app", "PySide6", "shiboken6"},  # shiboken6 ships with PySide6
    # the `hearth` command: app's command line, and the window's commands (hearth/launcher.py)
    "hearth": {"hearth", "app", "ui"},
}


def imported(source: str, module: tuple[str, ...], is_package: bool) -> set[str]:
    """Top-level names of everything `source` imports; `module` is its dotted path."""
    package = module if is_package else module[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                out.add(node.module.split(".")[0])
                continue
            if node.level - 1 > len(package):
                raise ValueError(f"relative import beyond the top level in {'.'.join(module)}")
            base = [*package[:len(package) - (node.level - 1)],
                    *(node.module.split(".") if node.module else [])]
            # `from .. import storage` at the top of a layer names the modules themselves.
            out.update([base[0]] if base else [alias.name for alias in node.names])
    return out


def imports_of(layer: str) -> dict[str, set[str]]:
    """Per file of `layer` (relative to the repository): the top-level modules it imports."""
    out = {}
    for path in sorted((ROOT / layer).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        module = parts[:-1] if is_package else parts
        out[path.relative_to(ROOT).as_posix()] = imported(
            path.read_text(encoding="utf-8"), module, is_package)
    return out


def violations(layer: str) -> list[str]:
    allowed = ALLOWED[layer] | set(sys.stdlib_module_names)
    return [f"{file} imports {name}" for file, names in imports_of(layer).items()
            for name in sorted(names - allowed)]


LAYERS = [
    *(layer for layer in ALLOWED if layer != "ui"),
    pytest.param("ui"),
]


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_imports_only_what_its_row_allows(layer: str) -> None:
    assert violations(layer) == []


def test_the_launcher_imports_the_window_only_inside_its_commands() -> None:
    """Every command but the window's starts without Qt: the launcher imports ui/ only inside
    the functions that open or render the window."""
    for file in imports_of("hearth"):
        tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
        top: set[str] = set()
        for node in tree.body:  # module level only
            if isinstance(node, ast.Import):
                top.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                top.add(node.module.split(".")[0])
        assert "ui" not in top and "PySide6" not in top, file
    assert "ui" in imports_of("hearth")["hearth/launcher.py"]


def test_every_layer_is_read() -> None:
    for layer in ALLOWED:
        assert f"{layer}/__init__.py" in imports_of(layer)


def test_imports_are_resolved_wherever_they_stand() -> None:
    source = (
        "import os.path, nacl.bindings as b\n"
        "from . import sibling\n"
        "from ..storage.items import ItemReader\n"
        "def f():\n"
        "    from .. import analytics\n"
        "    import PySide6.QtCore\n"
        "if True:\n"
        "    from sqlite_utils import Database\n"
    )
    assert imported(source, ("sync", "store"), is_package=False) == {
        "os", "nacl", "sync", "storage", "analytics", "PySide6", "sqlite_utils"}
    assert imported("from . import x", ("ui",), is_package=True) == {"ui"}
    with pytest.raises(ValueError):
        imported("from ... import x", ("sync", "store"), is_package=False)


def test_the_relay_imports_no_storage_even_through_sync() -> None:
    """relay/ may use sync's wire pieces, which must not pull in a replica."""
    for file, names in imports_of("relay").items():
        for name in names & {"sync"}:
            source = (ROOT / file).read_text(encoding="utf-8")
            used = {node.module for node in ast.walk(ast.parse(source))
                    if isinstance(node, ast.ImportFrom) and node.module
                    and node.module.startswith("sync")}
            assert used <= {"sync.negentropy", "sync.relay_wire"}, (file, name, used)
    for module in ("sync/relay_wire.py", "sync/negentropy.py"):
        assert "storage" not in imported((ROOT / module).read_text(encoding="utf-8"),
                                          tuple(module[:-3].split("/")), False)
