"""Sizes in words, one way for the window and the command line (issue #29: a file was
"10.2 KB" on the composer's chip and "10.0 KB" in `hearth read`).

A file's size is in decimal units, as file managers show them (`size_label`). Quotas and the
auto-download limit are set in binary units (`hearth storage --quota 10G` is 10 GiB) and are
shown as set (`quota_label`), named GiB and MiB so the two never read as the same unit."""

from __future__ import annotations

UNITS = ("bytes", "KB", "MB", "GB", "TB")
_BINARY = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def size_label(size: int) -> str:
    """"812 bytes", "1 byte", "14 KB", "2.4 MB", "1.0 GB": decimal units, as file managers
    show them, three significant digits at most."""
    if size < 1000:
        return "1 byte" if size == 1 else f"{size} bytes"
    value = float(size)
    for unit in UNITS[1:]:
        value /= 1000
        if value < 999.95 or unit == UNITS[-1]:
            return f"{value:.1f} {unit}" if value < 99.95 else f"{value:.0f} {unit}"
    raise AssertionError("unreachable")


def quota_label(size: int) -> str:
    """A limit set in binary units, as set: "10 GiB", "25 MiB", "1.5 GiB" (else bytes)."""
    for unit, factor in _BINARY:
        if size >= factor:
            value = size / factor
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return size_label(size)
