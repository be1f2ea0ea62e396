"""A MetricsSource over the Prometheus HTTP API (prometheus-api-client): instant queries.

Errors become MetricsErrors naming the URL and the query, so a user can paste the query into
the Prometheus UI to see what is wrong.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException

from kafka_rebalance.core.errors import InputError, MetricsError
from kafka_rebalance.core.names import visible

DEFAULT_TIMEOUT_S = 10


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
    """Instant PromQL queries against one Prometheus server; implements MetricsSource."""

    def __init__(self, url: str, timeout_s: int = DEFAULT_TIMEOUT_S) -> None:
        self._url, self._shown = checked_url(url)
        self._timeout_s = timeout_s
        self._client = PrometheusConnect(url=self._url, disable_ssl=False, timeout=timeout_s)

    @property
    def url(self) -> str:
        """The URL as messages show it (without a user or password)."""
        return self._shown

    def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        """Evaluate `promql` now: one (labels, value) per series; NaN/inf samples are dropped."""
        try:
            raw: Any = self._client.custom_query(promql, timeout=self._timeout_s)
        except (requests.exceptions.JSONDecodeError, ValueError) as exc:
            raise MetricsError(f"{self._shown} did not answer like a Prometheus server: "
                               f"{_first_line(exc)}; check --prometheus") from None
        except requests.exceptions.RequestException as exc:
            raise MetricsError(f"cannot reach Prometheus at {self._shown}: "
                               f"{type(exc).__name__}; check --prometheus") from None
        except PrometheusApiClientException as exc:
            raise MetricsError(f"Prometheus at {self._shown} rejected the query {promql!r}: "
                               f"{_first_line(exc)}") from None
        return parse_vector(raw, promql)


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


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
