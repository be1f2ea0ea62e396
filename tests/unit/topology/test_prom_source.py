"""The Prometheus adapter's answer parsing and its errors (no server needed)."""

from __future__ import annotations

import socket

import pytest

from kafka_rebalance.core.errors import InputError, MetricsError
from topology.prom_source import PrometheusMetrics, parse_vector
from topology.promql import TEMPLATES, TOPIC_BYTES_IN_RATE, render


def test_vector_samples_become_sorted_label_value_pairs_without_nan() -> None:
    raw = [{"metric": {"topic": "b"}, "value": [1.0, "2.5"]},
           {"metric": {"topic": "a"}, "value": [1.0, "1e3"]},
           {"metric": {"topic": "c"}, "value": [1.0, "NaN"]},
           {"metric": {"topic": "d"}, "value": [1.0, "+Inf"]}]
    assert parse_vector(raw, "q") == [({"topic": "a"}, 1000.0), ({"topic": "b"}, 2.5)]


def test_scalar_results_get_empty_labels() -> None:
    assert parse_vector([1.0, "7"], "scalar(q)") == [({}, 7.0)]


@pytest.mark.parametrize("raw", [{"metric": {}}, [{"metric": {}}], [{"value": [1, "x"]}]])
def test_malformed_answers_are_metrics_errors_naming_the_query(raw: object) -> None:
    with pytest.raises(MetricsError, match="my_query"):
        parse_vector(raw, "my_query")


def test_url_needs_a_scheme() -> None:
    with pytest.raises(InputError, match="http://"):
        PrometheusMetrics("127.0.0.1:9090")


def test_unreachable_prometheus_is_a_metrics_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    metrics = PrometheusMetrics(f"http://127.0.0.1:{port}", timeout_s=2)
    with pytest.raises(MetricsError, match=f"cannot reach Prometheus at http://127.0.0.1:{port}"):
        metrics.query("up")


def test_templates_render_window_and_selector() -> None:
    assert render(TOPIC_BYTES_IN_RATE, "5m") == (
        "sum by (topic) (rate(kafka_topic_bytes_in_total{}[5m]))")
    assert 'broker_id="3"' in render(TOPIC_BYTES_IN_RATE, "1m", 'broker_id="3"')
    for name, template in TEMPLATES.items():
        text = render(template, "1m", 'rack="a"')
        assert text.count("{") == text.count("}") and text.count("(") == text.count(")"), name
        assert 'rack="a"' in text and "{window}" not in text, name


@pytest.mark.parametrize("template", ["{window.__class__}", "rate(x[{window!r}])",
                                      "x[{window:>99999999}]", "{0}", "{}", "{broker}"])
def test_a_template_field_other_than_the_plain_three_is_refused(template: str) -> None:
    """A --queries file is the operator's, but a template is filled, never evaluated."""
    with pytest.raises(ValueError, match="unknown field"):
        render(template, "1m")


def test_a_web_server_that_is_not_prometheus_is_named_in_one_short_line() -> None:
    """A plain HTTP server on the --prometheus port answers 404 with an HTML page: the error
    says so in one line, not with the page's bytes (it printed 400 characters of HTML)."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class NotFound(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        with pytest.raises(MetricsError) as caught:
            PrometheusMetrics(url, timeout_s=5).query("up")
    finally:
        server.shutdown()
    assert str(caught.value) == (f"{url} answered HTTP 404 to Prometheus' query API "
                                 "(/api/v1/query): is it a Prometheus server? check --prometheus")
