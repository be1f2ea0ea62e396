"""SparkSession construction for the jobs: UTC, quiet, shuffle partitions sized to the cores.

Quiet from the first line: the driver JVM starts with a log4j2 configuration of the project's
own (errors only; Hadoop's "Unable to load native-hadoop library" warning off), so Spark prints
neither its default-profile banner, nor "Setting default log level", nor start-up warnings
about loopback addresses. Failures still reach the caller as exceptions. What the JDK itself
prints ("WARNING: Using incubator modules: jdk.incubator.vector", for the module Spark's
launcher adds) is no log and stays.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"

QUIET_LOG4J2 = "".join(f"{line}\n" for line in (
    "# Written by kafka-rebalance (spark_jobs/session.py): Spark logs errors only.",
    "status = error",
    "appender.console.type = Console",
    "appender.console.name = console",
    "appender.console.target = SYSTEM_ERR",
    "appender.console.layout.type = PatternLayout",
    "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n",
    "rootLogger.level = error",
    "rootLogger.appenderRef.console.ref = console",
    "logger.hadoop_native.name = org.apache.hadoop.util.NativeCodeLoader",
    "logger.hadoop_native.level = off",
    # The shell level Spark sets for PySpark is this logger's: at the root level, Spark prints
    # no "Setting default log level to WARN" banner.
    "logger.pyspark_gateway.name = org.apache.spark.api.python.PythonGatewayServer",
    "logger.pyspark_gateway.level = error",
))
"""The driver's log4j2 configuration (Spark 4 logs through log4j2)."""

DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def quiet_log_config(directory: Path | None = None) -> Path:
    """The quiet log4j2 file, written once per content and user (atomically, never through a
    link someone else placed) in the temp directory."""
    digest = hashlib.sha256(QUIET_LOG4J2.encode()).hexdigest()[:12]
    folder = directory or Path(tempfile.gettempdir())
    path = folder / f"kafka-rebalance-log4j2-{os.getuid()}-{digest}.properties"
    if path.is_file() and not path.is_symlink() and path.read_text() == QUIET_LOG4J2:
        return path
    handle, staging = tempfile.mkstemp(dir=folder, prefix=".kafka-rebalance-log4j2-")
    with os.fdopen(handle, "w") as out:
        out.write(QUIET_LOG4J2)
    os.replace(staging, path)
    return path


def user_sets_driver_options(submit_args: str) -> bool:
    """True when PYSPARK_SUBMIT_ARGS gives the driver JVM options or a log configuration of
    the user's own: those are left alone."""
    return any(word in submit_args for word in (
        "extraJavaOptions", "--driver-java-options", "log4j"))


def local_cores(master: str) -> int:
    """Cores a local master uses (`local`, `local[N]`, `local[*]`); the machine's for others."""
    machine = os.cpu_count() or 1
    if master == "local":
        return 1
    if master.startswith("local[") and master.endswith("]"):
        inner = master[len("local[") : -1].split(",")[0]
        return machine if inner == "*" else max(1, int(inner)) if inner.isdigit() else machine
    return machine


def build_session(
    master: str | None = DEFAULT_MASTER,
    app_name: str = "rebalance-weights",
    shuffle_partitions: int | None = None,
    driver_memory: str | None = None,
) -> SparkSession:
    """A session tuned for small-cluster aggregation jobs.

    Few shuffle partitions (one per core) because the jobs aggregate to one row per Kafka
    partition; adaptive execution on; the UI off; UTC so timestamps mean the same everywhere.
    `driver_memory` only applies when this call starts the JVM (local mode). With `master` None
    under spark-submit, the master and parallelism spark-submit was given are kept.
    """
    submitted = master is None and "PYSPARK_GATEWAY_PORT" in os.environ
    master = None if submitted else (master or DEFAULT_MASTER)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    if shuffle_partitions or (master or "").startswith("local"):
        # On a cluster, the cluster's defaults (and adaptive execution) size the shuffle.
        partitions = shuffle_partitions or local_cores(master or DEFAULT_MASTER)
        builder = builder.config("spark.sql.shuffle.partitions", str(partitions)).config(
            "spark.default.parallelism", str(partitions)
        )
    builder = (
        builder.config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1024")
    )
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    if (not submitted and SparkSession.getActiveSession() is None
            and not user_sets_driver_options(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))):
        try:
            log_config: Path | None = quiet_log_config()
        except OSError:  # no writable temp dir: Spark's own (chattier) logging then
            log_config = None
        if log_config is not None:
            builder = builder.config(DRIVER_JAVA_OPTIONS,
                                     f"-Dlog4j2.configurationFile=file:{log_config}")
    session = builder.getOrCreate()
    # Failures reach the caller as exceptions (bad input as one-line InputErrors); Spark's own
    # ERROR logs would print the same failure again as a JVM stack trace.
    session.sparkContext.setLogLevel("FATAL")
    return session
