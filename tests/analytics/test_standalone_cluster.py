"""The report on a real Spark standalone cluster: one master and one worker (1 core, 1 GB) on
127.0.0.1, started from the installed pyspark with spark-class, torn down whatever happens.

The driver runs in a subprocess (a process holds one SparkContext, and the tests' own session
is local[2]): once through `python -m analytics.report --master spark://...`, once through
`spark-submit --master spark://... analytics/report.py`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from analytics import _reference
from tests.support import wait_until

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 60.0
POLL_INTERVAL_S = 0.25
STOP_TIMEOUT_S = 20.0
DRIVER_TIMEOUT_S = 300.0
APP_NAME = "hearth-analytics-report"

pytestmark = pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                                reason="Java is not installed: a Spark cluster needs a JVM")


@dataclass
class Cluster:
    url: str
    web: str
    env: dict[str, str]
    spark_home: Path

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.web}/json/", timeout=5) as answer:
            return json.load(answer)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, ready, logs: list[Path]) -> None:
    """Wait for `ready()` (an unreachable web UI counts as not ready); a timeout shows the tails
    of `logs`."""
    def quietly() -> bool:
        with contextlib.suppress(OSError, ValueError):
            return ready()
        return False

    def tails() -> str:
        return "\n".join(p.read_text(errors="replace")[-2000:] for p in logs if p.exists())

    wait_until(quietly, what=f"{what} to be ready", timeout=READY_TIMEOUT_S,
               poll=POLL_INTERVAL_S, detail=tails)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)  # the worker's executors are in its group
    try:
        proc.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(STOP_TIMEOUT_S)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    spark_class = home / "bin" / "spark-class"
    tmp = tmp_path_factory.mktemp("cluster")
    (tmp / "conf").mkdir()
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_CONF_DIR=str(tmp / "conf"), SPARK_LOG_DIR=str(tmp / "logs"),
               SPARK_WORKER_DIR=str(tmp / "work"), PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, PYTHONPATH=str(REPO))
    port, web, worker_web = _free_port(), _free_port(), _free_port()
    cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web}", env, home)
    procs: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> Path:
        log = tmp / f"{name}.log"
        with open(log, "wb") as out:
            procs.append(subprocess.Popen([str(spark_class), *args], env=env, stdout=out,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True))
        return log

    try:
        master_log = start("master", "org.apache.spark.deploy.master.Master", "--host",
                           "127.0.0.1", "--port", str(port), "--webui-port", str(web))
        _wait("master", lambda: cluster.state()["status"] == "ALIVE", [master_log])
        worker_log = start("worker", "org.apache.spark.deploy.worker.Worker", cluster.url,
                           "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                           "--webui-port", str(worker_web), "--work-dir", str(tmp / "work"))
        _wait("worker", lambda: cluster.state()["aliveworkers"] == 1, [master_log, worker_log])
        yield cluster
    finally:
        for proc in reversed(procs):
            _stop(proc)


def _completed(cluster: Cluster) -> int:
    return sum(app["name"] == APP_NAME and app["state"] == "FINISHED"
               for app in cluster.state()["completedapps"])


def _check(out: Path, root: Path, min_cohort: int = 5) -> None:
    summary = json.loads((out / "summary.json").read_text())
    expected = _reference.compute(root, min_cohort=min_cohort)
    assert summary["min_cohort"] == min_cohort
    assert summary["lines"] == expected.lines
    assert summary["suppressed"] == expected.suppressed
    assert summary["rows"] == {name: len(rows) for name, rows in expected.rows.items()}
    assert (out / "report.html").exists()
    for name in expected.rows:
        assert any((out / "tables" / name).glob("*.parquet"))


def test_command_line_runs_on_a_standalone_master(cluster, synth_logs, tmp_path):
    root, _ = synth_logs
    out = tmp_path / "out"
    before = _completed(cluster)
    done = subprocess.run(
        [sys.executable, "-m", "analytics.report", "--input", str(root), "--output", str(out),
         "--master", cluster.url, "--min-cohort", "3", "--conf", "spark.executor.memory=512m",
         "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.sql.shuffle.partitions=2"],
        cwd=REPO, env=cluster.env, capture_output=True, text=True, timeout=DRIVER_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    _check(out, root, min_cohort=3)
    assert "report.html" in done.stdout
    assert _completed(cluster) == before + 1  # it ran there, not on local[*]


def test_spark_submit_keeps_its_own_master(cluster, synth_logs, tmp_path):
    root, _ = synth_logs
    out = tmp_path / "out"
    before = _completed(cluster)
    done = subprocess.run(
        [str(cluster.spark_home / "bin" / "spark-submit"), "--master", cluster.url,
         "--conf", "spark.executor.memory=512m", "--conf", "spark.driver.host=127.0.0.1",
         "--conf", "spark.sql.shuffle.partitions=2", str(REPO / "analytics" / "report.py"),
         "--input", str(root), "--output", str(out), "--master", "local[1]"],
        cwd=tmp_path, env=cluster.env, capture_output=True, text=True, timeout=DRIVER_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    _check(out, root)
    assert "--master local[1] ignored" in done.stdout + done.stderr  # Python's stderr: stdout
    assert _completed(cluster) == before + 1  # the script's own --master did not win
