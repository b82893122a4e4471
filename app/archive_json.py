"""`hearth archive --format json`: the archive in Slack's export layout (users.json,
channels.json, groups.json for private channels, dms.json for direct messages (their folders
named by their ids, as Slack's are), one folder per channel with a JSON file per
day), so Mattermost's and Zulip's Slack importers read it, and so does `hearth import-slack`.
Text is written back as Slack markup (app/slack_markup.py); imported messages keep their
Slack user ids and ts, Hearth's own get ids of their own ("H" + key digits; "C"/"G" + stream
digits for channels)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from .archive import Archive, ArchivedChannel, ArchivedMessage
from .slack_markup import to_slack


def slack_ts(ms: int) -> str:
    return f"{ms // 1000}.{ms % 1000:03d}000"


def reaction_name(emoji: str) -> str:
    """An emoji as Slack names a reaction ("👍" -> "+1"'s alias "thumbsup")."""
    import emoji as emoji_package

    if emoji.startswith(":") and emoji.endswith(":") and len(emoji) > 2:
        return emoji[1:-1]
    named = emoji_package.demojize(emoji, language="alias")
    return named[1:-1] if named.startswith(":") and named.endswith(":") else named


class SlackWriter:
    def __init__(self, archive: Archive):
        self.archive = archive
        self.names = {name: uid for uid, name in sorted(archive.users.items(), reverse=True)}
        self.channel_ids = {c.name: c.id for c in archive.channels}
        self.ts: dict[str, str] = {}  # message id -> its Slack ts

    def _ts(self, m: ArchivedMessage) -> str:
        ts = m.slack_ts or slack_ts(m.ts)
        self.ts[m.id] = ts
        return ts

    def message(self, m: ArchivedMessage) -> dict:
        out: dict = {"type": "message", "user": m.user, "ts": self._ts(m),
                     "text": to_slack(m.text, self.names, self.channel_ids),
                     "user_profile": {"name": m.name, "display_name": m.name}}
        subtype = m.subtype or ("thread_broadcast" if m.broadcast else "")
        if subtype:
            out["subtype"] = subtype
        if subtype == "bot_message":
            out["username"] = m.name
            out["bot_id"] = m.user
        if m.thread is not None and m.thread in self.ts:
            out["thread_ts"] = self.ts[m.thread]
        elif m.replies:
            out["thread_ts"] = out["ts"]
            out["reply_count"] = m.replies
        if m.edited:
            out["edited"] = {"user": m.user, "ts": slack_ts(m.edited)}
        if m.reactions:
            out["reactions"] = [{"name": reaction_name(r.emoji), "users": list(r.by),
                                 "count": r.count} for r in m.reactions]
        if m.files:
            out["files"] = [{"id": f["list"][:12], "name": f["name"], "title": f["name"],
                             "mimetype": f["type"], "size": f["size"]} for f in m.files]
        return out

    def channel(self, c: ArchivedChannel) -> dict:
        return {"id": c.id, "name": c.name, "created": (c.messages[0].ts // 1000
                                                        if c.messages else 0),
                "creator": c.members[0] if c.members else "", "is_archived": False,
                "members": c.members, "topic": {"value": c.topic, "creator": "", "last_set": 0},
                "purpose": {"value": "", "creator": "", "last_set": 0}}

    def write(self, root: Path) -> None:
        a = self.archive
        users = [{"id": uid, "name": name, "real_name": name, "deleted": False,
                  "profile": {"display_name": name, "real_name": name}}
                 for uid, name in sorted(a.users.items())]
        _dump(root / "users.json", users)
        _dump(root / "channels.json", [self.channel(c) for c in a.channels if not c.private])
        _dump(root / "groups.json", [self.channel(c) for c in a.channels
                                      if c.private and not c.dm])
        _dump(root / "dms.json", [{"id": c.id, "created": self.channel(c)["created"],
                                   "members": c.members} for c in a.channels if c.dm])
        _dump(root / "mpims.json", [])  # Hearth's direct messages are between two people
        for c in a.channels:
            days: dict[str, list[dict]] = {}
            for m in sorted(c.messages, key=lambda m: (m.ts, m.id)):
                day = datetime.fromtimestamp(m.ts / 1000, UTC).strftime("%Y-%m-%d")
                days.setdefault(day, []).append(self.message(m))
            folder = c.name if _safe_folder(c.name) and not c.dm else c.id
            for day, messages in days.items():
                _dump(root / folder / f"{day}.json", messages)


def _safe_folder(name: str) -> bool:
    return not (set(name) & set("/\\:\0")) and name not in (".", "..") and \
        not name.startswith(".") and not name.endswith(".json")


def _dump(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1), encoding="utf-8")


def write_json(archive: Archive, out: Path) -> None:
    """Write the Slack layout to `out`: a zip when its name ends in .zip, else a folder."""
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".hearth-archive-") as tmp:
        root = Path(tmp) / "archive"
        SlackWriter(archive).write(root)
        if out.suffix.lower() == ".zip":
            made = shutil.make_archive(str(Path(tmp) / "archive"), "zip", root)
            os.link(made, out)
        else:
            root.rename(out)
