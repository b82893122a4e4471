"""The SQLite replica: one file per workspace, one ingest path, the chat views."""

from ._membership import KINDS as MEMBERSHIP_KINDS
from ._verify import Checking
from ._verify import start as check_ahead
from ._verify import start_helper as start_signature_helper
from .errors import NotFound, SchemaError, StorageError
from .records import (
    Attachment,
    ChannelInfo,
    ChannelState,
    IngestResult,
    Kept,
    Member,
    Message,
    MessageVersion,
    Reaction,
    StateEvent,
    Status,
)
from .replica import Replica

__all__ = [
    "MEMBERSHIP_KINDS", "Attachment", "Checking", "check_ahead", "ChannelInfo", "ChannelState", "IngestResult", "Kept", "Member", "Message",
    "MessageVersion", "NotFound",
    "Reaction",
    "Replica",
    "SchemaError", "StateEvent", "Status", "StorageError", "start_signature_helper",
]
