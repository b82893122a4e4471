"""The analytics event contract: schema version, event types, buckets, and validation.

Every event is one JSON object checked against `analytics/schema/events-v1.json`. The recorder,
the collector and the pipeline all read the contract from here.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_VERSION = 1
SCHEMA_FILE = "events-v1.json"
EVENT_TYPES = (
    "app_started", "message_sent", "channel_joined", "doc_commit", "doc_fork", "doc_merge",
    "sync_session", "conflict", "convergence", "rejection",
)
CONFLICT_KINDS = ("concurrent_heads", "lww_overwrite", "concurrent_doc_edit")
LENGTH_BUCKETS = (0, 16, 64, 256, 1024, 4096)
# The report's histogram of heads per concurrent_heads conflict; the last bucket is "50+".
HEAD_BUCKETS = (1, 2, 3, 5, 7, 10, 15, 20, 50)


# A pid is the hash of a per-day deletion token that only its install knows (the recorder keeps
# it): a deletion request carries tokens, and the collector hashes them back to the pids to
# forget, so it never needs the install's secret and nobody else can delete those pids.
TOKEN_HEX = 64  # 32 bytes
PID_HEX = 32
_PID_LABEL = b"hearth-analytics-pid\0"
_TOKEN = re.compile(r"[0-9a-f]{64}")
_PID = re.compile(r"[0-9a-f]{32}")


class EventError(ValueError):
    """An event that does not follow the schema; the message says which rule it breaks."""


@cache
def schema() -> dict:
    return json.loads(resources.files("analytics.schema").joinpath(SCHEMA_FILE).read_text())


@cache
def _validators() -> dict[str, Any]:
    import jsonschema

    whole = schema()
    base = jsonschema.Draft202012Validator({k: whole[k] for k in ("type", "required", "properties")}
                                           | {"$defs": whole["$defs"]})
    by_type = {name: jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": whole["$defs"]})
               for name in EVENT_TYPES}
    return {"": base} | by_type


def validate(event: Any) -> dict:
    """Return `event` if it follows the schema, else raise EventError with a one-line reason."""
    if not isinstance(event, dict):
        raise EventError("an event must be a JSON object")
    validators = _validators()
    name = event.get("event")
    typed = validators.get(name) if isinstance(name, str) else None  # a list is not hashable
    for validator in (validators[""], typed):
        error = next(iter(validator.iter_errors(event)), None) if validator else None
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path)
            raise EventError(f"{where or 'event'}: {error.message}"[:300])
    return event


def is_token(value: object) -> bool:
    return isinstance(value, str) and _TOKEN.fullmatch(value) is not None


def is_pid(value: object) -> bool:
    return isinstance(value, str) and _PID.fullmatch(value) is not None


def pid_of_token(token: str) -> str:
    """The pid a deletion token stands for (64 lowercase hex digits in, 32 out)."""
    if not is_token(token):
        raise ValueError("a deletion token is 64 lowercase hex digits")
    return hashlib.sha256(_PID_LABEL + bytes.fromhex(token)).hexdigest()[:PID_HEX]


def hour(when: datetime | float) -> str:
    """UTC ISO-8601 truncated to the hour: the only time an event carries."""
    if not isinstance(when, datetime):
        when = datetime.fromtimestamp(when, UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:00:00Z")


def length_bucket(n: int) -> int:
    """The largest LENGTH_BUCKETS bound not above n."""
    return max(b for b in LENGTH_BUCKETS if b <= max(n, 0))


def pow2(n: int) -> int:
    """0, or the largest power of two not above n: sizes without their exact value."""
    return 0 if n <= 0 else 1 << (int(n).bit_length() - 1)


def head_bucket(heads: int) -> str:
    """The report's label for a head count: '1', '2', '3', '5', ..., '50+'."""
    label = "1"
    for b in HEAD_BUCKETS:
        if heads >= b:
            label = f"{b}+" if b == HEAD_BUCKETS[-1] else str(b)
    return label
