"""Tests for core.policy: the evaluation rule as a hand-written table, and the dict form."""

import pytest

from core.policy import Policy, evaluate

A, D = "allow", "deny"


def P(effect, subjects=(), resources=(), actions=()):  # short constructor for the table
    return Policy(effect, subjects, resources, actions)


# Every row: policies, request (subject, resource, action), expected result, written by hand from
# the rule. "Specificity" below = number of non-empty parameters of a policy.
REQ = ("alice", "msg", "append")
CASES = [
    pytest.param([], REQ, True, id="no-policies-allows"),
    pytest.param([P(A)], REQ, True, id="wildcard-allow"),
    pytest.param([P(D)], REQ, False, id="wildcard-deny"),
    pytest.param([P(D, subjects={"alice"})], REQ, False, id="deny-subject-matches"),
    pytest.param(
        [P(D, subjects={"alice"})],
        ("bob", "msg", "append"),
        True,
        id="deny-subject-other-subject-ignored",
    ),
    pytest.param([P(D, resources={"msg"})], REQ, False, id="deny-resource-matches"),
    pytest.param(
        [P(D, resources={"msg"})],
        ("alice", "topic", "append"),
        True,
        id="deny-resource-other-resource-ignored",
    ),
    pytest.param([P(D, actions={"append"})], REQ, False, id="deny-action-matches"),
    pytest.param(
        [P(D, actions={"append"})],
        ("alice", "msg", "read"),
        True,
        id="deny-action-other-action-ignored",
    ),
    pytest.param([P(D, {"alice"}, {"msg"}, {"append"})], REQ, False, id="deny-all-three-match"),
    pytest.param(
        [P(D, {"alice"}, {"msg"}, {"append"})],
        ("alice", "msg", "read"),
        True,
        id="deny-all-three-one-mismatch-ignored",
    ),
    pytest.param(
        [P(D, subjects={"alice", "bob"})],
        ("bob", "msg", "append"),
        False,
        id="multi-valued-subjects-match",
    ),
    pytest.param(
        [P(D, subjects={"alice", "bob"})],
        ("carol", "msg", "append"),
        True,
        id="multi-valued-subjects-no-match",
    ),
    pytest.param(
        [P(D, subjects={"bob"}), P(D, resources={"topic"})],
        REQ,
        True,
        id="only-non-matching-policies-allows",
    ),
    pytest.param([P(A), P(D)], REQ, False, id="tie-wildcards-allow-then-deny-later-wins"),
    pytest.param([P(D), P(A)], REQ, True, id="tie-wildcards-deny-then-allow-later-wins"),
    pytest.param(
        [P(A, subjects={"alice"}), P(D, subjects={"alice"})],
        REQ,
        False,
        id="tie-subject-allow-then-deny",
    ),
    pytest.param(
        [P(D, subjects={"alice"}), P(A, subjects={"alice"})],
        REQ,
        True,
        id="tie-subject-deny-then-allow",
    ),
    pytest.param(
        [P(D, subjects={"alice"}), P(A, resources={"msg"})],
        REQ,
        True,
        id="tie-different-parameters-later-allow-wins",
    ),
    pytest.param(
        [P(A, resources={"msg"}), P(D, subjects={"alice"})],
        REQ,
        False,
        id="tie-different-parameters-later-deny-wins",
    ),
    pytest.param(
        [P(A, {"alice"}, {"msg"}), P(D, (), {"msg"}, {"append"})],
        REQ,
        False,
        id="tie-two-parameters-later-deny-wins",
    ),
    pytest.param(
        [P(A, subjects={"alice"}), P(D)], REQ, True, id="specific-allow-before-general-deny"
    ),
    pytest.param(
        [P(D), P(A, subjects={"alice"})], REQ, True, id="general-deny-before-specific-allow"
    ),
    pytest.param(
        [P(D, subjects={"alice"}), P(A)], REQ, False, id="specific-deny-before-general-allow"
    ),
    pytest.param(
        [P(A), P(D, subjects={"alice"})], REQ, False, id="general-allow-before-specific-deny"
    ),
    pytest.param(
        [P(D, subjects={"alice"}), P(A, {"alice"}, {"msg"})],
        REQ,
        True,
        id="subject-deny-vs-subject-resource-allow",
    ),
    pytest.param(
        [P(A, {"alice"}, {"msg"}), P(D, subjects={"alice"})],
        REQ,
        True,
        id="subject-resource-allow-vs-later-subject-deny",
    ),
    pytest.param(
        [P(D, subjects={"alice"}), P(A, {"alice"}, {"msg"})],
        ("alice", "topic", "append"),
        False,
        id="subject-deny-applies-where-resource-allow-does-not-match",
    ),
    pytest.param(
        [P(D, {"alice"}, {"msg"}, {"append"}), P(A, {"alice"}, {"msg"})],
        REQ,
        False,
        id="three-parameter-deny-beats-later-two-parameter-allow",
    ),
    pytest.param(
        [P(A, {"alice"}, {"msg"}), P(D, {"alice"}, {"msg"}, {"append"})],
        REQ,
        False,
        id="three-parameter-deny-beats-earlier-two-parameter-allow",
    ),
    pytest.param(
        [P(D), P(A, {"bob"}, {"msg"}, {"append"})],
        REQ,
        False,
        id="non-matching-specific-allow-ignored",
    ),
    pytest.param(
        [P(D, actions={"append"}), P(A, subjects={"alice", "bob"}, actions={"append"})],
        REQ,
        True,
        id="allow-list-member-may-append",
    ),
    pytest.param(
        [P(D, actions={"append"}), P(A, subjects={"alice", "bob"}, actions={"append"})],
        ("carol", "msg", "append"),
        False,
        id="allow-list-outsider-may-not-append",
    ),
    pytest.param(
        [P(A, actions={"append"}), P(D, subjects={"alice"}), P(A, {"alice"}, {"msg"}), P(D)],
        REQ,
        True,
        id="four-policies-most-specific-allow-wins",
    ),
    pytest.param(
        [P(A, actions={"append"}), P(D, subjects={"alice"}), P(A, {"alice"}, {"msg"}), P(D)],
        ("alice", "topic", "append"),
        False,
        id="four-policies-later-equal-deny-wins",
    ),
]


