"""The event contract (the newest `events-vN.json`) read as flat per-field rules, and the
report's tables.

The Spark pipeline and the pure-Python reference each turn these rules into their own checks;
both are tested against `analytics.events.validate`, the contract's own validator. Only the
JSON Schema keywords the contract uses are understood: anything else raises, so a new keyword in
the contract fails the tests instead of being ignored. The newest contract holds every version's
event types, each with its `schema` pinned to the version that introduced it (see
`analytics.events`), so lines of every version are read by the same rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from .events import EVENT_TYPES, HEAD_BUCKETS, schema

BASE_FIELDS = ("event", "schema", "ts", "pid")
PARTITION_PREFIX = "date="
# Why a line is not counted, in the order they are tested.
BAD_REASONS = ("not_json", "unknown_event", "invalid", "bad_ts", "wrong_partition")
_IGNORED = {"description", "$comment", "title"}


@dataclass(frozen=True)
class FieldRule:
    """What one field's value must be. `number` fields follow JSON Schema's integer (1.0 is one);
    `boolean` ones are JSON's true or false."""

    name: str
    number: bool
    boolean: bool = False
    const: object = None
    enum: tuple = ()
    pattern: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False


@dataclass(frozen=True)
class EventRule:
    event: str
    fields: tuple[FieldRule, ...]  # every allowed field, base fields included; all are required


@cache
def rules() -> dict[str, EventRule]:
    whole = schema()
    defs = whole["$defs"]
    _expect(set(whole) - _IGNORED - {"$schema", "$id"},
            {"type", "required", "properties", "oneOf", "$defs"}, "the schema")
    if set(whole["required"]) != set(BASE_FIELDS) or whole["type"] != "object":
        raise ValueError(f"the contract's base fields changed: {whole['required']}")
    base = {name: _field(name, whole["properties"][name], defs) for name in BASE_FIELDS}
    out = {}
    for event in EVENT_TYPES:
        spec = defs[event]
        _expect(set(spec) - _IGNORED, {"properties", "required", "additionalProperties"}, event)
        if spec["additionalProperties"] is not False or set(spec["required"]) | set(
                BASE_FIELDS) != set(spec["properties"]):
            raise ValueError(f"{event}: every field must be required and no other allowed")
        fields = [base[name] for name in BASE_FIELDS]
        for name, sub in spec["properties"].items():
            if name == "schema" and isinstance(sub, dict) and set(sub) == {"const"}:
                fields[BASE_FIELDS.index(name)] = _field(name, sub, defs)  # the type's version
            elif name in BASE_FIELDS:
                if sub is not True and sub != {"const": event}:
                    raise ValueError(f"{event}.{name}: base fields are checked by the base schema")
            else:
                fields.append(_field(name, sub, defs))
        out[event] = EventRule(event, tuple(fields))
    return out


@cache
def fields() -> dict[str, FieldRule]:
    """Every field of every event type, once; a name has the same type in every event."""
    seen: dict[str, FieldRule] = {}
    for rule in rules().values():
        for f in rule.fields:
            if f.name in seen and (seen[f.name].number, seen[f.name].boolean) != (
                    f.number, f.boolean):
                raise ValueError(f"field {f.name} has one type in one event, another in another")
            seen.setdefault(f.name, f)
    return seen


def _field(name: str, spec: object, defs: dict) -> FieldRule:
    if not isinstance(spec, dict):
        raise ValueError(f"{name}: unsupported rule {spec!r}")
    spec = {k: v for k, v in spec.items() if k not in _IGNORED}
    if "$ref" in spec:
        ref = spec.pop("$ref")
        if spec or not ref.startswith("#/$defs/"):
            raise ValueError(f"{name}: unsupported reference {ref!r}")
        return _field(name, defs[ref.removeprefix("#/$defs/")], defs)
    _expect(set(spec), {"type", "const", "enum", "pattern", "minimum", "maximum"}, name,
            subset=True)
    values = [spec["const"]] if "const" in spec else list(spec.get("enum", ()))
    kind = spec.get("type")
    if kind is None:
        if not values or any(isinstance(v, bool) for v in values) or len(
                {isinstance(v, str) for v in values}) != 1:
            raise ValueError(f"{name}: enums must be all strings or all numbers")
        number = not isinstance(values[0], str)
    elif kind in ("string", "integer", "boolean"):
        number = kind == "integer"
    else:
        raise ValueError(f"{name}: unsupported type {kind!r}")
    if "pattern" in spec and not re.fullmatch(r"\^[^$]*\$", spec["pattern"]):
        raise ValueError(f"{name}: only patterns anchored with ^ and $ are supported")
    return FieldRule(name=name, number=number, boolean=kind == "boolean",
                     const=spec.get("const"), enum=tuple(spec.get("enum", ())), pattern=spec.get("pattern"),
                     minimum=spec.get("minimum"), maximum=spec.get("maximum"),
                     integer=kind == "integer")


def _expect(found: set, allowed: set, where: str, subset: bool = False) -> None:
    extra = found - allowed
    if extra or (not subset and found != allowed):
        raise ValueError(f"{where}: unsupported schema keywords {sorted(extra or allowed - found)}")


# The tables ---------------------------------------------------------------------------------

TABLES = ("daily_active", "events_daily", "sync_sessions", "conflicts", "convergence",
          "rejections")
SYNC_DURATION_PCTS = (0.5, 0.95, 0.99)
CONVERGENCE_PCTS = (0.5, 0.9, 0.99)
HEAD_LABELS = tuple(f"{b}+" if b == HEAD_BUCKETS[-1] else str(b) for b in HEAD_BUCKETS)


def head_column(label: str) -> str:
    return "heads_" + label.replace("+", "plus")


def pct_name(p: float) -> str:
    return f"p{round(p * 100)}"


# Each table's columns, in order, as (name, type): "date", "string", "long" or "double".
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "daily_active": (("date", "date"), ("installs", "long")),
    "events_daily": (("date", "date"), ("event", "string"), ("count", "long"),
                     ("installs", "long")),
    "sync_sessions": (("date", "date"), ("sessions", "long"), ("installs", "long"),
                      *((f"duration_ms_{pct_name(p)}", "double") for p in SYNC_DURATION_PCTS),
                      ("rounds_p50", "double"), ("bytes_p50", "double"),
                      ("objects_p50", "double")),
    "conflicts": (("date", "date"), ("kind", "string"), ("count", "long"), ("installs", "long"),
                  *((head_column(label), "long") for label in HEAD_LABELS)),
    "convergence": (("date", "date"), ("count", "long"), ("installs", "long"),
                    *((f"ms_{pct_name(p)}", "double") for p in CONVERGENCE_PCTS)),
    "rejections": (("date", "date"), ("reason", "string"), ("count", "long"),
                   ("installs", "long")),
}
KEYS = {name: tuple(c for c, _ in cols if c in ("date", "event", "kind", "reason"))
        for name, cols in COLUMNS.items()}
