"""Tests for core.identity: keys, signatures, key files (0600) and protected export."""

import os
import pickle
import stat

import cbor2
import nacl.pwhash
import pytest

from core.identity import PUBLIC_KEY_SIZE, SIGNATURE_SIZE, Identity, IdentityError, verify

FAST = {"opslimit": nacl.pwhash.argon2id.OPSLIMIT_MIN,
        "memlimit": nacl.pwhash.argon2id.MEMLIMIT_MIN}
SEED = bytes(range(32))


def seed_of(identity: Identity) -> bytes:
    return bytes(identity._signing_key)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# Keys and signatures --------------------------------------------------------------------------


def test_generate_sign_verify():
    alice, bob = Identity.generate(), Identity.generate()
    assert alice != bob and alice.public_key != bob.public_key
    assert len(alice.public_key) == PUBLIC_KEY_SIZE
    sig = alice.sign(b"hello")
    assert len(sig) == SIGNATURE_SIZE
    assert verify(alice.public_key, b"hello", sig)
    assert not verify(alice.public_key, b"hello!", sig)
    assert not verify(alice.public_key, b"", sig)
    assert not verify(bob.public_key, b"hello", sig)
    assert not verify(alice.public_key, b"hello", bob.sign(b"hello"))
    flipped = bytes([sig[0] ^ 1]) + sig[1:]
    assert not verify(alice.public_key, b"hello", flipped)


GOOD = object()  # stands for alice's key or a good signature in the table below


@pytest.mark.parametrize(
    "public_key,signature",
    [
        (b"", GOOD), (bytes(31), GOOD), (bytes(33), GOOD), ("not bytes", GOOD), (None, GOOD),
        (bytes(32), GOOD), (GOOD, b""), (GOOD, bytes(63)), (GOOD, bytes(65)), (GOOD, "sig"),
        (GOOD, None), (GOOD, bytes(64)),
    ],
    ids=lambda x: "good" if x is GOOD else repr(x)[:12],
)
def test_verify_returns_false_for_junk_instead_of_raising(public_key, signature):
    alice = Identity.from_seed(SEED)
    public_key = alice.public_key if public_key is GOOD else public_key
    signature = alice.sign(b"m") if signature is GOOD else signature
    assert verify(public_key, b"m", signature) is False


def test_from_seed_is_deterministic():
    a, b = Identity.from_seed(SEED), Identity.from_seed(SEED)
    assert a == b and hash(a) == hash(b)
    assert a.public_key == b.public_key
    assert a.sign(b"x") == b.sign(b"x")  # Ed25519 signatures are deterministic
    assert Identity.from_seed(bytes(32)) != a
    assert a != "not an identity"


@pytest.mark.parametrize("seed", [b"", bytes(31), bytes(33), bytes(64)])
def test_from_seed_rejects_wrong_length(seed):
    with pytest.raises(IdentityError):
        Identity.from_seed(seed)


def test_repr_does_not_reveal_the_seed():
    identity = Identity.from_seed(SEED)
    for text in (repr(identity), str(identity), f"{identity}", repr([identity])):
        assert SEED.hex() not in text
        assert SEED.hex()[:16] not in text
        assert repr(SEED) not in text
        assert "SigningKey" not in text
    assert identity.public_key.hex()[:16] in repr(identity)
    generated = Identity.generate()
    assert seed_of(generated).hex() not in repr(generated)


# Key files ------------------------------------------------------------------------------------


def test_save_then_load(tmp_path):
    identity = Identity.generate()
    path = tmp_path / "keys" / "identity.key"  # parent is created
    identity.save(path)
    loaded = Identity.load(path)
    assert loaded == identity
    assert loaded.sign(b"x") == identity.sign(b"x")
    assert seed_of(loaded) == seed_of(identity)
    assert Identity.load(str(path)) == identity
    assert [p.name for p in path.parent.iterdir()] == ["identity.key"]  # no temp file left


def test_saved_file_has_mode_0600(tmp_path):
    path = tmp_path / "identity.key"
    old = os.umask(0)  # even with a permissive umask
    try:
        Identity.generate().save(path)
    finally:
        os.umask(old)
    assert mode(path) == 0o600


