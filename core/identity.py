"""Ed25519 identities: generate, sign, key files (0600) and passphrase-protected export."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import nacl.bindings
import nacl.exceptions
import nacl.pwhash
import nacl.secret
import nacl.utils
from nacl.public import SealedBox
from nacl.signing import SigningKey, VerifyKey

from . import encoding
from . import passphrase as passphrase_box

PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64
_KEY_FILE_KIND = "hearth/identity"
_EXPORT_KIND = "hearth/identity-export"
_argon = nacl.pwhash.argon2id


class IdentityError(ValueError):
    """A key file or export that cannot be used, with a reason a person can read."""


def seal_to(public_key: bytes, data: bytes) -> bytes:
    """Encrypt `data` so only the holder of `public_key`'s identity can read it (a sealed box
    to the key's X25519 form)."""
    try:
        recipient = VerifyKey(public_key).to_curve25519_public_key()
    except (nacl.exceptions.CryptoError, ValueError, TypeError):
        raise IdentityError("not a usable public key") from None
    return SealedBox(recipient).encrypt(data)


def verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """True when `signature` is `public_key`'s Ed25519 signature of `message`."""
    try:
        nacl.bindings.crypto_sign_open(signature + message, public_key)
    except (nacl.exceptions.BadSignatureError, nacl.exceptions.ValueError, TypeError):
        return False
    return True


@dataclass(frozen=True, eq=False)
class Identity:
    """A person's key pair. The public key is the person's id."""

    _signing_key: SigningKey

    @classmethod
    def generate(cls) -> Identity:
        return cls(SigningKey.generate())

    @classmethod
    def from_seed(cls, seed: bytes) -> Identity:
        if len(seed) != 32:
            raise IdentityError("an identity seed is 32 bytes")
        return cls(SigningKey(seed))

    @property
    def public_key(self) -> bytes:
        return bytes(self._signing_key.verify_key)

    def sign(self, message: bytes) -> bytes:
        return self._signing_key.sign(message).signature

    def unseal(self, sealed: bytes) -> bytes:
        """Open a box sealed to this identity (see `seal_to`); IdentityError if not for us."""
        box = SealedBox(self._signing_key.to_curve25519_private_key())
        try:
            return box.decrypt(sealed)
        except nacl.exceptions.CryptoError:
            raise IdentityError("this box was not sealed to this identity") from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity) and other.public_key == self.public_key

    def __hash__(self) -> int:
        return hash(self.public_key)

    def seed(self) -> bytes:
        """The secret seed: only for a helper process of this computer that signs for it
        (app/slack_workers.py), over a pipe; never logged or written anywhere else."""
        return bytes(self._signing_key)

    def __repr__(self) -> str:  # never print the secret
        return f"Identity({self.public_key.hex()[:16]}…)"

    # Key files --------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> None:
        """Write the key file atomically, readable only by its owner (mode 0600)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = encoding.dumps({"kind": _KEY_FILE_KIND, "v": 1, "seed": bytes(self._signing_key)})
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Identity:
        """Read a key file; refuse one that anyone but its owner can read or write."""
        path = Path(path)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise IdentityError(f"no identity at {path}") from None
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_IMODE(mode) & 0o077:
                raise IdentityError(
                    f"{path} is readable by others (mode {stat.S_IMODE(mode):o}); "
                    "run `chmod 600` on it first"
                )
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
        try:
            record = encoding.loads(data)
        except encoding.EncodingError:
            raise IdentityError(f"{path} is not a Hearth key file") from None
        if (
            not isinstance(record, dict)
            or record.get("kind") != _KEY_FILE_KIND
            or record.get("v") != 1
            or not isinstance(record.get("seed"), bytes)
        ):
            raise IdentityError(f"{path} is not a Hearth key file")
        return cls.from_seed(record["seed"])

    # Passphrase-protected export ------------------------------------------------------------

    def export_protected(
        self,
        passphrase: str,
        *,
        opslimit: int = _argon.OPSLIMIT_MODERATE,
        memlimit: int = _argon.MEMLIMIT_MODERATE,
    ) -> bytes:
        """The identity sealed with a key stretched from `passphrase` (argon2id + SecretBox)."""
        if not passphrase:
            raise IdentityError("a passphrase is required to export an identity")
        sealed = passphrase_box.seal(bytes(self._signing_key), passphrase, ops=opslimit,
                                     mem=memlimit)
        return encoding.dumps({"kind": _EXPORT_KIND, "v": 1, **sealed})

    @classmethod
    def import_protected(cls, data: bytes, passphrase: str) -> Identity:
        try:
            record = encoding.loads(data)
        except encoding.EncodingError:
            raise IdentityError("not a Hearth identity export") from None
        if not isinstance(record, dict) or record.get("kind") != _EXPORT_KIND:
            raise IdentityError("not a Hearth identity export")
        if record.get("v") != 1:
            raise IdentityError(f"identity export version {record.get('v')!r} is not supported")
        try:
            seed = passphrase_box.open_sealed(record, passphrase)
        except passphrase_box.PassphraseError as exc:
            raise IdentityError("the identity export is damaged" if exc.damaged
                                else "wrong passphrase, or the export is damaged") from None
        return cls.from_seed(seed)
