"""Files attached to messages (docs/ARCHITECTURE.md "Attachments"): how a file becomes chunks,
how the message names them, and how the chunks become the file again.

A file is cut into pieces of CHUNK_SIZE bytes (the last one shorter). Each piece is encrypted
with ChaCha20-Poly1305 (IETF) under the file's key, with the piece's index as the nonce, and the
ciphertext is the chunk: its id is the BLAKE2b-256 of those bytes (`chunk_id`), so anyone may
check a chunk against its id without reading it. The file's key is derived from the file's own
BLAKE2b digest and a scope secret (`file_key`): the same file attached twice in one scope (the
workspace's public channels, or one private channel's key) gives the same chunks, which are
then stored once; a different scope gives unrelated chunks. Since each key encrypts only one
content, a nonce never repeats under a key with different plaintext.

The list of a file's chunk ids, concatenated, is itself a chunk (not encrypted: ids say nothing
of the content), at most MAX_LIST bytes, whose id the message carries (`Descriptor.list`),
together with the key: whoever reads the message reads the file, and nobody else does. Chunks
travel outside the reconciled object set (sync/_files.py); the message is an object like any
other."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import nacl.bindings
import nacl.exceptions

ID_SIZE = 32
CHUNK_SIZE = 256 * 1024  # plaintext bytes per chunk; the ciphertext is TAG_SIZE longer
TAG_SIZE = 16
MAX_FILE_SIZE = 4 << 30
MAX_CHUNKS = -(-MAX_FILE_SIZE // CHUNK_SIZE)
MAX_LIST = MAX_CHUNKS * ID_SIZE  # 512 KiB: a 4 GiB file's list
MAX_CHUNK = max(CHUNK_SIZE + TAG_SIZE, MAX_LIST)  # the largest chunk of either sort
_PERSON_CHUNK = b"hearth-chunk"
_PERSON_KEY = b"hearth-file-key"
_PERSON_FILE = b"hearth-file"


class AttachmentError(ValueError):
    """A file, a list or a chunk that is not what it claims to be."""


def chunk_id(data: bytes | memoryview) -> bytes:
    """The id of a chunk: BLAKE2b-256 of its bytes, personalised so no object id collides."""
    return hashlib.blake2b(data, digest_size=ID_SIZE, person=_PERSON_CHUNK).digest()


def file_digest(stream: BinaryIO) -> tuple[bytes, int]:
    """The BLAKE2b-256 of a file's bytes (read from its current position) and its size."""
    h = hashlib.blake2b(digest_size=ID_SIZE, person=_PERSON_FILE)
    size = 0
    while piece := stream.read(CHUNK_SIZE * 4):
        h.update(piece)
        size += len(piece)
    return h.digest(), size


def file_key(digest: bytes, scope: bytes) -> bytes:
    """The key a file's chunks are encrypted under: its digest, keyed by the scope secret."""
    return hashlib.blake2b(digest, key=scope[:64], digest_size=32, person=_PERSON_KEY).digest()


def _nonce(index: int) -> bytes:
    return index.to_bytes(12, "little")


def seal_piece(key: bytes, index: int, piece: bytes) -> bytes:
    return nacl.bindings.crypto_aead_chacha20poly1305_ietf_encrypt(piece, None, _nonce(index),
                                                                   key)


def open_chunk(key: bytes, index: int, chunk: bytes) -> bytes:
    """The plaintext of chunk `index` of a file; AttachmentError if it was not made so."""
    try:
        return nacl.bindings.crypto_aead_chacha20poly1305_ietf_decrypt(chunk, None,
                                                                       _nonce(index), key)
    except nacl.exceptions.CryptoError:
        raise AttachmentError(f"chunk {index} does not open under the file's key") from None


def chunk_count(size: int) -> int:
    """How many chunks a file of `size` bytes has (an empty file has one, empty)."""
    return max(1, -(-size // CHUNK_SIZE))


def chunks_of(stream: BinaryIO, key: bytes) -> Iterator[tuple[bytes, bytes]]:
    """(chunk id, chunk) of each piece of a file, in order, read from its current position."""
    index = 0
    while True:
        piece = stream.read(CHUNK_SIZE)
        if not piece and index:
            return
        chunk = seal_piece(key, index, piece)
        yield chunk_id(chunk), chunk
        index += 1
        if len(piece) < CHUNK_SIZE:
            return


def encode_list(ids: Iterable[bytes]) -> bytes:
    data = b"".join(ids)
    if not data or len(data) > MAX_LIST or len(data) % ID_SIZE:
        raise AttachmentError("a chunk list holds 1 to MAX_CHUNKS ids")
    return data


def parse_list(data: bytes, size: int) -> list[bytes]:
    """The chunk ids a list chunk holds, checked against the file size the message claims."""
    if len(data) % ID_SIZE or len(data) // ID_SIZE != chunk_count(size):
        raise AttachmentError("the chunk list does not match the file's size")
    return [data[i:i + ID_SIZE] for i in range(0, len(data), ID_SIZE)]


def chunk_size(index: int, size: int) -> int:
    """The ciphertext length chunk `index` of a file of `size` bytes must have."""
    last = chunk_count(size) - 1
    plain = CHUNK_SIZE if index < last else size - last * CHUNK_SIZE
    return plain + TAG_SIZE


@dataclass(frozen=True, slots=True)
class Sealed:
    """A file made into chunks: what its descriptor needs."""

    list: bytes  # the list chunk's id
    key: bytes
    size: int
    chunks: int


def seal_file(stream: BinaryIO, scope: bytes,
              put: Callable[[bytes, bytes], object]) -> Sealed:
    """Make a file into chunks, handing each (id, chunk) to `put`, its list chunk last.

    Reads the file twice from its current position (its digest, which makes the key, then the
    chunks), so memory stays bounded whatever its size: one chunk, and the list of ids.
    AttachmentError when the file is larger than MAX_FILE_SIZE or changed between the reads.
    """
    start = stream.tell()
    digest, size = file_digest(stream)
    if size > MAX_FILE_SIZE:
        raise AttachmentError(f"a file may be at most {MAX_FILE_SIZE >> 30} GiB")
    key = file_key(digest, scope)
    stream.seek(start)
    ids = []
    for cid, chunk in chunks_of(stream, key):
        put(cid, chunk)
        ids.append(cid)
    if stream.tell() - start != size or len(ids) != chunk_count(size):
        raise AttachmentError("the file changed while it was being attached")
    listed = encode_list(ids)
    put(chunk_id(listed), listed)
    return Sealed(chunk_id(listed), key, size, len(ids))


def open_file(key: bytes, ids: list[bytes], size: int,
              read: Callable[[bytes], bytes | None], out: BinaryIO) -> None:
    """Write a file's plaintext to `out`, chunk by chunk; AttachmentError when a chunk is
    missing or is not what the list names."""
    if len(ids) != chunk_count(size):
        raise AttachmentError("the chunk list does not match the file's size")
    for index, cid in enumerate(ids):
        chunk = read(cid)
        if chunk is None:
            raise AttachmentError(f"chunk {index} is not here")
        if len(chunk) != chunk_size(index, size) or chunk_id(chunk) != cid:
            raise AttachmentError(f"chunk {index} is damaged")
        out.write(open_chunk(key, index, chunk))
