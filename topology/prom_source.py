"""The one Prometheus client (prometheus-api-client): instant queries (a MetricsSource),
range queries (a RangeSource, for history export and run reports) and the scrape interval.

Errors become MetricsErrors naming the URL and the query, so a user can paste the query into
the Prometheus UI to see what is wrong.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException

from kafka_rebalance.core.errors import InputError, MetricsError
from kafka_rebalance.core.names import visible

DEFAULT_TIMEOUT_S = 10

Series = list[tuple[dict[str, str], list[tuple[float, float]]]]
"""A range query's answer: each series' labels and its (unix seconds, value) samples."""


def checked_url(url: str) -> tuple[str, str]:
    """--prometheus as the clients use it and as messages show it: http(s) with a host, and
    any user:password left out of what is shown (messages reach terminals and logs)."""
    if not url.startswith(("http://", "https://")):
        raise InputError(f"--prometheus {visible(url)[:100]!r} must start with http:// or "
                         "https://")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 -- a port that is not a number raises here
    except ValueError as exc:
        raise InputError(f"--prometheus: not a valid URL ({exc}); e.g. "
                         "http://prometheus:9090") from None
    if not host:
        raise InputError("--prometheus: the URL names no host; e.g. http://prometheus:9090")
    shown = url
    if parts.username is not None or parts.password is not None:
        shown = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return url.rstrip("/"), visible(shown.rstrip("/"))


class PrometheusMetrics:
    """PromQL queries against one Prometheus server; implements MetricsSource and
    RangeSource."""

    def __init__(self, url: str, timeout_s: int = DEFAULT_TIMEOUT_S) -> None:
        self._url, self._shown = checked_url(url)
        self._timeout_s = timeout_s
        self._client = PrometheusConnect(url=self._url, disable_ssl=False, timeout=timeout_s)

    @property
    def url(self) -> str:
        """The URL as messages show it (without a user or password)."""
        return self._shown

    @contextmanager
    def _asking(self, promql: str) -> Iterator[None]:
        """Every failure of a query as a MetricsError that names the server and the query."""
        try:
            yield
        except (requests.exceptions.JSONDecodeError, ValueError) as exc:
            raise MetricsError(f"{self._shown} did not answer {promql!r} like a Prometheus "
                               f"server: {_first_line(exc)}; check --prometheus") from None
        except requests.exceptions.RequestException as exc:
            raise MetricsError(f"cannot reach Prometheus at {self._shown}: "
                               f"{type(exc).__name__}; check --prometheus") from None
        except PrometheusApiClientException as exc:
            status = re.search(r"HTTP Status Code (\d+)", str(exc))
            if status and status.group(1) not in ("400", "422"):  # (those are query errors)
                raise MetricsError(f"{self._shown} answered HTTP {status.group(1)} to "
                                   "Prometheus' query API (/api/v1/query): is it a Prometheus "
                                   "server? check --prometheus") from None
            raise MetricsError(f"Prometheus at {self._shown} rejected the query {promql!r}: "
                               f"{_first_line(exc)[:300]}") from None

    def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        """Evaluate `promql` now: one (labels, value) per series; NaN/inf samples are dropped."""
        with self._asking(promql):
            raw: Any = self._client.custom_query(promql, timeout=self._timeout_s)
        return parse_vector(raw, promql)

    def query_range(self, promql: str, start: float, end: float, step: float) -> Series:
        """Evaluate `promql` from `start` to `end` (unix seconds) every `step` seconds."""
        with self._asking(promql):
            raw: Any = self._client.custom_query_range(
                promql, start_time=datetime.fromtimestamp(start, tz=UTC),
                end_time=datetime.fromtimestamp(end, tz=UTC), step=f"{step:g}s")
        return parse_matrix(raw, promql)

    def scrape_interval_seconds(self) -> float | None:
        """The longest scrape interval among the server's active targets (None when the
        targets API does not answer, as behind some query front ends)."""
        from topology.history import parse_duration

        try:
            answer = requests.get(f"{self._url}/api/v1/targets", params={"state": "active"},
                                  timeout=self._timeout_s).json()
            intervals = [parse_duration(str(t["scrapeInterval"]), "scrape interval")
                         for t in answer["data"]["activeTargets"] if t.get("scrapeInterval")]
        except (requests.exceptions.RequestException, ValueError, KeyError, TypeError,
                InputError):
            return None
        return max(intervals) if intervals else None


def parse_vector(raw: Any, promql: str) -> list[tuple[dict[str, str], float]]:
    """Turn an instant-vector result into (labels, value) pairs; scalars get empty labels."""
    if isinstance(raw, list) and len(raw) == 2 and not isinstance(raw[0], dict):
        raw = [{"metric": {}, "value": raw}]  # a scalar result
    if not isinstance(raw, list):
        raise MetricsError(f"unexpected Prometheus answer to {promql!r}: not a vector")
    out: list[tuple[dict[str, str], float]] = []
    for sample in raw:
        try:
            labels = {str(k): str(v) for k, v in sample["metric"].items()}
            value = float(sample["value"][1])
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            raise MetricsError(f"unexpected Prometheus answer to {promql!r}: "
                               "sample without metric/value") from None
        if math.isfinite(value):
            out.append((labels, value))
    return sorted(out, key=lambda item: sorted(item[0].items()))


def parse_matrix(raw: Any, promql: str) -> Series:
    """Turn a range-query (matrix) answer into labels and float samples."""
    if not isinstance(raw, list):
        raise MetricsError(f"unexpected Prometheus answer to {promql!r}: not a matrix")
    out: Series = []
    for item in raw:
        try:
            labels = {str(k): str(v) for k, v in item["metric"].items()}
            samples = [(float(ts), float(v)) for ts, v in item["values"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise MetricsError(f"unexpected Prometheus answer to {promql!r}: {exc!r}") from None
        out.append((labels, samples))
    return out


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