def test_save_over_a_world_readable_file_leaves_0600(tmp_path):
    path = tmp_path / "identity.key"
    path.write_bytes(b"old")
    os.chmod(path, 0o644)
    identity = Identity.generate()
    identity.save(path)
    assert mode(path) == 0o600
    assert Identity.load(path) == identity


def test_save_replaces_an_existing_identity(tmp_path):
    path = tmp_path / "identity.key"
    Identity.generate().save(path)
    second = Identity.generate()
    second.save(path)
    assert Identity.load(path) == second


@pytest.mark.parametrize("bad_mode", [0o644, 0o640, 0o604, 0o666, 0o660, 0o602])
def test_load_refuses_a_file_others_can_read_or_write(tmp_path, bad_mode):
    path = tmp_path / "identity.key"
    Identity.generate().save(path)
    os.chmod(path, bad_mode)
    with pytest.raises(IdentityError, match="chmod") as info:
        Identity.load(path)
    assert str(path) in str(info.value)
    os.chmod(path, 0o600)
    Identity.load(path)  # fine again once fixed
    os.chmod(path, 0o400)
    Identity.load(path)


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"\x00garbage\xff" * 10, id="garbage"),
        pytest.param(os.urandom(64), id="random"),
        pytest.param(SEED, id="bare-seed"),
        pytest.param(cbor2.dumps({"kind": "hearth/identity", "v": 1, "seed": SEED}),
                     id="non-canonical-key-order"),
        pytest.param(cbor2.dumps({"v": 1, "kind": "other", "seed": SEED}, canonical=True),
                     id="wrong-kind"),
        pytest.param(cbor2.dumps({"v": 2, "kind": "hearth/identity", "seed": SEED},
                                 canonical=True), id="wrong-version"),
        pytest.param(cbor2.dumps({"v": 1, "kind": "hearth/identity", "seed": SEED.hex()},
                                 canonical=True), id="seed-not-bytes"),
        pytest.param(cbor2.dumps({"v": 1, "kind": "hearth/identity", "seed": SEED[:31]},
                                 canonical=True), id="short-seed"),
        pytest.param(cbor2.dumps({"v": 1, "kind": "hearth/identity"}, canonical=True),
                     id="no-seed"),
        pytest.param(cbor2.dumps([1, 2], canonical=True), id="not-a-map"),
    ],
)
def test_load_refuses_garbage(tmp_path, content):
    path = tmp_path / "identity.key"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, content)
    os.close(fd)
    with pytest.raises(IdentityError):
        Identity.load(path)


def test_load_of_a_missing_file(tmp_path):
    with pytest.raises(IdentityError, match="no identity"):
        Identity.load(tmp_path / "nope.key")


def test_saved_file_does_not_depend_on_the_process(tmp_path):
    # The format is a canonical CBOR record: same seed, same bytes.
    a, b = tmp_path / "a", tmp_path / "b"
    Identity.from_seed(SEED).save(a)
    Identity.from_seed(SEED).save(b)
    assert a.read_bytes() == b.read_bytes()
    assert SEED in a.read_bytes()


# Passphrase-protected export ------------------------------------------------------------------


def test_export_import_round_trip():
    identity = Identity.generate()
    data = identity.export_protected("correct horse battery staple", **FAST)
    assert seed_of(identity) not in data  # sealed, not in clear
    back = Identity.import_protected(data, "correct horse battery staple")
    assert back == identity and seed_of(back) == seed_of(identity)


def test_export_is_salted():
    identity = Identity.from_seed(SEED)
    one = identity.export_protected("pw", **FAST)
    two = identity.export_protected("pw", **FAST)
    assert one != two
    assert Identity.import_protected(one, "pw") == Identity.import_protected(two, "pw")


def test_export_with_a_unicode_passphrase():
    identity = Identity.generate()
    data = identity.export_protected("pässwörd 🔑 密码", **FAST)
    assert Identity.import_protected(data, "pässwörd 🔑 密码") == identity
    with pytest.raises(IdentityError):
        Identity.import_protected(data, "passwörd 🔑 密码")


