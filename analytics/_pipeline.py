"""The Spark side of the report: read the collector's files, check every line, build the tables.

Lines are read as text and parsed with `from_json` against an explicit schema covering every
field of every event type. Numbers are read as doubles and then held to the contract's integer
rule (JSON Schema counts 16.0 as an integer). Extra and repeated keys, which a struct schema
drops silently, show in the number of commas, since no valid value holds one. A line that breaks
a rule is counted under the first of `_contract.BAD_REASONS` that applies and otherwise ignored;
whether a line counts is exactly what the pure-Python reference decides, though a line broken in
two ways, or holding a brace inside a string, may be given another reason by the two. Every
table keeps only the groups (rows) with at least `min_cohort` distinct pids.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import reduce

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from . import _contract as C
from .events import EVENT_TYPES, HEAD_BUCKETS

log = logging.getLogger(__name__)

_SPARK_TYPES = {"date": T.DateType(), "string": T.StringType(), "long": T.LongType(),
                "double": T.DoubleType()}
_CORRUPT = "_corrupt_record"
_JSON_OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT,
                 "allowSingleQuotes": "false", "allowNumericLeadingZeros": "false",
                 "allowNonNumericNumbers": "false", "allowUnquotedControlChars": "false"}
# A string field rendered from a JSON number (Spark turns any token into a string) would look
# like this; such a value only counts if the line holds it in quotes.
_NUMBER_TEXT = r"^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$"


class InputError(ValueError):
    """The input folder is missing or unreadable; the message says which."""


@dataclass(frozen=True)
class Options:
    input: str
    output: str
    since: date | None = None
    until: date | None = None
    min_cohort: int = 5


@dataclass
class Outcome:
    """What the pipeline found: line counts, suppressed groups and the kept rows of each table."""

    lines: int
    bad: dict[str, int]
    suppressed: dict[str, int]
    rows: dict[str, list[tuple]] = field(default_factory=dict)
    partitions: list[str] = field(default_factory=list)

    @property
    def valid(self) -> int:
        return self.lines - sum(self.bad.values())


def event_schema(corrupt: bool = False) -> T.StructType:
    """Every field of every event type: strings as strings, numbers as doubles, booleans as
    booleans (Spark takes only JSON's true and false for one)."""
    fields = [T.StructField(f.name, T.BooleanType() if f.boolean else
                            T.DoubleType() if f.number else T.StringType())
              for f in C.fields().values()]
    return T.StructType(fields + [T.StructField(_CORRUPT, T.StringType())] * corrupt)


def table_schema(name: str) -> T.StructType:
    return T.StructType([T.StructField(col, _SPARK_TYPES[kind]) for col, kind in C.COLUMNS[name]])


# Reading ------------------------------------------------------------------------------------

def partitions(spark: SparkSession, root: str, since: date | None,
               until: date | None) -> list[str]:
    """The `date=` folders to read, through Hadoop's file system so any URI works."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(root)
    fs = path.getFileSystem(conf)
    if not fs.exists(path) or not fs.getFileStatus(path).isDirectory():
        raise InputError(f"input folder {root} does not exist")
    names = [s.getPath().getName() for s in fs.listStatus(path) if s.isDirectory()]
    return [n for n in sorted(names) if n.startswith(C.PARTITION_PREFIX)
            and in_range(n.removeprefix(C.PARTITION_PREFIX), since, until)]


def in_range(day: str, since: date | None, until: date | None) -> bool:
    """Whether a partition's date is wanted; a malformed name only when no range is given."""
    if since is None and until is None:
        return True
    try:
        d = date.fromisoformat(day)
    except ValueError:
        return False
    return (since is None or d >= since) and (until is None or d <= until)


def read_lines(spark: SparkSession, root: str, parts: list[str]) -> DataFrame:
    """(value, part): every line of every `*.jsonl` file of those partitions."""
    schema = T.StructType([T.StructField("value", T.StringType()),
                           T.StructField("part", T.StringType())])
    if not parts:
        return spark.createDataFrame([], schema)
    base = root.rstrip("/")
    return (spark.read.option("basePath", base).option("pathGlobFilter", "*.jsonl")
            .schema("value STRING, date STRING")
            .text([f"{base}/{p}" for p in parts])
            .withColumnRenamed("date", "part"))


# Checking -----------------------------------------------------------------------------------

def parse(lines: DataFrame, valid_days: Iterable[str] = (),
          keep: Sequence[str] = ()) -> DataFrame:
    """One row per line: `bad` (why it is not counted, or null) and the event's fields.

    Columns: the `keep` columns of `lines`, bad, day (YYYY-MM-DD), event, pid, label (conflict
    kind or rejection reason), x1 (sync duration_ms, convergence ms or conflict heads),
    x2 (rounds), x3 (bytes), x4 (objects). `valid_days` are partition values already known to
    be real dates.
    """
    valid_days = list(valid_days)
    value = F.col("value")
    e = F.from_json(value, event_schema(corrupt=True), _JSON_OPTIONS).alias("e")
    checks = {rule: f"ok{i}" for i, rule in enumerate(
        dict.fromkeys(f for r in C.rules().values() for f in r.fields))}
    # Spark gives a line that is not JSON all-null fields and its text as the corrupt record
    # (a value of the wrong type keeps the other fields).
    unparsed = F.col(f"e.{_CORRUPT}").isNotNull() & reduce(
        Column.__and__, (F.col(f"e.{name}").isNull() for name in C.fields()))
    # Each field is checked once, in its own column; each event type then ANDs its fields.
    df = lines.select(value, "part", *keep, e).select(
        "part", *keep, "e.*", (~_one_object(value) | unparsed).alias("not_json"),
        _count(value, ",").alias("commas"),
        *(_valid_field(rule, value).alias(name) for rule, name in checks.items()))
    ev, ts, part = F.col("event"), F.col("ts"), F.col("part")
    valid = None
    for rule in C.rules().values():
        # Every allowed field is required and no valid value holds a comma, so one comma less
        # than fields means no other or repeated key.
        ok = reduce(Column.__and__, (F.col(checks[f]) for f in rule.fields),
                    (F.col("commas") == len(rule.fields) - 1) & F.col(_CORRUPT).isNull())
        valid = (F.when if valid is None else valid.when)(ev == rule.event, ok)
    day = F.substring(ts, 1, 10)
    # A day equal to a partition known to be a real date is one: the full check is only needed
    # for the rare line in the wrong folder.
    real_day = F.when(day == part, part.isin(*valid_days) if valid_days else F.lit(False)) \
        .otherwise(_real_date(day))
    real_hour = (F.length(ts) == 20) & (F.substring(ts, 12, 2) <= "23") & real_day
    bad = (F.when(F.col("not_json"), "not_json")
           .when(ev.isNotNull() & ~ev.isin(*EVENT_TYPES), "unknown_event")
           .when(~valid.otherwise(False), "invalid")
           .when(~real_hour, "bad_ts")
           .when(day != part, "wrong_partition"))
    sync = ev == "sync_session"
    label = F.when(ev == "conflict", F.col("kind")).when(ev == "rejection", F.col("reason"))
    x1 = (F.when(sync, F.col("duration_ms")).when(ev == "convergence", F.col("ms"))
          .when(ev == "conflict", F.col("heads")))
    columns = {"day": day, "event": ev, "pid": F.col("pid"), "label": label,
               # Valid numbers are integral and in range: longs from here on (-0.0 becomes 0).
               "x1": x1.cast("long"), "x2": F.when(sync, F.col("rounds")).cast("long"),
               "x3": F.when(sync, F.col("bytes")).cast("long"),
               "x4": F.when(sync, F.col("objects")).cast("long")}
    out = df.select(*keep, bad.alias("bad"), *(c.alias(name) for name, c in columns.items()))
    return out.select(*keep, "bad", *(F.when(F.col("bad").isNull(), F.col(name)).alias(name)
                                      for name in columns))


def _one_object(value: Column) -> Column:
    """One closing brace (no valid string holds one), then only whitespace: Spark's JSON parser
    ignores whatever follows the first value."""
    return (_count(value, "}") == 1) & F.when(value.endswith("}"), True).otherwise(
        value.rlike(r"\}[ \t\r\n]+\z"))


def _count(value: Column, char: str) -> Column:
    return F.octet_length(value) - F.octet_length(F.replace(value, F.lit(char), F.lit("")))


def _real_date(day: Column) -> Column:
    parsed = F.try_to_date(day, "yyyy-MM-dd")
    return (parsed.isNotNull() & (F.date_format(parsed, "yyyy-MM-dd") == day)
            & (F.substring(day, 1, 4) != "0000"))


def _valid_field(rule: C.FieldRule, value: Column) -> Column:
    c = F.col(f"e.{rule.name}")
    ok = c.isNotNull()
    if rule.const is not None:
        ok &= c == F.lit(rule.const)
    if rule.enum:
        ok &= c.isin(*rule.enum)
    if rule.boolean:
        return ok
    if rule.number:
        if rule.integer:
            ok &= F.rint(c) == c  # NaN and the infinities fail the range checks below
        if rule.minimum is not None:
            ok &= c >= F.lit(float(rule.minimum))
        if rule.maximum is not None:
            ok &= c <= F.lit(float(rule.maximum))
        return ok
    if rule.pattern is not None:
        ok &= c.rlike(_java(rule.pattern))
        ok &= ~c.rlike(_NUMBER_TEXT) | (F.instr(value, F.concat(F.lit('"'), c, F.lit('"'))) > 0)
    return ok


def _java(pattern: str) -> str:
    """A ^...$ Python pattern for Java: Python's $ also matches before one final newline."""
    return pattern[:-1] + r"\n?\z" if pattern.endswith("$") else pattern


# The tables ---------------------------------------------------------------------------------

def condense(events: DataFrame) -> DataFrame:
    """Lines counted by (bad, day, event, label, pid, x1..x4): n. Every table and the bad-line
    counts are sums over it, so the text is parsed once; the percentiles use n as frequency."""
    condensed = events.groupBy("bad", "day", "event", "label", "pid", "x1", "x2", "x3", "x4") \
        .agg(F.count(F.lit(1)).alias("n"))
    # A cached plan keeps its partitions: as many as there are cores, not one per shuffle
    # partition (each table would otherwise scan spark.sql.shuffle.partitions tiny pieces).
    return condensed.coalesce(events.sparkSession.sparkContext.defaultParallelism)


def tables(condensed: DataFrame) -> dict[str, DataFrame]:
    """Each table before suppression, with `installs` (distinct pids) on every row; `date` is
    still the YYYY-MM-DD text."""
    ok = condensed.where(F.col("bad").isNull()).withColumnRenamed("day", "date")
    installs = F.countDistinct("pid").alias("installs")
    count = F.sum("n").alias("count")

    def of(event: str) -> DataFrame:
        return ok.where(F.col("event") == event)

    heads = [F.sum(F.when(_head_label(F.col("x1")) == label, F.col("n")).otherwise(0))
             .alias(C.head_column(label)) for label in C.HEAD_LABELS]
    sync, converge = of("sync_session"), of("convergence")
    # Distinct pids are counted apart from the percentiles: together, Spark would keep one
    # percentile buffer per (group, pid).
    built = {
        "daily_active": ok.groupBy("date").agg(installs),
        "events_daily": ok.groupBy("date", "event").agg(count, installs),
        "sync_sessions": sync.groupBy("date").agg(
            count.alias("sessions"), *_percentiles("x1", "duration_ms", C.SYNC_DURATION_PCTS),
            F.percentile("x2", 0.5, F.col("n")).alias("rounds_p50"),
            F.percentile("x3", 0.5, F.col("n")).alias("bytes_p50"),
            F.percentile("x4", 0.5, F.col("n")).alias("objects_p50"),
        ).join(sync.groupBy("date").agg(installs), "date"),
        "conflicts": of("conflict").groupBy("date", F.col("label").alias("kind")).agg(
            count, installs, *heads),
        "convergence": converge.groupBy("date").agg(
            count, *_percentiles("x1", "ms", C.CONVERGENCE_PCTS),
        ).join(converge.groupBy("date").agg(installs), "date"),
        "rejections": of("rejection").groupBy("date", F.col("label").alias("reason")).agg(
            count, installs),
    }
    return {name: df.select(*(F.col(c).cast("string" if kind == "date" else _SPARK_TYPES[kind])
                              for c, kind in C.COLUMNS[name]))
            for name, df in built.items()}


def _percentiles(col: str, prefix: str, pcts: Iterable[float]) -> list[Column]:
    pcts = list(pcts)
    values = F.percentile(col, pcts, F.col("n"))
    return [values[i].alias(f"{prefix}_{C.pct_name(p)}") for i, p in enumerate(pcts)]


def _head_label(heads: Column) -> Column:
    label = F.lit(C.HEAD_LABELS[0])
    for bound, name in zip(HEAD_BUCKETS, C.HEAD_LABELS, strict=True):
        label = F.when(heads >= bound, name).otherwise(label)
    return label


# Running ------------------------------------------------------------------------------------

def run(spark: SparkSession, opts: Options) -> Outcome:
    """Check every line, write the suppressed tables under OUTPUT/tables; returns the counts and
    the rows written."""
    started = time.perf_counter()
    parts = partitions(spark, opts.input, opts.since, opts.until)
    days = [p.removeprefix(C.PARTITION_PREFIX) for p in parts]
    condensed = condense(parse(read_lines(spark, opts.input, parts), [
        d for d in days if _is_date(d)]))
    # Parsed once: the bad-line count fills the cache and every table is read from it.
    condensed.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts = {r["bad"]: r["count"] for r in
                  condensed.groupBy("bad").agg(F.sum("n").alias("count")).collect()}
        log.info("parsed %d lines in %.1f s", sum(counts.values()), time.perf_counter() - started)
        # One job for the six small aggregations.
        union = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True),
                       [df.select(F.lit(name).alias("table"), "*")
                        for name, df in tables(condensed).items()])
        found: dict[str, list] = {name: [] for name in C.TABLES}
        for row in union.collect():
            found[row["table"]].append(row)
    finally:
        condensed.unpersist()
    log.info("aggregated in %.1f s", time.perf_counter() - started)
    outcome = Outcome(lines=sum(counts.values()),
                      bad={reason: counts.get(reason, 0) for reason in C.BAD_REASONS},
                      suppressed={}, partitions=parts)
    for name in C.TABLES:
        outcome.suppressed[name], outcome.rows[name] = _write(
            spark, found[name], f"{opts.output.rstrip('/')}/tables/{name}", name,
            opts.min_cohort)
    log.info("%d lines, %d bad, suppressed %s", outcome.lines, sum(outcome.bad.values()),
             outcome.suppressed)
    return outcome


def _is_date(text: str) -> bool:
    try:
        return date.fromisoformat(text).isoformat() == text
    except ValueError:
        return False


def _write(spark: SparkSession, found: list, path: str, name: str,
           min_cohort: int) -> tuple[int, list[tuple]]:
    """Write the groups with at least min_cohort pids; (groups suppressed, rows written)."""
    cols = C.COLUMNS[name]
    rows = [tuple(date.fromisoformat(r[c]) if kind == "date" else r[c] for c, kind in cols)
            for r in found]
    keys = [i for i, (c, _) in enumerate(cols) if c in C.KEYS[name]]
    rows.sort(key=lambda r: [r[i] for i in keys])
    installs = [c for c, _ in cols].index("installs")
    kept = [r for r in rows if r[installs] >= min_cohort]
    spark.createDataFrame(kept, table_schema(name)).coalesce(1).write.mode("overwrite") \
        .parquet(path)
    return len(rows) - len(kept), kept
