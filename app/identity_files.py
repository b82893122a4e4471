"""This computer's identity and a workspace's secret as files of the data folder: made 0600,
never replaced, refused when others may read them, exported under a passphrase."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from core.identity import Identity, IdentityError

from .errors import WorkspaceError
from .paths import Paths

SECRET_SIZE = 32


def write_private(path: Path, data: bytes) -> None:
    """Write a new file only its owner reads (0600); refused when it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read_secret(paths: Paths) -> bytes:
    """The workspace secret; refused when anyone but its owner may read or write the file."""
    try:
        fd = os.open(paths.secret, os.O_RDONLY)
    except FileNotFoundError:
        raise WorkspaceError(f"no workspace secret at {paths.secret}") from None
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        if mode & 0o077:
            raise WorkspaceError(f"{paths.secret} is readable by others (mode {mode:o}); "
                                 "run `chmod 600` on it first")
        secret = os.read(fd, SECRET_SIZE + 1)
    finally:
        os.close(fd)
    if len(secret) != SECRET_SIZE:
        raise WorkspaceError(f"{paths.secret} is damaged (not a {SECRET_SIZE}-byte secret)")
    return secret


def load_or_create_identity(paths: Paths) -> Identity:
    if paths.identity.exists():
        return Identity.load(paths.identity)
    identity = Identity.generate()
    if paths.identity.exists():
        paths.identity.rename(paths.identity.with_name(
            f"identity.key.replaced-{time.strftime('%Y%m%d-%H%M%S')}"))
    identity.save(paths.identity)
    return identity


def export_identity(identity: Identity, path: Path, passphrase: str) -> None:
    if path.exists():
        raise WorkspaceError(f"{path} already exists; choose a new file name")
    write_private(path, identity.export_protected(passphrase))


def import_identity(paths: Paths, path: Path, passphrase: str, *,
                    replace: bool = False) -> Identity:
    """Make this data folder use the identity exported to `path` (e.g. on another computer).
    With `replace`, the current identity is kept aside (identity.key.replaced-TIME), not lost."""
    if paths.identity.exists() and not replace:
        current = Identity.load(paths.identity)
        raise WorkspaceError(
            f"this data folder already has an identity ({current.public_key.hex()[:16]}…); "
            "import into a new --data folder")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise WorkspaceError(f"cannot read {path}: {exc.strerror}") from None
    try:
        identity = Identity.import_protected(data, passphrase)
    except IdentityError as exc:
        raise WorkspaceError(str(exc)) from None
    if paths.identity.exists():
        paths.identity.rename(paths.identity.with_name(
            f"identity.key.replaced-{time.strftime('%Y%m%d-%H%M%S')}"))
    identity.save(paths.identity)
    return identity
