"""Documents: repos of branches whose content is a pycrdt (Yjs) text (docs/ARCHITECTURE.md "Documents").

A document is its signed objects (core.kinds documents the bodies):
- `doc/root` (its id is the document's id) names the title and first editors;
- the root branch, the stream named by that id, holds `doc/editors`, `doc/title`, `doc/branch`,
  `doc/main`, `doc/tag`, `doc/branch-key`, `doc/key-refresh`, `doc/visibility`,
  `doc/editing`, `doc/workspace-key` and `doc/edit-request`;
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

Visibility: a workspace-readable document (the creator's latest `doc/visibility`; none means
private) also publishes each branch key boxed under a key derived from the workspace secret
(`doc/workspace-key`, see `_keys`), so every member reads it; private ones are read by editors
and capability holders.

Editing: a document is edited by the editors its creator lists, or (the creator's
`doc/editing` "workspace", in the root state an object names) by every member of the
workspace as well: the app hands the members in, and they write with the keys published
under the workspace secret (see `_root` and `_keys`). Members who may not edit ask with `doc/edit-request`; adding them as
editors answers it. A restore is a commit of kind "restore" whose edits make the branch read
as it did at an earlier commit.

Positions at this API are Unicode codepoints; pycrdt counts UTF-8 bytes (see `_live._Live`).

The package is laid out in private modules, each importing only those above it (a part
names the `Document` it belongs to for type checking alone):
- `_records`: the values the API hands out and takes (`Edit`, `CommitInfo`, `BranchInfo`,
  `RequestInfo`, `CommentInfo`, `CommentReply`) and `DocumentError`;
- `_capability`: `Capability`, read access to one branch, and its text form;
- `_live`: `_Live`, a pycrdt document at a set of heads, and the codepoint/byte conversions;
- `_edits`: edits checked against the text and cut into commit-sized pieces;
- `_held`: `Held`, what a document holds (objects by id and stream, caches, decrypted
  payloads) and the clock's horizon;
- `_root`: `RootBranch`, the root-branch state (publishing, who counts, editors, title,
  visibility, requests to edit, branches, main, tags);
- `_keys`: `BranchKeys`, branch keys sealed to editors, refreshed, shared, published to the
  workspace; editors added and removed; visibility changed;
- `_commits`: `Commits`, branches' commits, their visibility, heads and payloads, sealing new
  ones, heads recorded in snapshots;
- `_states`: `States`, the Yjs states kept per branch (moved forward to other heads by what
  they lack) and the checkpoints they start from;
- `_comments`: `Comments`, comments anchored to ranges of a branch's text (`doc/comment`
  objects in the branch's stream, boxed with its key), replies and resolving;
- `_review`: `Review`, versions across branches (common pasts, the text at commits of several
  branches), who changed what between two versions, and merges that carry their conflicts'
  resolutions in the merge commit (`RESOLUTIONS`);
- `_document`: `Document` itself, built of those parts (`doc.held`, `doc.root_branch`,
  `doc.branch_keys`, `doc.commits`, `doc.states`, `doc.comments`, `doc.review`): building,
  loading, snapshots, taking in objects, committing, undo, fork, and the API the app calls.
  Comments and reviewing are called on their part: `doc.comments.add(...)`,
  `doc.review.merge(...)`.
"""

from __future__ import annotations

from ..doc_kinds import EDITING, VISIBILITIES
from ._capability import CAP_PREFIX, Capability
from ._document import Document
from ._keys import workspace_box_key
from ._records import (
    BranchInfo,
    CommentInfo,
    CommentReply,
    CommitInfo,
    DocumentError,
    Edit,
    RequestInfo,
)
from ._review import RESOLUTIONS

__all__ = [
    "CAP_PREFIX",
    "BranchInfo",
    "Capability",
    "CommentInfo",
    "CommentReply",
    "CommitInfo",
    "Document",
    "DocumentError",
    "EDITING",
    "Edit",
    "RESOLUTIONS",
    "RequestInfo",
    "VISIBILITIES",
    "workspace_box_key",
]
