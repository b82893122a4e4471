"""A Slack workspace export built by hand in Slack's documented format ("Export your
workspace data": users.json, channels.json, groups.json, dms.json, mpims.json, one folder per
conversation with a JSON file per day), with every case an import must bring in."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

T0 = 1577872800  # 2020-01-01 10:00 UTC


def ts(seconds: int, micro: int = 0) -> str:
    return f"{T0 + seconds}.{micro:06d}"


USERS = [
    {"id": "U1", "name": "ada", "real_name": "Ada L", "profile": {"display_name": "ada"}},
    {"id": "U2", "name": "bob", "real_name": "Bob", "profile": {"display_name": ""}},
    {"id": "U3", "name": "zoe", "real_name": "Zoë", "profile": {"display_name": "Zoë 日本"}},
]
CHANNELS = [
    {"id": "C1", "name": "general", "created": T0, "creator": "U1", "members": ["U1", "U2", "U3"],
     "topic": {"value": "Company-wide news", "creator": "U1", "last_set": T0},
     "purpose": {"value": "Everything", "creator": "U1", "last_set": T0}},
    {"id": "C2", "name": "random", "created": T0, "creator": "U2", "members": ["U1", "U2"],
     "topic": {"value": "", "creator": "", "last_set": 0},
     "purpose": {"value": "Off topic", "creator": "U2", "last_set": T0}},
]
GROUPS = [{"id": "G1", "name": "secret-plans", "created": T0, "creator": "U1",
           "members": ["U1", "U2"], "topic": {"value": ""}, "purpose": {"value": ""}}]
DMS = [{"id": "D1", "created": T0, "members": ["U1", "U2"]}]
MPIMS = [{"id": "G2", "name": "mpdm-ada--bob--zoe-1", "created": T0,
          "members": ["U1", "U2", "U3"]}]

GENERAL_DAY1 = [
    {"type": "message", "subtype": "channel_join", "user": "U2", "ts": ts(0),
     "text": "<@U2> has joined the channel"},
    {"type": "message", "user": "U1", "ts": ts(60),
     "text": "*bold* _italic_ ~strike~ <@U2> see <#C2|random> and <https://example.org|the site>"
             " <!here> 1 &lt; 2"},
    {"type": "message", "user": "U1", "ts": ts(120), "text": "Thread start",
     "thread_ts": ts(120), "reply_count": 3, "reply_users": ["U2", "U3"],
     "reactions": [{"name": "thumbsup", "users": ["U2", "U3"], "count": 2},
                   {"name": "party_parrot", "users": ["U1"], "count": 1}]},
    {"type": "message", "user": "U2", "ts": ts(180), "text": "first reply",
     "thread_ts": ts(120), "parent_user_id": "U1"},
    {"type": "message", "subtype": "thread_broadcast", "user": "U3", "ts": ts(240),
     "text": "broadcast reply", "thread_ts": ts(120)},
    {"type": "message", "user": "U2", "ts": ts(300), "text": "fixed typo",
     "edited": {"user": "U2", "ts": ts(330)}},
    {"type": "message", "subtype": "huddle_thread", "user": "U1", "ts": ts(360),
     "text": "a kind of message no importer knows"},
    {"type": "message", "user": "U3", "ts": ts(420), "text": "Grüße, 日本語 and emoji 🎉"},
    {"type": "message", "subtype": "bot_message", "bot_id": "B1", "username": "deploybot",
     "ts": ts(480), "text": "deployed v1.2"},
    {"type": "message", "user": "U1", "ts": ts(540), "text": "the plan",
     "files": [{"id": "F1", "name": "plan.pdf", "title": "plan",
                "url_private": "https://files.slack.com/F1/plan.pdf", "size": 10}]},
]
GENERAL_DAY2 = [
    {"type": "message", "user": "U1", "ts": ts(86400), "text": "late reply",
     "thread_ts": ts(120)},
    {"type": "message", "user": "U2", "ts": ts(86460), "text": "day two"},
]
RANDOM_DAY1 = [{"type": "message", "user": "U2", "ts": ts(30), "text": "hello random"}]
SECRET_DAY1 = [
    {"type": "message", "user": "U1", "ts": ts(90), "text": "the *secret* plan",
     "thread_ts": ts(90), "reply_count": 1, "edited": {"user": "U1", "ts": ts(93)},
     "reactions": [{"name": "eyes", "users": ["U2"], "count": 1}]},
    {"type": "message", "user": "U2", "ts": ts(95), "text": "count me in",
     "thread_ts": ts(90), "parent_user_id": "U1"},
]
DM_DAY1 = [
    {"type": "message", "user": "U2", "ts": ts(100), "text": "psst ada",
     "thread_ts": ts(100), "reply_count": 1,
     "reactions": [{"name": "thumbsup", "users": ["U1", "U2"], "count": 2}]},
    {"type": "message", "subtype": "thread_broadcast", "user": "U1", "ts": ts(105),
     "text": "what?", "thread_ts": ts(100)},
]
# What the private channel and the DM show after the import: (author shown, time, text,
# edited, reactions with counts, replies) in the channel, and each thread's (author, time, text)
SECRET_SHOWN = [("ada (from Slack)", ts(90), "the **secret** plan", True, {"👀": 1}, 1)]
SECRET_THREAD = [("ada (from Slack)", ts(90), "the **secret** plan"),
                 ("bob (from Slack)", ts(95), "count me in")]
DM_SHOWN = [("bob (from Slack)", ts(100), "psst ada", False, {"👍": 2}, 1),
            ("ada (from Slack)", ts(105), "what?", False, {}, 0)]
DM_THREAD = [("bob (from Slack)", ts(100), "psst ada"), ("ada (from Slack)", ts(105), "what?")]
PRIVATE_WORDS = ["secret", "count me in", "psst", "what?", "all three of us"]
MPIM_DAY1 = [{"type": "message", "user": "U3", "ts": ts(110), "text": "all three of us"}]

# What #general shows after the import: (author shown, text), oldest first (a reply only in
# its thread is left out; the broadcast one shows).
GENERAL_SHOWN = [
    ("bob (from Slack)", "@bob has joined the channel"),
    ("ada (from Slack)", "**bold** *italic* ~~strike~~ @bob see #random and "
                         "[the site](https://example.org) @here 1 < 2"),
    ("ada (from Slack)", "Thread start"),
    ("Zoë 日本 (from Slack)", "broadcast reply"),
    ("bob (from Slack)", "fixed typo"),
    ("ada (from Slack)", "a kind of message no importer knows"),
    ("Zoë 日本 (from Slack)", "Grüße, 日本語 and emoji 🎉"),
    ("deploybot (from Slack)", "deployed v1.2"),
    ("ada (from Slack)", "the plan\n📎 [plan.pdf](https://files.slack.com/F1/plan.pdf)"),
    ("bob (from Slack)", "day two"),
]
THREAD = ["Thread start", "first reply", "broadcast reply", "late reply"]


def files() -> dict[str, object]:
    return {
        "users.json": USERS, "channels.json": CHANNELS, "groups.json": GROUPS,
        "dms.json": DMS, "mpims.json": MPIMS,
        "general/2020-01-01.json": GENERAL_DAY1, "general/2020-01-02.json": GENERAL_DAY2,
        "random/2020-01-01.json": RANDOM_DAY1, "secret-plans/2020-01-01.json": SECRET_DAY1,
        "D1/2020-01-01.json": DM_DAY1, "mpdm-ada--bob--zoe-1/2020-01-01.json": MPIM_DAY1,
    }


def write_zip(path: Path, content: dict[str, object] | None = None,
              raw: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, value in (files() if content is None else content).items():
            zf.writestr(name, json.dumps(value, ensure_ascii=False, indent=1))
        for name, data in (raw or {}).items():
            zf.writestr(name, data)
    return path


def public_shape(ws, limit: int = 1000) -> dict:
    """Every public channel of an open Workspace as a person sees it: each message's author,
    time, text, edit mark, reactions and replies, and each thread; signatures and ids aside
    (two importers sign differently)."""
    out = {}
    for info in ws.channels():
        shown = ws.read(info.name, limit=limit)
        out[info.name] = (
            [(m.nick, m.ts, m.text, m.edited, sorted((r.emoji, r.count) for r in m.reactions),
              m.replies) for m in shown],
            [[(r.nick, r.ts, r.text) for r in ws.conversation.thread(m.id)]
             for m in shown if m.replies])
    return out
