"""`rebalance dashboard`: the Grafana dashboard of a run, for the PromQL templates `execute`
uses (its defaults, or a --queries file for an exporter that names series differently)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kafka_rebalance.commands.execute_cmd import QueriesFile
from kafka_rebalance.commands.render import FORCE_HELP, say
from kafka_rebalance.core.names import visible
from kafka_rebalance.files.outputs import Output, check_output
from kafka_rebalance.report.dashboard import dashboard, is_dashboard_file, to_json
from kafka_rebalance.usecases.run_settings import read_queries
from topology.documents import write_json_atomic


def dashboard_cmd(
    queries_file: QueriesFile = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Write the dashboard here (Grafana's JSON model: import it, or provision "
        "it from a file); default: print it.")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help=FORCE_HELP.format(what="dashboard"))] = False,
) -> None:
    """Print (or write) the Grafana dashboard of a run: the executor's own metrics (execute
    --metrics-port) and the broker series its gates read, with the same PromQL templates as
    `execute --queries FILE`, so its panels show what the gates see on any exporter."""
    if out is not None:
        check_output(Output(out, "--out", "dashboard", is_dashboard_file),
                     {"--queries": queries_file}, force)
    queries, _ = read_queries("auto", queries_file)  # the file's window, else the default
    model = dashboard(queries)
    if out is None:
        sys.stdout.write(to_json(model))
        return
    write_json_atomic(out, model, indent=2)
    say(f"wrote {visible(str(out))}: import it in Grafana (Dashboards > New > Import), "
        "with the Prometheus that execute --prometheus reads as its data source")
