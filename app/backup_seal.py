"""A backup sealed whole under its passphrase (format 3, app/backup.py): the backup's zip goes
through libsodium's secretstream (XChaCha20-Poly1305) as it is written, under a key stretched
once from the passphrase by argon2id.

The file is a header in the clear, then the stream:
- header (HEADER.size bytes): MAGIC, the format's version, argon2id's salt and costs, the
  secretstream's header, `check` (16 bytes of BLAKE2b keyed by the stretched key over what
  precedes it: a passphrase that does not open the backup is told apart from damage before a
  byte is decrypted) and `digest` (16 bytes of plain BLAKE2b over all of the above: a damaged
  header is named as such). Nothing about the workspace: no name, no member, no count;
- then messages of PART bytes of the zip each (PART + ABYTES on disk), the last shorter (or
  empty) and tagged FINAL; the first message's associated data is the whole header. The stream
  numbers its messages and the last is marked, so a flipped bit, a message moved, dropped or
  spliced from another backup, a cut file and bytes appended after its end are all refused.

Two keys come from the one stretch (BLAKE2b keyed by it, each with its own purpose): the
stream's, and the one sealing `keys.sealed` inside the zip (a SecretBox). The inner seal is
why a decrypted zip left by a restore that was killed outright does not hold the identity in
the clear; one stretch rather than the identity export's own (argon2id each) is why a backup
and a restore each cost one stretch (~0.7 s here), not three.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import nacl.exceptions
import nacl.secret
from nacl.bindings import (
    crypto_secretstream_xchacha20poly1305_ABYTES as ABYTES,
)
from nacl.bindings import (
    crypto_secretstream_xchacha20poly1305_HEADERBYTES as STREAM_HEADER,
)
from nacl.bindings import (
    crypto_secretstream_xchacha20poly1305_init_pull,
    crypto_secretstream_xchacha20poly1305_init_push,
    crypto_secretstream_xchacha20poly1305_pull,
    crypto_secretstream_xchacha20poly1305_push,
    crypto_secretstream_xchacha20poly1305_state,
)
from nacl.bindings import (
    crypto_secretstream_xchacha20poly1305_TAG_FINAL as TAG_FINAL,
)
from nacl.bindings import (
    crypto_secretstream_xchacha20poly1305_TAG_MESSAGE as TAG_MESSAGE,
)

from core import passphrase as stretching

from .errors import WorkspaceError

MAGIC = b"HEARTH-BACKUP\x00\x00\x00"  # 16 bytes
VERSION = 3
PART = 1 << 20  # the zip's bytes in one message
_FIELDS = struct.Struct(f">16sH16sIQ{STREAM_HEADER}s")  # magic, version, salt, ops, mem, stream
HEADER = struct.Struct(f">{_FIELDS.size}s16s16s")  # the fields, check, digest
WRONG_PASSPHRASE = "the passphrase does not open this backup"


@dataclass(frozen=True)
class Keys:
    stream: bytes
    inner: bytes  # seals keys.sealed inside the zip


@dataclass(frozen=True)
class Header:
    raw: bytes
    salt: bytes
    ops: int
    mem: int
    stream: bytes


def _subkey(key: bytes, purpose: bytes) -> bytes:
    return hashlib.blake2b(purpose, key=key, digest_size=32, person=b"hearth-backup-3").digest()


def _keys(passphrase: str, salt: bytes, ops: int, mem: int) -> tuple[Keys, bytes]:
    """The two keys and the header's check key, from one argon2id stretch."""
    key = stretching.stretch(passphrase, salt, ops, mem)
    return Keys(_subkey(key, b"stream"), _subkey(key, b"keys")), _subkey(key, b"check")


def _check(key: bytes, fields: bytes) -> bytes:
    return hashlib.blake2b(fields, key=key, digest_size=16).digest()


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class SealingWriter:
    """A write-only file object (write, flush, tell) that seals what is written into `raw`:
    zipfile writes to it as to an unseekable stream (with data descriptors), so the zip is
    produced and sealed in one pass, holding at most PART bytes. `close()` writes the FINAL
    message; until then the file is not a backup."""

    def __init__(self, raw: BinaryIO, passphrase: str, *, ops: int = stretching.OPS,
                 mem: int = stretching.MEM):
        if not passphrase:
            raise WorkspaceError("a backup needs a passphrase: it holds your keys")
        salt = stretching.new_salt()
        self.keys, check_key = _keys(passphrase, salt, ops, mem)
        self._state = crypto_secretstream_xchacha20poly1305_state()
        stream = crypto_secretstream_xchacha20poly1305_init_push(self._state, self.keys.stream)
        fields = _FIELDS.pack(MAGIC, VERSION, salt, ops, mem, stream)
        check = _check(check_key, fields)
        header = HEADER.pack(fields, check, _digest(fields + check))
        raw.write(header)
        self._raw = raw
        self._ad: bytes | None = header  # the first message's associated data
        self._part = bytearray(PART)  # the part being filled, up to `_filled`
        self._filled = 0
        self._written = 0
        self.closed = False

    def _push(self, data: bytes, tag: int) -> None:
        self._raw.write(crypto_secretstream_xchacha20poly1305_push(self._state, data,
                                                                    self._ad, tag))
        self._ad = None

    def write(self, data: bytes) -> int:  # zipfile passes bytes and memoryviews
        if self.closed:
            raise ValueError("write to a closed backup")
        view = memoryview(data).cast("B")
        size, at = len(view), 0
        self._written += size
        while at < size:
            if self._filled == 0 and size - at >= PART:  # a whole part straight from `data`
                self._push(bytes(view[at:at + PART]), TAG_MESSAGE)
                at += PART
                continue
            take = min(PART - self._filled, size - at)
            self._part[self._filled:self._filled + take] = view[at:at + take]
            self._filled += take
            at += take
            if self._filled == PART:
                self._push(bytes(self._part), TAG_MESSAGE)
                self._filled = 0
        return size

    def tell(self) -> int:
        return self._written

    def flush(self) -> None:
        """Whole messages are already in `raw`; the rest waits for PART bytes or `close`."""
        self._raw.flush()

    def close(self) -> None:
        if not self.closed:
            self._push(bytes(self._part[:self._filled]), TAG_FINAL)
            self._filled = 0
            self._raw.flush()
            self.closed = True


