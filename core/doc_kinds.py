"""Document kinds: the bodies of a document's root, its root branch and its branches
(core.documents gives them meaning; core.kinds lists them)."""

from __future__ import annotations

from collections.abc import Callable

from .fields import (
    BOX_NONCE_SIZE,
    MAX_NAME,
    MAX_SEALED,
    NONCE_SIZE,
    bad,
    check_id,
    check_ids,
    check_name,
    check_str,
    check_uint,
    id_field,
)

MAX_TITLE = 256
VISIBILITIES = ("workspace", "private")
EDITING = ("workspace", "listed")
MAX_NOTE = 256


def _doc_root(body: dict) -> None:
    check_str(body["title"], "title", 1, MAX_TITLE)
    check_ids(body["editors"], "editors", 1)
    check_id(body["nonce"], "nonce", NONCE_SIZE)


def _doc_editors(body: dict) -> None:
    check_ids(body["add"], "add")
    check_ids(body["remove"], "remove")
    if not body["add"] and not body["remove"]:
        raise bad("an editor change must add or remove someone")


def _doc_branch(body: dict) -> None:
    check_name(body["name"], "branch name", MAX_NAME)
    if body["source"] is not None:
        check_id(body["source"], "source")
    check_ids(body["at"], "at")


def _doc_commit(body: dict) -> None:
    check_ids(body["root"], "root")
    check_uint(body["epoch"], "epoch")
    check_id(body["nonce"], "nonce", BOX_NONCE_SIZE)
    if not isinstance(body["box"], bytes):
        raise bad("box must be bytes")


def _doc_tag(body: dict) -> None:
    check_name(body["name"], "tag name", MAX_NAME)
    check_id(body["commit"], "commit")


def _doc_branch_key(body: dict) -> None:
    check_id(body["branch"], "branch")
    check_uint(body["epoch"], "epoch")
    check_id(body["recipient"], "recipient")
    if not isinstance(body["sealed"], bytes) or len(body["sealed"]) > MAX_SEALED:
        raise bad(f"sealed must be at most {MAX_SEALED} bytes")


def _doc_key_refresh(body: dict) -> None:
    check_id(body["branch"], "branch")
    check_uint(body["epoch"], "epoch", 1)


def _doc_visibility(body: dict) -> None:
    if body["mode"] not in VISIBILITIES:
        raise bad(f"mode must be one of {', '.join(VISIBILITIES)}")


def _doc_editing(body: dict) -> None:
    if body["mode"] not in EDITING:
        raise bad(f"mode must be one of {', '.join(EDITING)}")


def _doc_workspace_key(body: dict) -> None:
    check_id(body["branch"], "branch")
    check_uint(body["epoch"], "epoch")
    check_id(body["nonce"], "nonce", BOX_NONCE_SIZE)
    if not isinstance(body["box"], bytes) or len(body["box"]) > MAX_SEALED:
        raise bad(f"box must be at most {MAX_SEALED} bytes")


def _doc_edit_request(body: dict) -> None:
    check_str(body["note"], "note", 0, MAX_NOTE)
    if type(body["open"]) is not bool:
        raise bad("open must be true or false")


def _doc_comment(body: dict) -> None:
    check_uint(body["epoch"], "epoch")
    check_id(body["nonce"], "nonce", BOX_NONCE_SIZE)
    if not isinstance(body["box"], bytes):
        raise bad("box must be bytes")


# kind -> (exact body field names, checker)
BODIES: dict[str, tuple[frozenset[str], Callable[[dict], None]]] = {
    "doc/root": (frozenset({"title", "editors", "nonce"}), _doc_root),
    "doc/title": (frozenset({"title"}), lambda b: check_str(b["title"], "title", 1, MAX_TITLE)),
    "doc/editors": (frozenset({"add", "remove"}), _doc_editors),
    "doc/branch": (frozenset({"name", "source", "at"}), _doc_branch),
    "doc/main": (frozenset({"branch"}), id_field("branch")),
    "doc/commit": (frozenset({"root", "epoch", "nonce", "box"}), _doc_commit),
    "doc/tag": (frozenset({"name", "commit"}), _doc_tag),
    "doc/branch-key": (frozenset({"branch", "epoch", "recipient", "sealed"}), _doc_branch_key),
    "doc/key-refresh": (frozenset({"branch", "epoch"}), _doc_key_refresh),
    "doc/visibility": (frozenset({"mode"}), _doc_visibility),
    "doc/editing": (frozenset({"mode"}), _doc_editing),
    "doc/workspace-key": (frozenset({"branch", "epoch", "nonce", "box"}), _doc_workspace_key),
    "doc/edit-request": (frozenset({"note", "open"}), _doc_edit_request),
    "doc/comment": (frozenset({"epoch", "nonce", "box"}), _doc_comment),
}
