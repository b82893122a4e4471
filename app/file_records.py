"""The records of attached files (app/attachments.py): a file of a message, one ready to
decrypt, where an attach posts, files sealed for a message, a file to fetch, and what the
chunks take here. Frozen values, handed to any thread."""

from __future__ import annotations

from dataclasses import dataclass

from storage import Attachment


@dataclass(frozen=True, slots=True)
class FileRef:
    """File `index` of a message I can read: its descriptor and the key its chunks open with."""

    message: bytes
    index: int
    attachment: Attachment
    key: bytes

    @property
    def list(self) -> bytes:
        return self.attachment.list


@dataclass(frozen=True, slots=True)
class ReadyFile:
    """A file complete here, ready to decrypt from any thread: its reference and chunk ids."""

    ref: FileRef
    ids: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class AttachTarget:
    """Where an attach posts (checked on the Node's thread before the files are sealed)."""

    channel: str | bytes  # a public channel's name, or a private channel's id
    stream: bytes | None  # a public channel's stream; None for a private channel
    epoch: int  # the private channel's key epoch the files are sealed under
    scope: bytes  # what the files' keys are derived with


@dataclass(frozen=True, slots=True)
class SealedFiles:
    """Files made into chunks for one message: their descriptors and the chunks written new
    (those to remove when the message is not posted)."""

    descriptors: tuple[dict, ...]
    new: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class Wanted:
    """A file to fetch: its list chunk's id and size."""

    list: bytes
    size: int


@dataclass(frozen=True, slots=True)
class StorageUsage:
    """The bytes attached files' chunks take here, and the quota for others' files."""

    total: int
    mine: int  # my uploads (always kept)
    pinned: int  # pinned files of others (kept)
    others: int  # what eviction may free
    quota: int
    files: int  # files with chunks here
