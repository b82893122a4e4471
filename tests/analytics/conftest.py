"""Fixtures for the Spark report tests: one local[2] session for the whole run, synthetic logs
written once, and a way to run analytics.report on that session instead of starting another.

Spark is imported lazily, so the recorder and collector tests never start a JVM.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from analytics.synth import SynthConfig, SynthResult, generate
from tests.support import FakeClock

SYNTH_START = "2025-03-03"  # a Monday: 9 days hold one weekend
# The collectors' clock in the tests: the events they send are of 2024-05-01 and 2024-05-02.
COLLECTOR_NOW = datetime(2024, 5, 3, 12, 0, tzinfo=UTC).timestamp()


@pytest.fixture
def collector_clock() -> FakeClock:
    """The collector's clock, at COLLECTOR_NOW until the test moves it."""
    return FakeClock(COLLECTOR_NOW)


@pytest.fixture
async def collector(tmp_path: Path, collector_clock: FakeClock):
    """A collector (analytics.collector) on a free port of 127.0.0.1, its clock at
    COLLECTOR_NOW (`collector_clock`)."""
    from analytics.collector import Collector

    c = Collector(tmp_path / "events", clock=collector_clock)
    await c.async_start("127.0.0.1", 0)
    yield c
    await c.async_close()


@pytest.fixture(scope="session")
def spark() -> Iterator:
    """The tests' only SparkSession: local[2], 2 shuffle partitions, no UI."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Java is not installed: the Spark tests need a JVM")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("hearth-analytics-tests")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def synth_logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SynthResult]:
    """Nine days of logs of 80 installs, with their intentional malformed lines."""
    from datetime import date

    root = tmp_path_factory.mktemp("synth") / "logs"
    result = generate(SynthConfig(installs=80, days=9, out=root, seed=11,
                                  start=date.fromisoformat(SYNTH_START), workers=1))
    return root, result


@pytest.fixture(scope="session")
def run_report(spark) -> Callable:
    """run_report(*argv) runs analytics.report on the shared session, as main() would."""
    from analytics import report

    def run(*argv: str) -> report.Report:
        return report.run(spark, report.parse_args(list(argv)))

    return run


def write_logs(root: Path, days: dict[str, list[str | dict]]) -> Path:
    """Collector-style files: one `date=DAY/part.jsonl` per day; dicts are written as JSON."""
    for day, lines in days.items():
        folder = root / f"date={day}"
        folder.mkdir(parents=True, exist_ok=True)
        text = "".join((json.dumps(x, sort_keys=True) if isinstance(x, dict) else x) + "\n"
                       for x in lines)
        (folder / "20250101T000000Z-0000000000000000.jsonl").write_text(text, encoding="utf-8")
    return root


CLIENT_TIMEOUT_S = 20.0  # an HTTP client's whole request to a test's collector


@pytest.fixture
async def http():
    """An aiohttp client for the collector tests."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=CLIENT_TIMEOUT_S)) as s:
        yield s
