"""Documents: repos of branches whose content is a pycrdt (Yjs) text (docs/ARCHITECTURE.md "Documents").

A document is its signed objects (core.kinds documents the bodies):
- `doc/root` (its id is the document's id) names the title and first editors;
- the root branch, the stream named by that id, holds `doc/editors`, `doc/title`, `doc/branch`,
  `doc/main`, `doc/tag`, `doc/branch-key` and `doc/key-refresh`;
- each branch is the stream named by its `doc/branch` id, a DAG of `doc/commit`s whose links
  are their parents.

A commit carries the Yjs update of its own transaction, encrypted with its branch's key of an
epoch; the text at a set of commits is the union of the updates in their causal past, so it
depends on that set alone. A commit names the root-branch heads its author had seen and counts
only if its author was an editor there, so removing an editor does not depend on arrival
order. Only the creator changes editors or the title. Other root-branch objects count when
their author was an editor in the root state they name and, if the author was removed, the
removal acknowledged them. Branch keys reach editors sealed to their identity; a capability
hands one branch's keys to anyone. New commits are encrypted only with keys editors sealed
(capabilities and strangers' keys are for reading). Objects dated beyond the horizon
(core.causal.HORIZON_MS) are not linked to, dated after, or chosen as the latest yet.

Positions at this API are Unicode codepoints; pycrdt counts UTF-8 bytes (see `_live._Live`).

The package is laid out in private modules, each importing only those above it:
- `_records`: the values the API hands out and takes (`Edit`, `CommitInfo`, `BranchInfo`) and
  `DocumentError`;
- `_capability`: `Capability`, read access to one branch, and its text form;
- `_live`: `_Live`, a pycrdt document at a set of heads, and the codepoint/byte conversions;
- `_edits`: edits checked against the text and cut into commit-sized pieces;
- `_base`: what a `Document` holds (objects, keys, caches) and the clock's horizon;
- `_root`: the root-branch state (publishing, who counts, editors, title, branches, main, tags);
- `_keys`: branch keys sealed to editors, refreshed, shared; editors added and removed;
- `_commits`: branches' commits, their visibility and payloads, the Yjs state at a set of heads;
- `_document`: `Document` itself: building, loading, snapshots, committing, undo, fork, merge.
"""

from __future__ import annotations

from ._capability import CAP_PREFIX, Capability
from ._document import Document
from ._records import BranchInfo, CommitInfo, DocumentError, Edit

__all__ = [
    "CAP_PREFIX",
    "BranchInfo",
    "Capability",
    "CommitInfo",
    "Document",
    "DocumentError",
    "Edit",
]
