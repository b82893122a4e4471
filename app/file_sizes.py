"""The data folder's file sizes (app.preferences) and what changing them does at once: a smaller
storage quota evicts others' files beyond it. The window and `hearth storage` change them here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import preferences

if TYPE_CHECKING:
    from .workspace import Workspace


def set_file_sizes(ws: Workspace, *, auto_download_mb: int | None = None,
                   storage_quota_mb: int | None = None) -> int:
    """Change the sizes given (None: unchanged; PreferenceError for a size out of range) and
    evict others' files beyond the quota, least recently opened first: the bytes freed."""
    changes = {name: value for name, value in (("auto_download_mb", auto_download_mb),
                                               ("storage_quota_mb", storage_quota_mb))
               if value is not None}
    prefs = preferences.save(ws.paths.data, **changes)
    return ws.evict(prefs.storage_quota_mb * 2**20)
