"""One formatter for sizes (issue #29): a file reads the same on the composer's chip, in the
window's file card and in `hearth read`; quotas read as they were set."""

from __future__ import annotations

import os
from pathlib import Path

from app.units import quota_label, size_label

from .conftest import Hearth


def test_sizes_are_decimal_and_quotas_binary_as_set() -> None:
    assert [size_label(n) for n in (0, 1, 999, 1000, 10_200, 10_445, 2_400_000, 5 * 10**9)] == \
        ["0 bytes", "1 byte", "999 bytes", "1.0 KB", "10.2 KB", "10.4 KB", "2.4 MB", "5.0 GB"]
    assert [quota_label(n) for n in (25 << 20, 10 << 30, 1536 << 20, 1 << 20, 512)] == \
        ["25 MiB", "10 GiB", "1.5 GiB", "1 MiB", "512 bytes"]


def test_the_cli_shows_a_files_size_as_the_window_does(hearth: Hearth, tmp_path: Path) -> None:
    ada = tmp_path / "ada"
    hearth("init", "--nick", "ada", data=ada)
    notes = tmp_path / "notes.bin"
    notes.write_bytes(os.urandom(10_445))  # 10.4 KB in decimal units, 10.2 "KB" in binary
    hearth("attach", "#general", str(notes), data=ada)
    assert "[file 0: notes.bin, 10.4 KB]" in hearth("read", "general", data=ada).stdout
    storage = hearth("storage", data=ada).stdout
    assert "KB of a 10 GiB quota" in storage  # stored: the file and its list
    assert "files up to 25 MiB in your channels arrive without asking" in storage
