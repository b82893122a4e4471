"""`hearth doc ...` commands. Each calls the app.documents method of the same name."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from core.documents import DocumentError

from . import _text
from ._command import PERSON_HELP, CLIError, errors, hinted, open_workspace, print_json, when
from .doc_records import ALREADY_MERGED, RESOLUTIONS
from .documents import MergeConflicts
from .names import NickBook
from .workspace import MIN_PREFIX

# --editors: who can edit a new document (core.documents.EDITING).
EDITORS = {"workspace": "workspace", "only-me": "listed"}


def _docs(args: argparse.Namespace):
    ws = open_workspace(args)
    return ws, ws.documents


def cmd_new(args) -> None:
    ws, docs = _docs(args)
    with ws:
        editing = None if args.editors is None else EDITORS[args.editors]
        print(docs.new(args.title, private=args.private, editing=editing).id)


def cmd_list(args) -> None:
    ws, docs = _docs(args)
    with ws:
        rows = docs.all()
        book = NickBook(ws.replica.nicknames())
    if args.json:
        print_json([{"id": d.id, "title": d.title, "creator": d.creator.hex(), "ts": d.ts}
                     for d in rows])
        return
    if not rows:
        print(hinted("no documents yet: create one with `hearth doc new TITLE`", args))
    for d in rows:
        print(f"{d.id[:12]}  {_text.line(d.title)}  (by {_who(book, d.creator)}, "
              f"{when(d.ts)})")


def _who(book: NickBook, key: bytes) -> str:
    """A key as lists without a key column name it: its nickname (told apart from lookalikes
    by a key suffix), or the first 8 hex digits of the key."""
    return book.short(key) if key in book.nicks else key.hex()[:8]


def cmd_rename(args) -> None:
    ws, docs = _docs(args)
    with ws:
        docs.rename(docs.open(args.doc), args.title)


def cmd_write(args) -> None:
    if (args.text is None) == (args.file is None):
        raise CLIError("give the new text with exactly one of --text or --file")
    if args.file is not None:
        try:
            text = Path(args.file).read_text(encoding="utf-8")
        except (OSError, UnicodeError) as exc:
            raise CLIError(f"cannot read {args.file}: {exc}") from None
    else:
        text = args.text
    ws, docs = _docs(args)
    with ws:
        commit = docs.write(docs.open(args.doc), text, branch=args.branch)
    print(commit or "unchanged")


def cmd_show(args) -> None:
    ws, docs = _docs(args)
    with ws:
        document = docs.open(args.doc)
        heads = [document.commit_id(args.at)] if args.at else document.heads(args.branch)
        text = document.text(heads)
        if args.json:
            print_json({"id": document.id, "title": document.title, "branch": args.branch,
                         "heads": heads, "text": text})
            return
    # The text, line by line, with anything a terminal would act on spelled out (`--json`
    # gives it exactly as it is).
    print("\n".join(_text.lines(text)), end="" if text.endswith("\n") or not text else "\n")


def cmd_history(args) -> None:
    ws, docs = _docs(args)
    with ws:
        history = docs.open(args.doc).history(args.branch)
        book = NickBook(ws.replica.nicknames())
    if args.json:
        print_json([{"id": c.id, "parents": list(c.parents), "author": c.author.hex(),
                      "ts": c.ts, "kind": c.kind, "merged": list(c.merged),
                      "restores": c.restores} for c in history])
        return
    for c in history:
        print(f"{c.id[:12]}  {when(c.ts)}  {_who(book, c.author)}  {_text.line(c.kind)}"
              + (f" (merged {', '.join(m[:12] for m in c.merged)})" if c.merged else "")
              + (f" (as at {c.restores[:12]})" if c.restores else ""))


def cmd_fork(args) -> None:
    source, _, at = args.source.partition("@")
    ws, docs = _docs(args)
    with ws:
        document = docs.open(args.doc)
        print(docs.fork(document, source, args.name, at or None))


CONFLICT_EXIT = 3  # `hearth doc merge` found conflicts it was not told how to resolve


def cmd_merge(args) -> int:
    ws, docs = _docs(args)
    with ws:
        try:
            merged = docs.merged(docs.open(args.doc), args.source, args.into,
                                 prefer=args.prefer)
        except MergeConflicts as exc:
            preview, reason = exc.preview, str(exc)
            book = NickBook(ws.replica.nicknames())
        else:
            nothing = merged.commit is None  # merged before: the target holds all of it
            if args.json:
                print_json({"commit": merged.commit, "conflicts": _conflicts_json(
                    merged.conflicts, merged.resolutions, NickBook(ws.replica.nicknames())),
                    "already_merged": nothing})
            else:
                print(ALREADY_MERGED if nothing else merged.commit)
            return 0
    if args.json:
        print_json({"commit": None, "conflicts": _conflicts_json(preview.conflicts, (), book),
                    "already_merged": False})
    else:
        for conflict in preview.conflicts:
            first, last = conflict.lines
            where = f"line {first}" if first == last else f"lines {first}-{last}"
            print(f"conflict {conflict.index + 1} of {len(preview.conflicts)}: "
                  f"{_text.line(preview.target)} {where}")
            for side, branch, text, authors in (
                    ("ours", preview.target, conflict.ours, conflict.ours_authors),
                    ("theirs", preview.source, conflict.theirs, conflict.theirs_authors)):
                by = ", ".join(_who(book, a) for a in authors) or "?"
                print(f"  {_text.line(branch)} ({side}), by {by}:")
                for text_line in _text.lines(text) if text else ["(nothing)"]:
                    print(f"    | {text_line}")
    print(f"hearth: {_text.line(hinted(reason, args))}", file=sys.stderr)
    return CONFLICT_EXIT


def _conflicts_json(conflicts, resolutions, book: NickBook) -> list[dict]:
    def people(keys) -> list[dict]:
        return [{"key": k.hex(), "nick": book.nicks.get(k)} for k in keys]
    return [{"index": c.index + 1, "lines": list(c.lines), "base": c.base,
             "ours": {"text": c.ours, "authors": people(c.ours_authors)},
             "theirs": {"text": c.theirs, "authors": people(c.theirs_authors)},
             "resolution": resolutions[c.index] if c.index < len(resolutions) else None}
            for c in conflicts]


def cmd_diff(args) -> None:
    ws, docs = _docs(args)
    with ws:
        found = docs.diff(docs.open(args.doc), args.old, args.new)
        book = NickBook(ws.replica.nicknames())
    if args.json:
        def who(key) -> dict:
            return {"author": key.hex() if key else None,
                    "nick": book.nicks.get(key) if key else None}
        print_json({"from": found.old_ref, "to": found.new_ref, "hunks": [
            {"from_line": h.old_line, "from_lines": h.old_lines, "to_line": h.new_line,
             "to_lines": h.new_lines,
             "authors": [{"key": a.hex(), "nick": book.nicks.get(a)} for a in h.authors],
             "segments": [{"op": s.op, "text": s.text, **who(s.author)} for s in h.segments]}
            for h in found.hunks]})
        return
    for line in found.unified():
        print(_text.line(line))


def cmd_set_main(args) -> None:
    ws, docs = _docs(args)
    with ws:
        docs.set_main(docs.open(args.doc), args.branch)


def cmd_tag(args) -> None:
    ws, docs = _docs(args)
    with ws:
        document = docs.open(args.doc)
        print(docs.tag(document, args.name, args.at, args.branch))


def cmd_branches(args) -> None:
    ws, docs = _docs(args)
    with ws:
        document = docs.open(args.doc)
        branches, tags = document.branches(), document.tags()
    if args.json:
        print_json({"branches": [{"id": b.id, "name": b.name, "source": b.source,
                                   "at": list(b.at), "heads": list(b.heads), "main": b.main,
                                   "readable": b.readable} for b in branches], "tags": tags})
        return
    for b in branches:
        flags = " (main)" if b.main else ""
        flags += "" if b.readable else " (no read key)"
        print(f"{_text.line(b.name)}{flags}  {b.id[:12]}  "
              f"heads {', '.join(h[:12] for h in b.heads)}")
    for name, commit in tags.items():
        print(f"tag {_text.line(name)} -> {commit[:12]}")


def cmd_editors(args) -> None:
    ws, docs = _docs(args)
    with ws:
        document = docs.open(args.doc)
        if args.add:
            docs.add_editor(document, ws.resolve_person(args.add).hex())
        elif args.remove:
            docs.remove_editor(document, ws.resolve_person(args.remove).hex())
        book = NickBook(ws.replica.nicknames())
        if document.editing == "workspace":
            print("everyone in the workspace can edit it; the editors listed:", file=sys.stderr)
        for key in sorted(document.listed_editors()):
            warning = book.warning(key)
            print(f"{book.nick(key)}  {key.hex()}" + (f"  ({warning})" if warning else ""))


def cmd_share(args) -> None:
    ws, docs = _docs(args)
    with ws:
        print(docs.open(args.doc).share(args.branch).encode())


def cmd_visibility(args) -> None:
    ws, docs = _docs(args)
    with ws:
        document = docs.open(args.doc)
        if args.mode is not None:
            docs.set_visibility(document, args.mode)
        print(document.visibility)


def cmd_ask_edit(args) -> None:
    ws, docs = _docs(args)
    with ws:
        document = docs.open(args.doc)
        if args.withdraw:
            docs.withdraw_request(document)
            print("request withdrawn")
            return
        docs.ask_edit(document, args.note)
    print("asked: the editors see your request (`hearth doc requests DOC`)")


def cmd_requests(args) -> None:
    ws, docs = _docs(args)
    with ws:
        requests = docs.requests(docs.open(args.doc))
        book = NickBook(ws.replica.nicknames())
    if args.json:
        print_json([{"id": r.id, "key": r.author.hex(), "nick": book.nicks.get(r.author),
                     "ts": r.ts, "note": r.note} for r in requests])
        return
    if not requests:
        print(hinted("no open requests to edit", args))
    for r in requests:
        note = f"  {_text.line(r.note)}" if r.note else ""
        print(f"{_who(book, r.author)}  {r.author.hex()}  {when(r.ts)}{note}")


def cmd_accept(args) -> None:
    ws, docs = _docs(args)
    with ws:
        document = docs.open(args.doc)
        key = ws.resolve_person(args.person)
        docs.accept(document, key.hex())
        print(f"{NickBook(ws.replica.nicknames()).nick(key)} is an editor now")


def cmd_restore(args) -> None:
    ws, docs = _docs(args)
    with ws:
        print(docs.restore(docs.open(args.doc), args.at, args.branch))


def cmd_open_cap(args) -> None:
    ws, docs = _docs(args)
    with ws:
        document = docs.open_capability(args.cap)
        print(f"{document.id}  {_text.line(document.title)}")


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    doc = sub.add_parser("doc", help="documents: write together, branch, merge, share",
                         description="documents: write together, branch, merge, share")
    doc_sub = doc.add_subparsers(dest="doc_command", metavar="COMMAND", required=True)

    def add(name: str, handler: Callable, help: str, *, json_flag: bool = False,
            document: bool = True) -> argparse.ArgumentParser:
        parser = doc_sub.add_parser(name, help=help, description=help)
        common(parser)
        if document:
            parser.add_argument("doc", metavar="DOC",
                                help=f"document id, id prefix ({MIN_PREFIX}+ hex digits) or title")
        if json_flag:
            parser.add_argument("--json", action="store_true", help="print JSON")
        parser.set_defaults(handler=errors(handler, DocumentError))
        return parser

    p = add("new", cmd_new, "create a document (every member of the workspace can read and "
                            "edit it)",
            document=False)
    p.add_argument("title")
    p.add_argument("--private", action="store_true",
                   help="only its editors (and those they share a branch with) can read it")
    p.add_argument("--editors", choices=tuple(EDITORS),
                   help="who can edit it: everyone in the workspace (the default; not for a "
                        "private document) or only the people you add (`hearth doc editors`)")
    add("list", cmd_list, "list documents", json_flag=True, document=False)
    p = add("rename", cmd_rename, "rename a document (its creator)")
    p.add_argument("title")
    p = add("write", cmd_write, "replace a branch's text (only what changed is recorded)")
    p.add_argument("--branch", default="main")
    p.add_argument("--text")
    p.add_argument("--file")
    p = add("show", cmd_show, "print a branch's text, or the text at a commit", json_flag=True)
    p.add_argument("--branch", default="main")
    p.add_argument("--at", metavar="COMMIT")
    p = add("history", cmd_history, "a branch's commits", json_flag=True)
    p.add_argument("--branch", default="main")
    p = add("fork", cmd_fork, "start a branch from another branch (or one of its commits)")
    p.add_argument("--from", dest="source", required=True, metavar="BRANCH[@COMMIT]")
    p.add_argument("--name", required=True)
    p = add("merge", cmd_merge,
            "merge a branch into another; where both changed the same text it lists the "
            "conflicts, changes nothing and exits 3, unless --prefer says how to resolve them",
            json_flag=True)
    p.add_argument("--from", dest="source", required=True, metavar="BRANCH")
    p.add_argument("--into", required=True, metavar="BRANCH")
    p.add_argument("--prefer", choices=RESOLUTIONS,
                   help="resolve every conflict with the --into branch's text (ours), the "
                        "--from branch's (theirs), or both one after the other, marked")
    p = add("diff", cmd_diff, "what changed between two versions, and who changed it",
            json_flag=True)
    p.add_argument("--from", dest="old", required=True, metavar="REF",
                   help="a branch, BRANCH@COMMIT or a tag")
    p.add_argument("--to", dest="new", required=True, metavar="REF",
                   help="a branch, BRANCH@COMMIT or a tag")
    p = add("set-main", cmd_set_main, "make a branch the document's main")
    p.add_argument("branch")
    p = add("tag", cmd_tag, "name a commit (default: the branch's newest head)")
    p.add_argument("name")
    p.add_argument("--at", metavar="COMMIT")
    p.add_argument("--branch", default="main")
    add("branches", cmd_branches, "branches and tags", json_flag=True)
    p = add("editors", cmd_editors, "list, add or remove editors (its creator)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--add", metavar="KEY", help=f"make an editor: {PERSON_HELP}")
    group.add_argument("--remove", metavar="KEY", help=f"no longer an editor: {PERSON_HELP}")
    p = add("share", cmd_share, "print a capability to read one branch")
    p.add_argument("--branch", default="main")
    p = add("visibility", cmd_visibility,
            "print who can read a document, or change it (its creator)")
    p.add_argument("mode", nargs="?", choices=("workspace", "private"),
                   help="workspace: every member reads it; private: its editors (making it "
                        "private closes later commits to everyone else)")
    p = add("ask-edit", cmd_ask_edit, "ask the document's editors to make you one")
    p.add_argument("--note", default="", help="a few words for the editors")
    p.add_argument("--withdraw", action="store_true", help="take your request back")
    add("requests", cmd_requests, "open requests to edit a document", json_flag=True)
    p = add("accept", cmd_accept, "make a member who asked to edit an editor (its creator)")
    p.add_argument("person", metavar="NICK|KEY", help=PERSON_HELP)
    p = add("restore", cmd_restore,
            "make a branch read as it did at a commit (a new commit; history is kept)")
    p.add_argument("--at", metavar="COMMIT", required=True)
    p.add_argument("--branch", default="main")
    p = add("open-cap", cmd_open_cap, "use a read capability someone shared", document=False)
    p.add_argument("cap")
    from .doc_comment_commands import register as register_comments  # comment, comments

    register_comments(doc_sub, common)


