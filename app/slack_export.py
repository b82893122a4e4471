"""Reading a Slack workspace export (a zip, or the folder it unpacks to), bounded and checked.

The layout (Slack's "Export your workspace data"): users.json, channels.json (public
channels), groups.json (private channels), dms.json and mpims.json (direct messages), and one
folder per conversation (a channel's or group's name, a DM's id, an MPIM's name) holding one
JSON file per day (YYYY-MM-DD.json): a list of messages. Nothing is trusted: a zip's entries
are bounded in number, size and compression ratio before anything is read (a zip bomb is
refused whole), and `check()` reads every day file (and every file a message attaches that the
export holds) once before an import writes anything, so a truncated zip or a malformed file
changes nothing.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import WorkspaceError

MAX_ENTRIES = 1_000_000
MAX_ENTRY_BYTES = 256 * 1024 * 1024  # one JSON file, uncompressed
MAX_TOTAL_BYTES = 16 * 1024 ** 3  # everything, uncompressed
MAX_RATIO = 200  # uncompressed / compressed, for an entry over RATIO_FLOOR
RATIO_FLOOR = 1024 * 1024
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}\.json")
_TS = re.compile(r"\d{1,12}\.\d{1,9}")
KINDS = (("channels.json", "public"), ("groups.json", "private"), ("mpims.json", "mpim"),
         ("dms.json", "dm"))


class ExportError(WorkspaceError):
    """The export cannot be read as a Slack export; nothing was imported."""


@dataclass(frozen=True)
class Conversation:
    """One channel, private channel or direct message of the export."""

    id: str
    name: str  # the channel's name; for a DM, its id
    kind: str  # public | private | mpim | dm
    folder: str
    members: tuple[str, ...]
    topic: str
    purpose: str
    days: tuple[str, ...]  # day files in the folder, in date order


def _ts_order(msg: dict) -> tuple[float, str]:
    return float(msg["ts"]), msg["ts"]


def _ts_ok(value: Any) -> bool:
    return isinstance(value, str) and _TS.fullmatch(value) is not None


def _check_message(msg: Any) -> str | None:
    """Why a message of a day file is malformed, or None."""
    if not isinstance(msg, dict):
        return "a message is not a JSON object"
    if not _ts_ok(msg.get("ts")):
        return "a message has no valid ts"
    for field in ("text", "user", "subtype", "username", "bot_id"):
        if field in msg and msg[field] is not None and not isinstance(msg[field], str):
            return f"a message's {field} is not text"
    if "thread_ts" in msg and not _ts_ok(msg["thread_ts"]):
        return "a message's thread_ts is not a Slack ts"
    reactions = msg.get("reactions", [])
    if not isinstance(reactions, list) or not all(
            isinstance(r, dict) and isinstance(r.get("name"), str)
            and isinstance(r.get("users", []), list)
            and all(isinstance(u, str) for u in r.get("users", []))
            and isinstance(r.get("count", 0), int) for r in reactions):
        return "a message's reactions are malformed"
    edited = msg.get("edited")
    if edited is not None and not (isinstance(edited, dict) and _ts_ok(edited.get("ts"))):
        return "a message's edited mark is malformed"
    files = msg.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
        return "a message's files are malformed"
    return None


class SlackExport:
    """An export opened for reading: a zip file or a folder."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._zip: zipfile.ZipFile | None = None
        self._checked = False  # check() has read every entry and found nothing wrong
        if self.path.is_dir():
            # A symbolic link is never read: an export unzipped with links in it must not
            # attach the importer's own files (~/.ssh/id_rsa) to a channel.
            self._names = {p.relative_to(self.path).as_posix() for p in self.path.rglob("*")
                           if p.is_file() and not p.is_symlink()}
        elif self.path.is_file():
            try:
                self._zip = zipfile.ZipFile(self.path)
                infos = self._zip.infolist()
            except (zipfile.BadZipFile, OSError, ValueError):
                raise ExportError(f"{self.path.name} is not a complete zip file (truncated or "
                                  "damaged?); nothing was imported") from None
            self._bound(infos)
            self._names = {i.filename for i in infos if not i.is_dir()}
        else:
            raise ExportError(f"no file or folder {self.path}")
        if "channels.json" not in self._names and "users.json" not in self._names:
            raise ExportError(f"{self.path.name} is not a Slack export (no channels.json or "
                              "users.json in it); nothing was imported")

    def _bound(self, infos: list[zipfile.ZipInfo]) -> None:
        if len(infos) > MAX_ENTRIES:
            raise ExportError(f"{self.path.name} holds {len(infos)} files, more than "
                              f"{MAX_ENTRIES}; nothing was imported")
        total = 0
        for info in infos:
            total += info.file_size
            big = info.file_size > RATIO_FLOOR
            if info.file_size > MAX_ENTRY_BYTES or (
                    big and info.file_size > MAX_RATIO * max(1, info.compress_size)):
                raise ExportError(f"{self.path.name}: {info.filename[:80]} would unpack to "
                                  f"{info.file_size} bytes (a zip bomb?); nothing was imported")
        if total > MAX_TOTAL_BYTES:
            raise ExportError(f"{self.path.name} would unpack to {total} bytes, more than "
                              f"{MAX_TOTAL_BYTES}; nothing was imported")

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()

    def __enter__(self) -> SlackExport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Reading --------------------------------------------------------------------------------

    def has(self, name: str) -> bool:
        return name in self._names

    @property
    def zipped(self) -> bool:
        return self._zip is not None

    def fingerprint(self) -> dict[str, tuple[int, int]] | None:
        """A checked zip's entries: name -> (CRC-32, size); None before `check()` passed."""
        if self._zip is None or not self._checked:
            return None
        return {i.filename: (i.CRC, i.file_size) for i in self._zip.infolist()}

    def checked_as(self, fingerprint: dict[str, tuple[int, int]] | None) -> None:
        """This zip is the one `fingerprint` was taken of, checked whole in another process:
        when every entry's CRC and size are the same, its day files are not checked message
        by message again (reading an entry checks its bytes against its CRC)."""
        if self._zip is not None and fingerprint is not None and fingerprint == {
                i.filename: (i.CRC, i.file_size) for i in self._zip.infolist()}:
            self._checked = True

    def holds_files(self) -> bool:
        """Whether the export holds the bytes of any file (see `file_entry`)."""
        return any(name.startswith("__uploads/") or "/attachments/" in name
                   for name in self._names)

    def read(self, name: str) -> bytes:
        try:
            if self._zip is not None:
                with self._zip.open(name) as f:
                    data = f.read(MAX_ENTRY_BYTES + 1)
            else:
                fd = os.open(self.path / name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
                with open(fd, "rb") as f:  # replaced by a link since it was listed: refused
                    data = f.read(MAX_ENTRY_BYTES + 1)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, KeyError) as exc:
            raise ExportError(f"{name[:80]} cannot be read ({exc}); nothing was imported") \
                from None
        if len(data) > MAX_ENTRY_BYTES:
            raise ExportError(f"{name[:80]} is over {MAX_ENTRY_BYTES} bytes; nothing was imported")
        return data

    def json(self, name: str) -> Any:
        try:
            return json.loads(self.read(name))
        except (ValueError, RecursionError) as exc:
            raise ExportError(f"{name[:80]} is not valid JSON ({str(exc)[:80]}); nothing was "
                              "imported") from None

    def _list(self, name: str) -> list[dict]:
        if not self.has(name):
            return []
        value = self.json(name)
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise ExportError(f"{name} is not a list of objects; nothing was imported")
        return value

    def users(self) -> dict[str, str]:
        """Slack user id -> the name people saw (display name, else name, else real name)."""
        out = {}
        for user in self._list("users.json"):
            uid = user.get("id")
            got = user.get("profile")
            profile: dict = got if isinstance(got, dict) else {}
            names = [profile.get("display_name"), user.get("name"), user.get("real_name"),
                     profile.get("real_name")]
            name = next((n for n in names if isinstance(n, str) and n.strip()), None)
            if isinstance(uid, str) and name:
                out[uid] = name.strip()
        return out

    def conversations(self) -> list[Conversation]:
        out = []
        by_folder: dict[str, list[str]] = {}
        for name in self._names:
            folder, _, day = name.rpartition("/")
            if folder and "/" not in folder and _DAY.fullmatch(day):
                by_folder.setdefault(folder, []).append(day)
        for listing, kind in KINDS:
            for conv in self._list(listing):
                cid, named = conv.get("id"), conv.get("name")
                if not isinstance(cid, str):
                    raise ExportError(f"{listing}: a conversation has no id; nothing was imported")
                name = named if isinstance(named, str) else cid
                folder = name if name in by_folder else cid
                members = conv.get("members") or []
                if not isinstance(members, list):
                    members = []

                def value(field: str, conv: dict = conv) -> str:
                    got = conv.get(field)
                    text = got.get("value") if isinstance(got, dict) else None
                    return text if isinstance(text, str) else ""

                out.append(Conversation(cid, name, kind,
                                        folder, tuple(m for m in members if isinstance(m, str)),
                                        value("topic"), value("purpose"),
                                        tuple(sorted(by_folder.get(folder, ())))))
        return out

    def day(self, conv: Conversation, day: str, *, checked: bool = False) -> list[dict]:
        """One day file's messages, checked, in ts order. With `checked`, a zip's entry that
        `check()` has read and checked whole is not checked message by message again: the
        zip's CRC of it, read when the zip was opened, proves it is the same bytes."""
        name = f"{conv.folder}/{day}"
        value = self.json(name)
        if not isinstance(value, list):
            raise ExportError(f"{name} is not a list of messages; nothing was imported")
        if not (checked and self._checked and self._zip is not None):
            for n, msg in enumerate(value):
                why = _check_message(msg)
                if why is not None:
                    raise ExportError(f"{name}: message {n + 1}: {why}; nothing was imported")
        return sorted(value, key=_ts_order)

    def messages(self, conv: Conversation, *, checked: bool = False) -> Iterator[dict]:
        for day in conv.days:
            yield from self.day(conv, day, checked=checked)

    def file_entry(self, conv: Conversation, file: dict) -> str | None:
        """Where the export holds the bytes of a message's file, if it does: Slack's exports
        hold only addresses, but tools that export with files put them at
        `__uploads/ID/NAME` or `FOLDER/attachments/ID-NAME`."""
        fid, name = file.get("id"), file.get("name")
        if not isinstance(fid, str) or not isinstance(name, str) or "/" in fid + name \
                or name in ("", ".", ".."):
            return None
        for entry in (f"__uploads/{fid}/{name}", f"{conv.folder}/attachments/{fid}-{name}"):
            if entry in self._names:
                return entry
        return None

    def extract(self, entry: str, out: Path) -> Path:
        """Copy one entry to the file `out` (bounded as every entry is)."""
        out.write_bytes(self.read(entry))
        return out

    def check(self) -> int:
        """Read every file once (a damaged entry or a malformed day raises ExportError);
        returns how many messages the export holds."""
        self.users()
        count = 0
        for conv in self.conversations():
            for day in conv.days:
                messages = self.day(conv, day)
                count += len(messages)
                for msg in messages:
                    for file in msg.get("files", []):
                        entry = self.file_entry(conv, file)
                        if entry is not None:
                            self.read(entry)  # a damaged file fails here, before any write
        self._checked = True
        return count
