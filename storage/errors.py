"""Typed errors of the replica."""

from __future__ import annotations


class StorageError(Exception):
    """A replica problem, with a message a person can read."""


class SchemaError(StorageError):
    """The file's schema cannot be used by this version of Hearth."""


class NotFound(StorageError):
    """The replica does not hold what was asked for."""
