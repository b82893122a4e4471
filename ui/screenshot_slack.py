"""The Slack history `hearth screenshot` imports for slack-import.png: a small export in Slack's
layout (a channel with a topic, markup, a thread, reactions, an edit and a bot), brought in by
the same library call as `hearth import-slack`, on the Node's thread."""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path

from app.node import Node
from app.slack_import import import_slack

CHANNEL = "launch-crew"
USERS = [{"id": "U01", "name": "ada", "profile": {"display_name": "ada"}},
         {"id": "U02", "name": "dmitri", "profile": {"display_name": "dmitri"}},
         {"id": "U03", "name": "noor", "profile": {"display_name": "Noor"}}]


def _export(path: Path, start: float) -> Path:
    def ts(minutes: int) -> str:
        return f"{int(start) + minutes * 60}.000100"

    day = time.strftime("%Y-%m-%d", time.gmtime(start))
    messages = [
        {"type": "message", "user": "U02", "ts": ts(0),
         "text": "Moving the launch crew over from Slack :wave: the plan is in <#C1|launch-crew>"},
        {"type": "message", "user": "U03", "ts": ts(3), "thread_ts": ts(3), "reply_count": 2,
         "text": "*Checklist* for Friday: _press kit_, ~old logo~ new logo, "
                 "<https://example.org/launch|the landing page>",
         "reactions": [{"name": "thumbsup", "users": ["U01", "U02"], "count": 2},
                       {"name": "rocket", "users": ["U02"], "count": 1}]},
        {"type": "message", "user": "U01", "ts": ts(5), "thread_ts": ts(3),
         "text": "I'll take the press kit"},
        {"type": "message", "user": "U02", "ts": ts(7), "thread_ts": ts(3),
         "text": "and I the landing page"},
        {"type": "message", "user": "U01", "ts": ts(9), "text": "<!here> dry run at 3pm",
         "edited": {"user": "U01", "ts": ts(10)}},
        {"type": "message", "subtype": "bot_message", "bot_id": "B1", "username": "deploybot",
         "ts": ts(12), "text": "staging deployed: build 1.4.2"},
    ]
    channels = [{"id": "C1", "name": CHANNEL, "created": int(start), "members": ["U01", "U02"],
                 "topic": {"value": "Friday's launch, brought over from Slack"},
                 "purpose": {"value": ""}}]
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("users.json", json.dumps(USERS))
        zf.writestr("channels.json", json.dumps(channels))
        zf.writestr(f"{CHANNEL}/{day}.json", json.dumps(messages))
    return path


def import_demo(node: Node, root: Path, timeout: float = 60.0) -> str:
    """Import the demonstration export into `node`'s workspace; returns the channel's name."""
    export = _export(root / "slack-export.zip", time.time() - 3 * 3600)
    node.facade.run(lambda ws: import_slack(ws, export)).result(timeout)
    return CHANNEL
