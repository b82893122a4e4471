"""`hearth doc comment` and `hearth doc comments`: comments on a branch's text, with replies and
resolving. Each calls the app.doc_comments method of the same name (app.documents.Documents)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from core.documents import CommentInfo, DocumentError

from . import _text
from ._command import CLIError, errors, open_workspace, print_json, when, whole_number
from .names import NickBook
from .workspace import MIN_PREFIX

QUOTE_SHOWN = 60  # codepoints of the commented words a listing shows
NTH = whole_number(1, 1_000_000)


def cmd_comment(args: argparse.Namespace) -> None:
    chosen = [name for name in ("quote", "reply", "resolve") if getattr(args, name) is not None]
    if len(chosen) != 1:
        raise CLIError("give exactly one of --quote WORDS TEXT, --reply ID TEXT or --resolve ID")
    if args.nth is not None and chosen != ["quote"]:
        raise CLIError("--nth picks an occurrence of --quote's words")
    ws = open_workspace(args)
    with ws:
        docs = ws.documents
        document = docs.open(args.doc)
        if args.quote is not None:
            words, text = args.quote
            print(docs.comment(document, words, text, branch=args.branch, nth=args.nth))
        elif args.reply is not None:
            print(docs.reply(document, *args.reply))
        else:
            docs.resolve_comment(document, args.resolve)
            print("resolved")


def cmd_comments(args: argparse.Namespace) -> None:
    ws = open_workspace(args)
    with ws:
        docs = ws.documents
        document = docs.open(args.doc)
        why = docs.unreadable(document, args.branch)
        if why is not None:  # its comments are boxed with the key this computer lacks
            raise CLIError(why)
        comments = docs.comments(document, args.branch)
        book = NickBook(ws.replica.nicknames())
    if args.json:
        print_json([_record(c) for c in comments])
        return
    if not comments:
        print("no comments on that branch yet")
    for c in comments:
        print("\n".join(_lines(c, book)))


def _record(c: CommentInfo) -> dict[str, Any]:
    return {"id": c.id, "author": c.author.hex(), "ts": c.ts, "text": c.text, "quote": c.quote,
            "start": c.start, "end": c.end, "detached": c.detached, "resolved": c.resolved,
            "resolved_by": c.resolved_by.hex() if c.resolved_by else None,
            "replies": [{"id": r.id, "author": r.author.hex(), "ts": r.ts, "text": r.text}
                        for r in c.replies]}


def _lines(c: CommentInfo, book: NickBook) -> list[str]:
    """A comment as lines a terminal draws as they are: its header, what it says (indented),
    then each reply the same way."""
    quote = c.quote if len(c.quote) <= QUOTE_SHOWN else c.quote[:QUOTE_SHOWN] + "…"
    where = "detached: its words were deleted" if c.detached else f"at {c.start}-{c.end}"
    state = f", resolved by {_who(book, c.resolved_by)}" if c.resolved_by else ""
    out = [f"{c.id[:12]}  {_who(book, c.author)}  {when(c.ts)}  on "
           f"\"{_text.line(quote)}\" ({where}{state})",
           *("    " + part for part in _text.lines(c.text))]
    for r in c.replies:
        out.append(f"  reply {r.id[:12]}  {_who(book, r.author)}  {when(r.ts)}")
        out.extend("    " + part for part in _text.lines(r.text))
    return out


def _who(book: NickBook, key: bytes) -> str:
    """A nickname (told apart from lookalikes), or the first 8 hex digits of the key."""
    return _text.line(book.short(key)) if key in book.nicks else key.hex()[:8]


def register(doc_sub: argparse._SubParsersAction, common: Callable) -> None:
    """Add `comment` and `comments` to `hearth doc` (app/doc_commands.py calls this)."""
    def add(name: str, handler: Callable, help: str) -> argparse.ArgumentParser:
        parser = doc_sub.add_parser(name, help=help, description=help)
        common(parser)
        parser.add_argument("doc", metavar="DOC",
                            help=f"document id, id prefix ({MIN_PREFIX}+ hex digits) or title")
        parser.add_argument("--branch", default="main")
        parser.set_defaults(handler=errors(handler, DocumentError))
        return parser

    p = add("comment", cmd_comment,
            "comment on words of a branch's text, reply to a comment, or resolve one")
    # Each option takes its text (TEXT after an optional positional would be taken for it).
    p.add_argument("--quote", nargs=2, metavar=("WORDS", "TEXT"),
                   help="comment TEXT on WORDS of the branch as it reads now")
    p.add_argument("--nth", type=NTH, metavar="N",
                   help="when the words occur more than once: which (1 is the first)")
    p.add_argument("--reply", nargs=2, metavar=("ID", "TEXT"),
                   help="answer the comment ID (or a unique prefix of it) with TEXT")
    p.add_argument("--resolve", metavar="ID",
                   help="resolve the comment ID (its author or an editor)")
    p = add("comments", cmd_comments,
            "a branch's comments where their words are now, with replies")
    p.add_argument("--json", action="store_true", help="print JSON")
