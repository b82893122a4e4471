"""Order-independent containers (CRDTs) from the Distributed Mutable Containers specification (DMC).

Each container's state is a function of the *set* of operations it has received: any order and
any repetition give the same state. An operation carries `op_id`, the id of the signed object that
carried it (unique per operation), and `author`, the public key that signed it. Checking the
signature is the caller's job; these containers only decide which signed operations count.

Authorization (DMC 4.6, 4.7; docs/ARCHITECTURE.md "Who may do what"): a container may be given an
`AuthorizedKeys`; then only operations by authorized keys count. Operations by other keys are kept
aside per author and count as soon as a grant for their author arrives, so grants and operations
may arrive in any order. Without an `AuthorizedKeys` anyone may write.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Protocol

_MISSING = object()


@dataclass(frozen=True)
class Grant:
    """Authorize `key` for a container (DMC 4.6, dmc:AddKey); counts only if `author` is root."""

    op_id: bytes
    author: bytes
    key: bytes


@dataclass(frozen=True)
class Add:
    """Add `element` to an OR-set (DMC 5.1.3, dmc:Add)."""

    op_id: bytes
    author: bytes
    element: Hashable


@dataclass(frozen=True)
class Remove:
    """Remove the elements added by the Adds whose op ids are in `removes` (DMC 5.1.3)."""

    op_id: bytes
    author: bytes
    removes: frozenset[bytes]

    def __post_init__(self) -> None:
        object.__setattr__(self, "removes", frozenset(self.removes))


@dataclass(frozen=True)
class Update:
    """Set an LWW register to `value` at timestamp `ts` (DMC 5.2.3, dmc:Update)."""

    op_id: bytes
    author: bytes
    ts: int
    value: Any


class AuthorizedKeys:
    """The authorized keys of a container (DMC 4.6 "Authorized Keys", 4.6.1 "Revocation").

    A key is authorized iff it is the root, or a Grant for it was authored by the root. Grants by
    any other key (even a granted one) grant nothing, and there is no revocation, so the set only
    grows and its value does not depend on the order grants arrive in.
    """

    def __init__(self, root: bytes) -> None:
        self.root = root
        self._keys: set[bytes] = {root}
        # Granted keys in the order they became authorized; containers read it to catch up.
        self._granted: list[bytes] = []

    def add_grant(self, grant: Grant) -> bool:
        """Apply a grant; True when it authorized a key that was not authorized before."""
        if not isinstance(grant, Grant):
            raise TypeError(f"expected a Grant, got {type(grant).__name__}")
        if grant.author != self.root or grant.key in self._keys:
            return False
        self._keys.add(grant.key)
        self._granted.append(grant.key)
        return True

    def is_authorized(self, key: bytes) -> bool:
        """True when `key` is the root or was granted by the root."""
        return key in self._keys

    def keys(self) -> frozenset[bytes]:
        """All authorized keys, the root included."""
        return frozenset(self._keys)


class _Op(Protocol):
    """What every container operation carries."""

    @property
    def op_id(self) -> bytes: ...

    @property
    def author(self) -> bytes: ...


class _Container:
    """Shared bookkeeping: dedup by op id, and holding back unauthorized ops until granted."""

    _op_type: type[_Op] | tuple[type[_Op], ...] = ()

    def __init__(self, authorized: AuthorizedKeys | None = None) -> None:
        self._authorized = authorized
        self._ops: dict[bytes, Any] = {}  # every op received, by op id
        self._pending: dict[bytes, list[Any]] = {}  # unauthorized ops, by author
        self._seen_grants = 0  # how much of authorized._granted has been caught up with

    def apply(self, op: Any) -> None:
        """Receive one operation; applying it again, or in another order, changes nothing."""
        if not isinstance(op, self._op_type):
            raise TypeError(f"{type(self).__name__} cannot apply {type(op).__name__}")
        known = self._ops.get(op.op_id)
        if known is not None:
            if known != op:
                raise ValueError(f"two different operations share op id {op.op_id.hex()}")
            return
        self._ops[op.op_id] = op
        self._catch_up()
        if self._authorized is None or self._authorized.is_authorized(op.author):
            self._admit(op)
        else:
            self._pending.setdefault(op.author, []).append(op)

    def _catch_up(self) -> None:
        """Admit held-back ops whose authors were granted since the last call."""
        if self._authorized is None:
            return
        granted = self._authorized._granted
        while self._seen_grants < len(granted):
            key = granted[self._seen_grants]
            self._seen_grants += 1
            for op in self._pending.pop(key, ()):
                self._admit(op)

    def _admit(self, op: Any) -> None:
        raise NotImplementedError


class ORSet(_Container):
    """Observed-Remove Set (DMC 5.1.1 and the `setMember` program of 5.1.4; Shapiro et al.).

    Members are the elements of authorized Adds that no authorized Remove names. A Remove names
    Add op ids, so it removes only the adds its author had observed: a concurrent Add of the same
    element survives. A Remove that arrives before the Add it names still removes it.
    """

    _op_type = (Add, Remove)

    def __init__(self, authorized: AuthorizedKeys | None = None) -> None:
        super().__init__(authorized)
        self._removed: set[bytes] = set()  # op ids named by authorized Removes
        self._live: dict[bytes, Hashable] = {}  # authorized, unremoved Adds: op id -> element
        self._counts: Counter[Hashable] = Counter()  # element -> number of live Adds
        self._members: frozenset[Hashable] | None = frozenset()  # cache; None when stale

    def _admit(self, op: Add | Remove) -> None:
        if isinstance(op, Add):
            if op.op_id not in self._removed:
                self._live[op.op_id] = op.element
                self._counts[op.element] += 1
                self._members = None
            return
        for op_id in op.removes - self._removed:
            self._removed.add(op_id)
            element = self._live.pop(op_id, _MISSING)
            if element is not _MISSING:
                self._counts[element] -= 1
                if not self._counts[element]:
                    del self._counts[element]
                self._members = None

    def members(self) -> frozenset[Hashable]:
        """The current elements."""
        self._catch_up()
        if self._members is None:
            self._members = frozenset(self._counts)
        return self._members

    def contains(self, element: Hashable) -> bool:
        """True when `element` is currently a member."""
        self._catch_up()
        return element in self._counts

    __contains__ = contains


class LWWRegister(_Container):
    """Last-Writer-Wins Register (DMC 5.2.1 and the `registerValue` program of 5.2.4).

    The value is that of the authorized Update with the greatest (ts, op_id): equal timestamps
    are broken by op id, larger wins, so every replica picks the same update.
    """

    _op_type = Update

    def __init__(self, authorized: AuthorizedKeys | None = None) -> None:
        super().__init__(authorized)
        self._latest: Update | None = None

    def _admit(self, op: Update) -> None:
        latest = self._latest
        if latest is None or (op.ts, op.op_id) > (latest.ts, latest.op_id):
            self._latest = op

    def latest(self) -> Update | None:
        """The winning update, or None when no authorized update has arrived."""
        self._catch_up()
        return self._latest

    def value(self) -> Any:
        """The current value, or None when the register is empty."""
        latest = self.latest()
        return None if latest is None else latest.value
