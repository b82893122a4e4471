"""Bytes sealed under a passphrase: a key stretched by argon2id, then a SecretBox. Used by the
identity export (core.identity) and by backups of format 1 and 2 (app.backup; format 3 stretches
one key with `stretch` and seals the whole file, app/backup_seal.py); the record's fields are `salt`,
`ops`, `mem` (the stretching's costs, bounded when opening) and `box`."""

from __future__ import annotations

import nacl.exceptions
import nacl.pwhash
import nacl.secret
import nacl.utils

_argon = nacl.pwhash.argon2id
OPS, MEM = _argon.OPSLIMIT_MODERATE, _argon.MEMLIMIT_MODERATE


class PassphraseError(ValueError):
    """A record that is damaged (`damaged` True) or a passphrase that does not open it."""

    def __init__(self, message: str, *, damaged: bool):
        super().__init__(message)
        self.damaged = damaged


def _key(passphrase: str, salt: bytes, ops: int, mem: int) -> bytes:
    return _argon.kdf(nacl.secret.SecretBox.KEY_SIZE, passphrase.encode(), salt,
                      opslimit=ops, memlimit=mem)


def costs_ok(ops: object, mem: object) -> bool:
    """Whether stretching costs read from a file are within what opening allows (no file may
    make this computer spend more than argon2id's "sensitive" costs)."""
    return type(ops) is int and type(mem) is int \
        and _argon.OPSLIMIT_MIN <= ops <= _argon.OPSLIMIT_SENSITIVE \
        and _argon.MEMLIMIT_MIN <= mem <= _argon.MEMLIMIT_SENSITIVE


def new_salt() -> bytes:
    return nacl.utils.random(_argon.SALTBYTES)


def stretch(passphrase: str, salt: bytes, ops: int = OPS, mem: int = MEM) -> bytes:
    """The 32-byte key argon2id stretches from `passphrase` (costs checked with `costs_ok`)."""
    if not costs_ok(ops, mem) or len(salt) != _argon.SALTBYTES:
        raise PassphraseError("damaged", damaged=True)
    return _key(passphrase, salt, ops, mem)


def seal(data: bytes, passphrase: str, *, ops: int = OPS, mem: int = MEM) -> dict:
    """The record of `data` sealed under `passphrase` (a plain dict to encode as one likes)."""
    salt = nacl.utils.random(_argon.SALTBYTES)
    box = nacl.secret.SecretBox(_key(passphrase, salt, ops, mem)).encrypt(data)
    return {"salt": salt, "ops": ops, "mem": mem, "box": bytes(box)}


def open_sealed(record: object, passphrase: str) -> bytes:
    """What `seal` sealed; PassphraseError for a malformed record (its costs out of bounds,
    too) or a passphrase that does not open it."""
    fields = (record.get(k) for k in ("salt", "ops", "mem", "box")) \
        if isinstance(record, dict) else iter((None,) * 4)
    salt, ops, mem, box = fields
    if not (isinstance(salt, bytes) and len(salt) == _argon.SALTBYTES
            and isinstance(box, bytes) and isinstance(ops, int) and isinstance(mem, int)
            and costs_ok(ops, mem)):
        raise PassphraseError("damaged", damaged=True)
    try:
        return nacl.secret.SecretBox(_key(passphrase, salt, ops, mem)).decrypt(box)
    except nacl.exceptions.CryptoError:
        raise PassphraseError("wrong passphrase", damaged=False) from None
