"""Access policies and their evaluation.

The rule comes from the streams-and-access-policies model ("Access control policy",
"Evaluation") as restated in docs/ARCHITECTURE.md ("Who may do what"): a policy matches a request
when each of its parameters (subjects, resources, actions) is empty or contains the request's
value; among the matching policies the one with the most explicitly matched (non-empty)
parameters decides, and between equally specific ones the later policy in the list decides;
when no policy matches, or there are no policies, the action is allowed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

ALLOW = "allow"
DENY = "deny"
EFFECTS = frozenset({ALLOW, DENY})

_PARAMETERS = ("subjects", "resources", "actions")
_KEYS = frozenset({"effect", *_PARAMETERS})


def _strings(name: str, values: Iterable[str]) -> frozenset[str]:
    """Normalize one policy parameter to a frozenset of str, rejecting a bare string."""
    if isinstance(values, str | bytes):
        raise TypeError(
            f"{name} must be a collection of strings, not a single {type(values).__name__}"
        )
    result = frozenset(values)
    for value in result:
        if not isinstance(value, str):
            raise TypeError(f"{name} must contain only strings, got {type(value).__name__}")
    return result


@dataclass(frozen=True)
class Policy:
    """One access policy: `effect` ("allow" or "deny") for the requests it matches.

    Each parameter is a set of strings; an empty parameter matches any value. Subjects are keys,
    resources are post kinds and actions are e.g. "append" (docs/ARCHITECTURE.md, "Who may do what").
    """

    effect: str
    subjects: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()
    actions: frozenset[str] = frozenset()
    # Number of non-empty parameters, precomputed for `evaluate`.
    specificity: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.effect not in EFFECTS:
            raise ValueError(f"policy effect must be 'allow' or 'deny', got {self.effect!r}")
        for name in _PARAMETERS:
            object.__setattr__(self, name, _strings(name, getattr(self, name)))
        specificity = bool(self.subjects) + bool(self.resources) + bool(self.actions)
        object.__setattr__(self, "specificity", specificity)

    def matches(self, subject: str, resource: str, action: str) -> bool:
        """True when each parameter is empty or contains the request's value."""
        return (
            (not self.subjects or subject in self.subjects)
            and (not self.resources or resource in self.resources)
            and (not self.actions or action in self.actions)
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain form for CBOR bodies: effect and the three parameters as sorted lists."""
        return {
            "effect": self.effect,
            "subjects": sorted(self.subjects),
            "resources": sorted(self.resources),
            "actions": sorted(self.actions),
        }

    @classmethod
    def from_dict(cls, d: Any) -> Policy:
        """Inverse of `to_dict`; raises ValueError with a readable message on a wrong shape.

        Missing parameters mean "any" (the model marks them optional); unknown keys are rejected,
        since ignoring a parameter we do not understand would widen the policy.
        """
        if not isinstance(d, Mapping):
            raise ValueError(f"policy must be a map, got {type(d).__name__}")
        unknown = set(d) - _KEYS
        if unknown:
            names = ", ".join(sorted(repr(k) for k in unknown))
            raise ValueError(f"policy has unknown keys: {names}")
        if "effect" not in d:
            raise ValueError("policy has no 'effect'")
        effect = d["effect"]
        if effect not in EFFECTS:
            raise ValueError(f"policy effect must be 'allow' or 'deny', got {effect!r}")
        params: dict[str, frozenset[str]] = {}
        for name in _PARAMETERS:
            values = d.get(name, [])
            if not isinstance(values, list | tuple):
                raise ValueError(f"policy {name} must be a list, got {type(values).__name__}")
            if not all(isinstance(v, str) for v in values):
                raise ValueError(f"policy {name} must contain only strings")
            params[name] = frozenset(values)
        return cls(effect, **params)


def evaluate(policies: Iterable[Policy], subject: str, resource: str, action: str) -> bool:
    """Whether `policies` allow `subject` to do `action` on `resource` (True = allowed).

    One pass: a matching policy at least as specific as the best match so far takes over.
    """
    allowed = True
    best = -1
    for policy in policies:
        if policy.specificity >= best and policy.matches(subject, resource, action):
            best = policy.specificity
            allowed = policy.effect == ALLOW
    return allowed
