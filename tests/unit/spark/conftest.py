"""One local SparkSession for the whole test run: one core, one shuffle partition, no UI."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from spark_jobs.session import build_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("local[1]", app_name="rebalance-unit-tests", shuffle_partitions=1)
    session.conf.set("spark.sql.adaptive.enabled", "false")
    yield session
    session.stop()