def read_header(path: Path) -> Header | None:
    """The header of the sealed backup at `path`; None when the file does not start as one
    (a backup of format 1 or 2 is a plain zip); WorkspaceError when it starts as one but its
    header is damaged or of a version this one does not read."""
    try:
        with open(path, "rb") as f:
            raw = f.read(HEADER.size)
    except OSError as exc:
        raise WorkspaceError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not raw.startswith(MAGIC):
        return None
    if len(raw) < HEADER.size:
        raise WorkspaceError(f"{path} is a Hearth backup cut short (in its header)")
    fields, check, digest = HEADER.unpack(raw)
    if not hmac.compare_digest(_digest(fields + check), digest):
        raise WorkspaceError(f"{path} is a damaged Hearth backup (its header)")
    _, version, salt, ops, mem, stream = _FIELDS.unpack(fields)
    if version != VERSION:
        raise WorkspaceError(f"{path} is a Hearth backup of version {version}, which this "
                             "Hearth does not read")
    if not stretching.costs_ok(ops, mem):
        raise WorkspaceError(f"{path} is a damaged Hearth backup (its header asks for "
                             f"argon2id costs out of bounds: {ops}, {mem})")
    return Header(raw, salt, ops, mem, stream)


def plain_size(path: Path) -> int:
    """The size of the zip the sealed backup at `path` holds, from the file's size (at most
    that: a damaged file is refused while unsealing)."""
    body = Path(path).stat().st_size - HEADER.size
    parts = max(1, -(-body // (PART + ABYTES)))
    return max(0, body - parts * ABYTES)


def open_keys(header: Header, passphrase: str) -> Keys:
    """The keys `passphrase` stretches to, once the header's check says they open it."""
    keys, check_key = _keys(passphrase, header.salt, header.ops, header.mem)
    fields, check, _ = HEADER.unpack(header.raw)
    if not hmac.compare_digest(_check(check_key, fields), check):
        raise WorkspaceError(WRONG_PASSPHRASE)
    return keys


def unseal(path: Path, header: Header, keys: Keys, out: BinaryIO) -> int:
    """Decrypt the sealed backup at `path` into `out`, message by message; how many bytes.
    WorkspaceError naming what is wrong: a damaged part (the file's last, read short, may also
    be cut or have bytes appended: they fail its check the same way), a file that ends after
    a whole part that is not the last (the writer's last part is always short: a FINAL part
    read whole with bytes after it is a file made otherwise), bytes after the FINAL one (the
    caller throws `out` away)."""
    state = crypto_secretstream_xchacha20poly1305_state()
    crypto_secretstream_xchacha20poly1305_init_pull(state, header.stream, keys.stream)
    ad: bytes | None = header.raw
    total = 0
    with open(path, "rb") as f:
        f.seek(HEADER.size)
        n = 0
        while True:
            n += 1
            sealed = f.read(PART + ABYTES)
            if not sealed:
                raise WorkspaceError("the backup is cut short (it ends before its last part)")
            try:
                data, tag = crypto_secretstream_xchacha20poly1305_pull(state, sealed, ad)
            except (nacl.exceptions.CryptoError, ValueError):
                why = ": changed, cut short or added to" if len(sealed) < PART + ABYTES else ""
                raise WorkspaceError(f"the backup is damaged (its part {n} fails its "
                                     f"check{why})") from None
            ad = None
            out.write(data)
            total += len(data)
            if tag == TAG_FINAL:
                if f.read(1):
                    raise WorkspaceError("the backup is damaged (it has bytes after its end)")
                return total
            if len(sealed) < PART + ABYTES:
                raise WorkspaceError("the backup is cut short (it ends before its last part)")


def seal_keys(keys: Keys, data: bytes) -> bytes:
    return bytes(nacl.secret.SecretBox(keys.inner).encrypt(data))


def open_inner_keys(keys: Keys, sealed: bytes) -> bytes:
    try:
        return nacl.secret.SecretBox(keys.inner).decrypt(sealed)
    except (nacl.exceptions.CryptoError, ValueError):
        raise WorkspaceError("the backup's keys are damaged") from None
