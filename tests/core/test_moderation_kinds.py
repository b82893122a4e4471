"""The moderation kinds' bodies (core/kinds.py mod/role, mod/hide): valid ones, and every limit
(validity is decided by the bytes alone; who may moderate is the views' question)."""

from __future__ import annotations

import pytest

from core.errors import InvalidObject, Reason
from core.identity import Identity
from core.kinds import MAX_REASON, check_reason
from core.objects import build, decode

ME = Identity.from_seed(bytes(range(32)))
ID = bytes(range(32))
VALID = {
    "mod/role": {"channel": "general", "key": ID, "role": "moderator", "reason": "helps out"},
    "mod/hide": {"channel": "general", "target": ID, "hidden": True, "reason": "spam"},
}
GOOD = [
    ("mod/role", "role", "none"),
    ("mod/role", "reason", ""),
    ("mod/role", "reason", "話" * MAX_REASON),
    ("mod/role", "channel", "Général 🎉"),
    ("mod/hide", "hidden", False),
    ("mod/hide", "reason", "x"),
    ("mod/hide", "reason", "😀" * MAX_REASON),
    ("mod/hide", "reason", "👩‍💻 too"),  # a zero-width joiner in an emoji is fine
]
BAD = [
    ("mod/role", "channel", "c" * 65),
    ("mod/role", "key", ID[:31]),
    ("mod/role", "key", ID.hex()),
    ("mod/role", "role", "admin"),
    ("mod/role", "role", None),
    ("mod/role", "reason", "r" * (MAX_REASON + 1)),
    ("mod/role", "reason", "two\nlines"),
    ("mod/role", "reason", None),
    ("mod/hide", "channel", ""),
    ("mod/hide", "target", ID[:31]),
    ("mod/hide", "hidden", 1),
    ("mod/hide", "hidden", None),
    ("mod/hide", "reason", ""),
    ("mod/hide", "reason", "r" * (MAX_REASON + 1)),
    ("mod/hide", "reason", "\u202espam"),  # a bidi override
    ("mod/hide", "reason", "a\x1b[31mb"),
    ("mod/hide", "reason", b"spam"),
]


def _build(kind: str, body: dict):
    return build(ME, kind, stream=ID, body=body, ts=1_700_000_000_000)


@pytest.mark.parametrize("kind,field,value", GOOD)
def test_values_within_the_limits_are_valid(kind, field, value):
    obj = _build(kind, {**VALID[kind], field: value})
    assert decode(obj.raw).body[field] == value


@pytest.mark.parametrize("kind,field,value", BAD)
def test_values_beyond_the_limits_are_a_bad_body(kind, field, value):
    with pytest.raises(InvalidObject) as info:
        _build(kind, {**VALID[kind], field: value})
    assert info.value.reason is Reason.BAD_BODY


@pytest.mark.parametrize("kind", sorted(VALID))
def test_a_body_has_exactly_its_fields(kind):
    _build(kind, VALID[kind])
    for field in VALID[kind]:
        with pytest.raises(InvalidObject):
            _build(kind, {k: v for k, v in VALID[kind].items() if k != field})
    with pytest.raises(InvalidObject):
        _build(kind, {**VALID[kind], "note": "extra"})


def test_check_reason_says_what_is_wrong():
    assert check_reason("fine") == "fine"
    with pytest.raises(InvalidObject, match="control characters or line breaks"):
        check_reason("a\nb")
    with pytest.raises(InvalidObject, match=f"1 to {MAX_REASON}"):
        check_reason("", 1)
