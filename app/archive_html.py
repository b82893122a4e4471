"""`hearth archive --format html`: a static, offline archive to browse in any web browser:
`index.html` lists the channels and documents, each channel has a page of its days and a page
per day, each document a page of its versions. No script and nothing fetched from anywhere;
the browser's own find searches a page. Everything a member wrote is escaped; only http,
https and mailto links are made links."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from pathlib import Path

from .archive import Archive, ArchivedChannel, ArchivedDocument, ArchivedMessage

STYLE = """body{font:15px/1.45 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;
color:#1d1c1d}a{color:#1264a3}.m{padding:.35rem 0;border-bottom:1px solid #eee}
.who{font-weight:600}.when{color:#616061;font-size:.85em;margin-left:.5rem}
.reply{margin-left:2rem;border-left:3px solid #ddd;padding-left:.6rem}
.re{font-size:.85em;color:#444;background:#f4f4f4;border-radius:8px;padding:0 .4rem;
margin-right:.3rem}pre,code{background:#f6f6f6;border-radius:4px}pre{padding:.5rem;
white-space:pre-wrap}.meta{color:#616061}"""
_LINK = re.compile(r"\[([^\[\]\n]+)\]\(((?:https?|mailto):[^\s)]+)\)")
_BARE = re.compile(r"(?<![\"'>=])\b(https?://[^\s<]+)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.S)


def render(text: str) -> str:
    """A message's Markdown as safe HTML (escaped first, then a few marks made tags)."""
    parts = _CODE.split(text)
    out = []
    held: list[str] = []

    def hold(value: str) -> str:
        held.append(value)
        return f"\x01{len(held) - 1}\x01"

    for n, part in enumerate(parts):
        if n % 2:
            body = html.escape(part.strip("`"))
            out.append(f"<pre>{body}</pre>" if part.startswith("```") else f"<code>{body}</code>")
            continue
        part = html.escape(part, quote=True)
        part = _LINK.sub(lambda m: hold(f'<a href="{m.group(2)}">{m.group(1)}</a>'), part)
        part = _BARE.sub(lambda m: hold(f'<a href="{m.group(1)}">{m.group(1)}</a>'), part)
        part = _BOLD.sub(r"<b>\1</b>", part)
        part = _ITALIC.sub(r"<i>\1</i>", part)
        part = _STRIKE.sub(r"<s>\1</s>", part)
        part = re.sub("\x01(\\d+)\x01", lambda m: held[int(m.group(1))], part)
        out.append(part.replace("\n", "<br>"))
    return "".join(out)


def _page(title: str, body: str, up: str = "") -> str:
    nav = f'<p><a href="{up}">↑ back</a></p>' if up else ""
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>'
            f'{html.escape(title)}</title><style>{STYLE}</style></head><body>{nav}'
            f"<h1>{html.escape(title)}</h1>{body}</body></html>\n")


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _message(m: ArchivedMessage) -> str:
    reactions = "".join(f'<span class="re">{html.escape(r.emoji)} {r.count}</span>'
                        for r in m.reactions)
    files = "".join(f"<div>📎 {html.escape(f['name'])} ({f['size']} bytes)</div>"
                    for f in m.files)
    edited = ' <span class="meta">(edited)</span>' if m.edited else ""
    cls = "m reply" if m.thread else "m"
    return (f'<div class="{cls}" id="m{m.id[:16]}"><span class="who">{html.escape(m.name)}'
            f'</span><span class="when">{_when(m.ts)}</span>{edited}<div>{render(m.text)}</div>'
            f"{files}{f'<div>{reactions}</div>' if reactions else ''}</div>")


def _folder(c: ArchivedChannel) -> str:
    return c.id


def _channel(root: Path, c: ArchivedChannel) -> None:
    folder = root / _folder(c)
    folder.mkdir()
    days: dict[str, list[ArchivedMessage]] = {}
    roots = {m.id: m for m in c.messages}
    for m in sorted(c.messages, key=lambda m: (m.ts, m.id)):
        if m.thread is None:
            days.setdefault(_day(m.ts), []).append(m)
    threads: dict[str, list[ArchivedMessage]] = {}
    for m in sorted(c.messages, key=lambda m: (m.ts, m.id)):
        if m.thread is not None:
            if m.thread in roots:
                threads.setdefault(m.thread, []).append(m)
            else:
                days.setdefault(_day(m.ts), []).append(m)
    label = f"{'🔒 ' if c.private else '#'}{c.name}"
    for day, messages in days.items():
        body = "".join(_message(m) + "".join(_message(r) for r in threads.get(m.id, ()))
                       for m in messages)
        (folder / f"{day}.html").write_text(_page(f"{label} · {day}", body, "index.html"),
                                            encoding="utf-8")
    topic = f'<p class="meta">{html.escape(c.topic)}</p>' if c.topic else ""
    listing = "".join(f'<li><a href="{day}.html">{day}</a> ({len(ms)} messages)</li>'
                      for day, ms in sorted(days.items()))
    (folder / "index.html").write_text(_page(label, f"{topic}<ul>{listing}</ul>",
                                             "../index.html"), encoding="utf-8")


def _document(root: Path, d: ArchivedDocument, users: dict[str, str]) -> None:
    latest = d.versions[-1].text if d.versions else ""
    versions = "".join(
        f"<details><summary>{_when(v.ts)} · {html.escape(users.get(v.author, v.author))} · "
        f"{html.escape(v.kind)}</summary><pre>{html.escape(v.text)}</pre></details>"
        for v in reversed(d.versions))
    body = f"<pre>{html.escape(latest)}</pre><h2>Versions</h2>{versions}"
    (root / "documents" / f"{d.id[:16]}.html").write_text(
        _page(d.title, body, "../index.html"), encoding="utf-8")


def write_html(archive: Archive, out: Path) -> None:
    partial = out.with_name(f".{out.name}.partial")
    partial.mkdir()
    (partial / "documents").mkdir()
    for c in archive.channels:
        _channel(partial, c)
    for d in archive.documents:
        _document(partial, d, archive.users)
    channels = "".join(
        f'<li><a href="{_folder(c)}/index.html">{"🔒 " if c.private else "#"}'
        f"{html.escape(c.name)}</a> ({len(c.messages)} messages)</li>" for c in archive.channels)
    documents = "".join(f'<li><a href="documents/{d.id[:16]}.html">{html.escape(d.title)}</a>'
                        f"</li>" for d in archive.documents)
    private = ("<p><b>This archive holds private channels and direct messages: keep it as "
               "private as they are.</b></p>" if archive.private else "")
    body = (f"{private}<h2>Channels</h2><ul>{channels}</ul>"
            + (f"<h2>Documents</h2><ul>{documents}</ul>" if documents else "")
            + '<p class="meta">Made by Hearth. Search a page with your browser\'s find.</p>')
    (partial / "index.html").write_text(_page(archive.workspace, body), encoding="utf-8")
    partial.rename(out)
