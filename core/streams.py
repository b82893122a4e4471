"""Streams: how a channel's and a profile's are derived, and the class an object gives its
stream (which streams a member who keeps only some channels and documents still syncs).

A channel's stream is `channel_stream(workspace, name)`; a profile's is `profile_stream(author)`;
the workspace stream is the genesis id; a document's root branch stream is its `doc/root` id; a
branch's stream is its `doc/branch` id (docs/ARCHITECTURE.md "Objects")."""

from __future__ import annotations

import unicodedata

from .encoding import derive_id

GENESIS_STREAM = bytes(32)

# A stream's class: which streams a member who keeps only some channels and documents on a
# computer still syncs (every workspace-level one), and how sync orders them.
WORKSPACE_CLASS, CHANNEL_CLASS, DOCUMENT_CLASS = 0, 1, 2


def stream_class(kind: str, stream: bytes, workspace: bytes) -> int:
    """The class an object of `kind` in `stream` gives its stream: workspace-level for the
    workspace's own streams, profiles (post/info) and any kind this version does not know."""
    if stream in (workspace, GENESIS_STREAM) or kind == "post/info":
        return WORKSPACE_CLASS
    if kind.startswith("doc/"):
        return DOCUMENT_CLASS
    if kind.startswith(("post/", "mod/")):
        return CHANNEL_CLASS
    return WORKSPACE_CLASS


def channel_key(name: str) -> str:
    """How channel names compare: NFC, then case-folded."""
    return unicodedata.normalize("NFC", name).casefold()


def channel_stream(workspace: bytes, name: str) -> bytes:
    return derive_id("channel", workspace, channel_key(name).encode())


def profile_stream(author: bytes) -> bytes:
    """The profile stream's "hypothetical root": anyone can derive it from the key alone."""
    return derive_id("profile", author)