@pytest.mark.parametrize(("policies", "request_", "expected"), CASES)
def test_evaluate_table(policies, request_, expected):
    assert evaluate(policies, *request_) is expected


def test_evaluate_accepts_any_iterable():
    assert evaluate(iter([P(D, subjects={"alice"})]), *REQ) is False


def test_parameters_are_normalized_to_frozensets():
    p = Policy("allow", ["b", "a", "a"], ("msg",), {"append"})
    assert p.subjects == frozenset({"a", "b"})
    assert p.resources == frozenset({"msg"})
    assert p == Policy("allow", {"a", "b"}, ["msg"], ["append"])
    assert hash(p) == hash(Policy("allow", {"a", "b"}, ["msg"], ["append"]))


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        pytest.param({"effect": "Allow"}, ValueError, id="effect-case-sensitive"),
        pytest.param({"effect": "permit"}, ValueError, id="unknown-effect"),
        pytest.param({"effect": None}, ValueError, id="effect-none"),
        pytest.param({"effect": "deny", "subjects": "alice"}, TypeError, id="bare-string"),
        pytest.param({"effect": "deny", "actions": [1]}, TypeError, id="non-string-element"),
    ],
)
def test_invalid_policies_rejected(kwargs, error):
    with pytest.raises(error):
        Policy(**kwargs)


def test_to_dict_has_sorted_lists():
    p = Policy("deny", {"k2", "k1"}, (), ["append"])
    assert p.to_dict() == {
        "effect": "deny",
        "subjects": ["k1", "k2"],
        "resources": [],
        "actions": ["append"],
    }


@pytest.mark.parametrize(
    "policy",
    [P(A), P(D, {"k1", "k2"}), P(A, (), {"msg", "topic"}, {"append"}), P(D, {"k"}, {"r"}, {"a"})],
)
def test_dict_round_trip(policy):
    assert Policy.from_dict(policy.to_dict()) == policy


def test_from_dict_missing_parameters_mean_any():
    assert Policy.from_dict({"effect": "deny", "actions": ["append"]}) == P(D, actions={"append"})


@pytest.mark.parametrize(
    ("d", "message"),
    [
        pytest.param(["deny"], "must be a map", id="not-a-map"),
        pytest.param({}, "no 'effect'", id="no-effect"),
        pytest.param({"effect": "maybe"}, "'allow' or 'deny'", id="bad-effect"),
        pytest.param({"effect": 1}, "'allow' or 'deny'", id="effect-not-string"),
        pytest.param(
            {"effect": "deny", "subject": ["k"]}, "unknown keys: 'subject'", id="unknown-key"
        ),
        pytest.param(
            {"effect": "deny", "subjects": "k"}, "subjects must be a list", id="parameter-is-string"
        ),
        pytest.param(
            {"effect": "deny", "actions": None}, "actions must be a list", id="parameter-is-none"
        ),
        pytest.param(
            {"effect": "deny", "resources": ["ok", b"raw"]}, "only strings", id="element-not-string"
        ),
        pytest.param(
            {"effect": "deny", "resources": [["nested"]]}, "only strings", id="element-unhashable"
        ),
    ],
)
def test_from_dict_rejects_wrong_shapes(d, message):
    with pytest.raises(ValueError, match=message):
        Policy.from_dict(d)
