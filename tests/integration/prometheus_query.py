"""One instant PromQL query against the sandbox's Prometheus, for the sandbox tests."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from typing import Any


def prom_query(prometheus_url: str, promql: str) -> list[dict[str, Any]]:
    url = f"{prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result
