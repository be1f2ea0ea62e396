"""The weights job's files: the history dataset and its `_notes.json` (checked), the output.

Every bad input is a HistoryInputError (an InputError: exit code 2) with one line naming the file
and what is wrong with it. For a local directory the check runs before Spark starts, with
pyarrow reading only the Parquet footers, so a bad input shows no JVM output: no data file, a
file that is not Parquet, a missing column, a column of a type the job cannot read, no rows, and
a malformed `_notes.json`. Without `_notes.json` (a history the user brings from their own
metrics store) the sampling grid comes from `--step` or the data (spark_jobs/grid.py). On other
file systems (hdfs://, s3a://) the same notes check runs through Spark and file errors are found
when Spark reads the files.

Files may differ in how they store a column (int32 or int64 partitions, float or integer
rates, timestamps in ms/us/ns, with or without a time zone): each group of files with one
layout is read on its own and converted to one schema, since Spark reads one layout per scan.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, TimestampNTZType, TimestampType

from kafka_rebalance.core.errors import InputError
from topology.documents import decode_json
from topology.history import MAX_DURATION_S

NOTES_FILE = "_notes.json"
"""Written by `rebalance history export` beside the data (topology.history.NOTES_FILE)."""

COLUMNS = ("ts", "topic", "partition", "bytes_in_per_sec", "bytes_out_per_sec", "size_bytes")
REQUESTS = "requests_per_sec"
OPTIONAL_COLUMNS = (REQUESTS,)
"""Read when a file has them (histories written before lack requests_per_sec), else null."""
_NANOS_AS_LONG = "spark.sql.legacy.parquet.nanosAsLong"

_ColumnCheck = Callable[[pa.DataType], bool]


def _is_text(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return _is_text(t.value_type)
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _is_number(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t))


_ARROW_CHECKS: dict[str, tuple[_ColumnCheck, str]] = {
    "ts": (pa.types.is_timestamp, "a timestamp"),
    "topic": (_is_text, "a string"),
    "partition": (pa.types.is_integer, "an integer"),
    "bytes_in_per_sec": (_is_number, "a number"),
    "bytes_out_per_sec": (_is_number, "a number"),
    "size_bytes": (_is_number, "a number"),
    REQUESTS: (_is_number, "a number"),
}


class HistoryInputError(InputError):
    """The history dataset does not have the files, columns, types, rows or notes the job needs."""


@dataclass(frozen=True, slots=True)
class HistoryNotes:
    """What the weights job uses from `_notes.json`: the sampling grid of the export."""

    start_seconds: float
    step_seconds: float


@dataclass(frozen=True, slots=True)
class FileGroup:
    """Data files that store every column the same way (Spark reads them in one scan)."""

    paths: tuple[str, ...]
    nanosecond_ts: bool


@dataclass(frozen=True, slots=True)
class CheckedHistory:
    """A local history directory whose notes (None: no notes file) and file footers passed
    the checks."""

    notes: HistoryNotes | None
    groups: tuple[FileGroup, ...]
    rows: int


def local_directory(path: str) -> Path | None:
    """The local path of `path` (plain or file://), or None for other file systems."""
    parsed = urlparse(path)
    if parsed.scheme == "file":
        return Path(parsed.path)
    if parsed.scheme and len(parsed.scheme) > 1:  # a one-letter scheme is a Windows drive
        return None
    return Path(path)


def parse_notes(text: str, where: str) -> HistoryNotes:
    """Validate `_notes.json` content: a version-1 object with a start time and a step."""
    try:
        document = decode_json(text)
    except ValueError as exc:
        raise HistoryInputError(f"{where} is not valid JSON ({exc}); re-run "
                                "`rebalance history export`") from None
    if not isinstance(document, dict):
        raise HistoryInputError(f"{where} must hold a JSON object")
    if document.get("version") != 1 or isinstance(document.get("version"), bool):
        raise HistoryInputError(f"{where} has version {document.get('version')!r}; "
                                "this job reads version 1")
    step = document.get("step_seconds")
    if (isinstance(step, bool) or not isinstance(step, int | float)
            or not 0 < step <= MAX_DURATION_S):
        raise HistoryInputError(f"{where} has step_seconds {step!r:.40}; expected seconds > 0 "
                                "and at most a century")
    start = document.get("start")
    try:
        parsed = datetime.fromisoformat(start) if isinstance(start, str) else None
    except ValueError:
        parsed = None
    if parsed is None:
        raise HistoryInputError(f"{where} has start {start!r}; expected an ISO 8601 time")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return HistoryNotes(start_seconds=parsed.timestamp(), step_seconds=float(step))


def _data_files(directory: Path) -> list[Path]:
    """Files Spark would read: not hidden and not metadata (no leading `.` or `_`)."""
    found = []
    for path in sorted(directory.rglob("*")):
        parts = path.relative_to(directory).parts
        if path.is_file() and not any(p.startswith((".", "_")) for p in parts):
            found.append(path)
    return found


def _check_footer(path: Path, directory: Path) -> tuple[tuple[str, ...], bool, int]:
    """The file's column layout, whether its ts is in nanoseconds, and its row count."""
    try:
        metadata = pq.read_metadata(path)
        schema = metadata.schema.to_arrow_schema()
    except (OSError, pa.ArrowException) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HistoryInputError(f"history file {path} is not a readable Parquet file: "
                                f"{reason}") from None
    layout = []
    for name in (*COLUMNS, *OPTIONAL_COLUMNS):
        if schema.get_field_index(name) < 0:
            if name in OPTIONAL_COLUMNS:
                layout.append("absent")
                continue
            raise HistoryInputError(
                f"history file {path} has no column {name!r} (columns: "
                f"{', '.join(schema.names) or 'none'}); expected {', '.join(COLUMNS)}"
                + _hive_hint(path.relative_to(directory), name))
        data_type = schema.field(name).type
        check, wanted = _ARROW_CHECKS[name]
        if not check(data_type):
            raise HistoryInputError(
                f"history file {path}: column {name!r} has type {data_type}, expected {wanted}")
        layout.append(str(data_type))
    # Arrow shows INT96 timestamps (Spark's and Hive's default) as ns, but Spark reads those.
    ts_column = metadata.schema.column(metadata.schema.names.index("ts"))
    nanos = schema.field("ts").type.unit == "ns" and ts_column.physical_type == "INT64"
    return tuple(layout), nanos, metadata.num_rows


def _hive_hint(relative: Path, column: str) -> str:
    """What to do when a missing column is a directory name (`topic=orders/part-0.parquet`):
    a Hive-partitioned layout, whose values this reader does not take from paths."""
    if not any(part.startswith(f"{column}=") for part in relative.parts[:-1]):
        return ""
    return (f"; its directory names carry {column!r} ({relative.parent}), a Hive-partitioned "
            "layout this reader does not read: write every column into the files "
            "(as `rebalance history export` does)")


def check_local_history(directory: Path) -> CheckedHistory:
    """Check a local history directory without Spark: notes, every file's footer, row count."""
    if not directory.is_dir():
        what = "does not exist" if not directory.exists() else "is not a directory"
        raise HistoryInputError(f"history {directory} {what}; pass the directory "
                                "`rebalance history export --out` wrote")
    files = _data_files(directory)
    if not files:
        raise HistoryInputError(f"history directory {directory} has no data files")
    notes_path = directory / NOTES_FILE
    notes: HistoryNotes | None = None
    if notes_path.exists() or notes_path.is_symlink():
        try:
            notes_text = notes_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise HistoryInputError(f"cannot read {notes_path}: {exc}") from None
        notes = parse_notes(notes_text, str(notes_path))
    layouts: dict[tuple[tuple[str, ...], bool], list[str]] = {}
    rows = 0
    for path in files:
        layout, nanos, count = _check_footer(path, directory)
        rows += count
        layouts.setdefault((layout, nanos), []).append(str(path))
    if rows == 0:
        raise HistoryInputError(f"history dataset {directory} has no rows")
    groups = tuple(FileGroup(tuple(paths), nanos) for (_, nanos), paths in layouts.items())
    return CheckedHistory(notes, groups, rows)


def _spark_notes(spark: SparkSession, path: str) -> HistoryNotes | None:
    """The notes beside a history on another file system; None when there is no notes file."""
    notes_path = f"{path.rstrip('/')}/{NOTES_FILE}"
    try:
        rows = spark.read.text(notes_path, wholetext=True).collect()
    except AnalysisException as exc:
        if "PATH_NOT_FOUND" in str(exc):
            return None
        raise HistoryInputError(f"cannot read {notes_path}: {_first_line(exc.getMessage())}"
                                ) from None
    return parse_notes(rows[0][0] if rows else "", notes_path)


def load_history(
    spark: SparkSession, path: str, checked: CheckedHistory | None = None
) -> tuple[DataFrame, HistoryNotes | None]:
    """The history rows (ts as a timestamp, the other columns as stored) and the notes (None
    without a notes file).

    `checked` comes from `check_local_history` (run before Spark starts); without it, a local
    path is checked here and any other path is read as one dataset and its notes through Spark.
    """
    local = local_directory(path)
    if checked is None and local is not None:
        checked = check_local_history(local)
    if checked is None:
        return _with_optional(_read(spark, [path], nanosecond_ts=False)), _spark_notes(spark, path)
    frames = [_with_optional(_read(spark, list(g.paths), g.nanosecond_ts))
              for g in checked.groups]
    if len(frames) == 1:
        return frames[0], checked.notes
    normal = [f.select(_as_instant(f).alias("ts"),
                       *[_widened(c) for c in (*COLUMNS[1:], *OPTIONAL_COLUMNS)])
              for f in frames]
    history = normal[0]
    for frame in normal[1:]:
        history = history.unionByName(frame)
    return history, checked.notes


def _read(spark: SparkSession, paths: Sequence[str], nanosecond_ts: bool) -> DataFrame:
    if nanosecond_ts:
        # Spark has no nanosecond timestamp: read them as longs and keep the microseconds.
        spark.conf.set(_NANOS_AS_LONG, "true")
    try:
        frame = spark.read.parquet(*paths)
    except AnalysisException as exc:
        where = paths[0] if len(paths) == 1 else f"{paths[0]} (and {len(paths) - 1} more)"
        raise HistoryInputError(f"cannot read history dataset {where!r}: "
                                f"{_first_line(exc.getMessage())}") from None
    if isinstance(frame.schema["ts"].dataType, LongType):
        frame = frame.withColumn("ts", F.timestamp_micros(F.expr("ts div 1000")))
    return frame


def _with_optional(frame: DataFrame) -> DataFrame:
    """`frame` with every optional column, null where its files have none."""
    for name in OPTIONAL_COLUMNS:
        if name not in frame.columns:
            frame = frame.withColumn(name, F.lit(None).cast("double"))
    return frame


def _as_instant(frame: DataFrame) -> Column:
    """`ts` as TimestampType; a timestamp without zone is read as UTC wall-clock time."""
    if isinstance(frame.schema["ts"].dataType, TimestampNTZType):
        return F.timestamp_micros(
            F.expr("timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', ts)"))
    return F.col("ts").cast(TimestampType())


def _widened(name: str) -> Column:
    """A column as the widest type it may have in any file, so file groups can be unioned."""
    wide = {"topic": "string", "partition": "bigint"}.get(name, "double")
    return F.col(name).cast(wide).alias(name)


_SPARK_OUTPUT_FILE = re.compile(r"(part-.*|_SUCCESS|\..*\.crc|_committed_.*|_started_.*)")


def replaceable_output(path: Path) -> bool:
    """True when `path` may be (over)written with the weights file: absent, a file, or a
    directory holding only what a Spark write leaves (an earlier weights output written as a
    directory). Any other directory is never deleted."""
    if not path.is_dir():
        return True
    return all(_SPARK_OUTPUT_FILE.fullmatch(entry.name) and entry.is_file()
               for entry in path.iterdir())


def check_output_path(history: str, out: str) -> Path | None:
    """The weights file must not overwrite the history dataset or sit inside it (or it inside
    the weights path), nor replace a directory holding other files. Returns the local path of
    `out` (plain or file://), None for another file system (Spark writes there)."""
    source, target = local_directory(history), local_directory(out)
    if source is not None and target is not None:
        source, target = source.resolve(), target.resolve()
        clash = target == source or source in target.parents or target in source.parents
    else:  # a remote file system: compare the URIs as written
        a, b = history.rstrip("/"), out.rstrip("/")
        clash = a == b or b.startswith(a + "/") or a.startswith(b + "/")
    if clash:
        raise HistoryInputError(f"--out {out} would overwrite or sit inside the history dataset "
                                f"{history}; write the weights elsewhere")
    if target is not None and not replaceable_output(target):
        raise HistoryInputError(f"--out {out} is a directory with other files in it; give the "
                                "path of the weights file to write (an existing directory is "
                                "never deleted)")
    return target


def write_weights(weights: DataFrame, path: str) -> None:
    """One file, rows sorted by (topic, partition): Parquet, or JSON lines for a `.json` name.

    The rows are few (one per Kafka partition), so they are gathered into one task after the
    aggregation; Spark writes a directory, which is replaced by the single file it holds. On
    a file system other than the local one (hdfs://, s3a://) the directory Spark wrote, with
    its one part file, is the output: `plan --weights` reads such a directory too.
    """
    ordered = weights.repartition(1).sortWithinPartitions("topic", "partition")
    is_json = path.endswith(".json")
    target = local_directory(path)
    if target is None:
        writer = ordered.write.mode("overwrite")
        if is_json:
            writer.json(path, ignoreNullFields=False)
        else:
            writer.parquet(path)
        return
    if not replaceable_output(target):
        raise HistoryInputError(f"--out {path} is a directory with other files in it; give "
                                "the path of the weights file to write")
    staging = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        writer = ordered.write.mode("overwrite")
        if is_json:
            writer.json(str(staging), ignoreNullFields=False)
        else:
            writer.parquet(str(staging))
        parts = sorted(staging.glob("part-*"))
        if len(parts) != 1:
            raise HistoryInputError(f"the weights job wrote {len(parts)} files, expected one")
        if target.is_dir():
            shutil.rmtree(target)
        parts[0].replace(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


_SPARK_READ_ERROR = re.compile(
    r"\[(FAILED_READ_FILE[.\w]*|CANNOT_READ_FILE_FOOTER|PARQUET_[A-Z_]+|"
    r"UNABLE_TO_INFER_SCHEMA|PATH_NOT_FOUND)\][^\n]*")


def read_failure(exc: BaseException) -> HistoryInputError | None:
    """A Spark failure caused by reading a history file, as one line; None for other failures."""
    match = _SPARK_READ_ERROR.search(str(exc))
    if match is None:
        return None
    message = re.sub(r"\s*SQLSTATE: \w+\.?", "", match.group(0)).strip()
    return HistoryInputError(f"cannot read the history dataset: {message}")


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else "unknown error"
