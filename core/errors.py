"""The typed error for objects that are not valid, with machine-readable reason codes."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """Why an object was rejected. Validity depends only on the object's own bytes."""

    OVERSIZE = "oversize"              # encoding larger than MAX_OBJECT_SIZE
    MALFORMED = "malformed"            # not CBOR, or not a map
    NON_CANONICAL = "non_canonical"    # CBOR, but not the canonical encoding
    UNKNOWN_VERSION = "unknown_version"  # envelope version `v` this code does not know
    BAD_FIELD = "bad_field"            # missing, extra or wrongly typed envelope field
    BAD_LINKS = "bad_links"            # a link that is not a 32-byte id, or a repeated link
    TOO_MANY_LINKS = "too_many_links"  # more than MAX_LINKS links
    BAD_SIGNATURE = "bad_signature"    # signature does not verify under `author`
    BAD_BODY = "bad_body"              # a known kind whose body has the wrong shape


class InvalidObject(ValueError):
    """An object rejected for `reason`; `str(err)` is a sentence a person can read."""

    def __init__(self, reason: Reason, message: str):
        super().__init__(message)
        self.reason = reason

    def __reduce__(self):
        return (type(self), (self.reason, str(self)))
