"""The replica's schema migrations, one module per version, each frozen as it shipped.

A migration holds its own SQL and imports nothing from the rest of Hearth: editing a
feature's code never edits a shipped step. Work that needs today's rules (indexing objects an
older version stored without interpreting them, rebuilding the reconciliation index) is
queued by name (`_steps.queue`) and done by storage._fixups once the schema is current, as
synapse's background updates are. A new version is a new module here, appended below.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from . import (
    v01,
    v02,
    v03,
    v04,
    v05,
    v06,
    v07,
    v08,
    v09,
    v10,
    v11,
    v12,
    v13,
    v14,
    v15,
    v16,
    v17,
    v18,
)

MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    v01.migrate, v02.migrate, v03.migrate, v04.migrate, v05.migrate, v06.migrate, v07.migrate,
    v08.migrate, v09.migrate, v10.migrate, v11.migrate, v12.migrate, v13.migrate, v14.migrate,
    v15.migrate, v16.migrate, v17.migrate, v18.migrate,
]
