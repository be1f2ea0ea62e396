"""SparkSession construction for the jobs: UTC, quiet, shuffle partitions sized to the cores."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"


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
    session = builder.getOrCreate()
    # Failures reach the caller as exceptions (bad input as one-line InputErrors); Spark's own
    # ERROR logs would print the same failure again as a JVM stack trace.
    session.sparkContext.setLogLevel("FATAL")
    return session