def test_export_with_default_limits():
    identity = Identity.generate()
    data = identity.export_protected("a passphrase")
    record = cbor2.loads(data)
    assert record["ops"] == nacl.pwhash.argon2id.OPSLIMIT_MODERATE
    assert record["mem"] == nacl.pwhash.argon2id.MEMLIMIT_MODERATE
    assert Identity.import_protected(data, "a passphrase") == identity


def test_export_requires_a_passphrase():
    with pytest.raises(IdentityError):
        Identity.generate().export_protected("", **FAST)


@pytest.mark.parametrize("wrong", ["hunter3", "", "Hunter2", "hunter2 ", " hunter2"])
def test_import_with_a_wrong_passphrase(wrong):
    data = Identity.generate().export_protected("hunter2", **FAST)
    with pytest.raises(IdentityError):
        Identity.import_protected(data, wrong)


def damaged(data: bytes, **changes) -> bytes:
    record = cbor2.loads(data)
    for key, value in changes.items():
        if value is None:
            del record[key]
        elif callable(value):
            record[key] = value(record[key])
        else:
            record[key] = value
    return cbor2.dumps(record, canonical=True)


def flip(pos):
    return lambda b: b[:pos] + bytes([b[pos] ^ 0x01]) + b[pos + 1:]


@pytest.fixture(scope="module")
def export():
    return Identity.from_seed(SEED).export_protected("pw", **FAST)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda d: damaged(d, box=flip(0)), id="box-first-byte"),
        pytest.param(lambda d: damaged(d, box=flip(30)), id="box-middle-byte"),
        pytest.param(lambda d: damaged(d, box=flip(-1)), id="box-last-byte"),
        pytest.param(lambda d: damaged(d, box=lambda b: b[:-1]), id="box-truncated"),
        pytest.param(lambda d: damaged(d, box=lambda b: b + b"\x00"), id="box-extended"),
        pytest.param(lambda d: damaged(d, box=b""), id="box-empty"),
        pytest.param(lambda d: damaged(d, box="text"), id="box-not-bytes"),
        pytest.param(lambda d: damaged(d, salt=flip(0)), id="salt-flipped"),
        pytest.param(lambda d: damaged(d, salt=lambda s: s[:-1]), id="salt-short"),
        pytest.param(lambda d: damaged(d, ops=nacl.pwhash.argon2id.OPSLIMIT_MIN + 1),
                     id="ops-changed"),
        pytest.param(lambda d: damaged(d, ops=0), id="ops-too-small"),
        pytest.param(lambda d: damaged(d, ops=2**40), id="ops-too-big"),
        pytest.param(lambda d: damaged(d, mem=2**45), id="mem-too-big"),
        pytest.param(lambda d: damaged(d, mem=1), id="mem-too-small"),
        pytest.param(lambda d: damaged(d, mem="8192"), id="mem-not-int"),
        pytest.param(lambda d: damaged(d, v=2), id="version-2"),
        pytest.param(lambda d: damaged(d, kind="hearth/identity"), id="key-file-kind"),
        pytest.param(lambda d: damaged(d, salt=None), id="no-salt"),
        pytest.param(lambda d: damaged(d, box=None), id="no-box"),
        pytest.param(lambda d: d[:-1], id="truncated"),
        pytest.param(lambda d: d + b"\x00", id="trailing-byte"),
        pytest.param(lambda d: d[: len(d) // 2], id="half"),
        pytest.param(lambda d: b"", id="empty"),
        pytest.param(lambda d: b"not an export", id="garbage"),
        pytest.param(lambda d: cbor2.dumps([d]), id="not-a-map"),
    ],
)
def test_import_of_a_damaged_export(export, make):
    data = make(export)
    assert data != export
    with pytest.raises(IdentityError):
        Identity.import_protected(data, "pw")


def test_import_of_a_key_file_is_refused(tmp_path):
    path = tmp_path / "identity.key"
    Identity.from_seed(SEED).save(path)
    with pytest.raises(IdentityError):
        Identity.import_protected(path.read_bytes(), "pw")


def test_identity_error_is_a_readable_value_error():
    with pytest.raises(ValueError, match=r"\w+ \w+"):
        Identity.import_protected(b"junk", "pw")
    err = IdentityError("the identity export is damaged")
    assert str(pickle.loads(pickle.dumps(err))) == "the identity export is damaged"
