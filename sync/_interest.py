"""Interests: which streams a computer keeps (the stream-set seed's interest ranges).

A member may keep only some channels and documents on a computer. Its interest names the
streams of those (`keep`); every workspace-level stream (core.kinds.WORKSPACE_CLASS:
membership, admins, policies, profiles) is always in it, and `keep` None means every stream.
Peers send it in an `interest` frame after their hello and again when it changes; the other
side then reconciles, pushes and sends as extras only the streams it covers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.kinds import WORKSPACE_CLASS

from ._errors import _require

MAX_KEPT_STREAMS = 4096  # streams one interest may name (channels and document branches)


@dataclass(frozen=True)
class Interest:
    keep: frozenset[bytes] | None = None  # None: every stream

    def covers(self, stream: bytes, klass: int) -> bool:
        return self.keep is None or klass == WORKSPACE_CLASS or stream in self.keep

    def frame(self) -> dict[str, Any]:
        return {"t": "interest", "keep": None if self.keep is None else sorted(self.keep)}

    @classmethod
    def from_frame(cls, frame: dict) -> Interest:
        _require(frame.keys() == {"t", "keep"}, "interest fields")
        keep = frame["keep"]
        if keep is None:
            return cls()
        _require(isinstance(keep, list) and len(keep) <= MAX_KEPT_STREAMS and all(
            isinstance(s, bytes) and len(s) == 32 for s in keep), "interest streams")
        return cls(frozenset(keep))


EVERYTHING = Interest()
