"""Views of plans, runs and clusters for people: the terminal review, a run's live view, log
lines and summary, and the HTML reports.

`review` renders a plan's dry-run review with rich (tables, or one JSON document), laid out for
the terminal's width by `layout`; `cluster_tables` shows a snapshot's brokers and balance. A run
is shown live by `run_progress` (a panel on a terminal), worded as a log by `run_lines` (one line
per change: execute in a pipe, and auto) and summed up by `run_status` (its end and `status`).
Pure view models (`plan_view`, `run_view`) are built from a PlanFile and journal records;
`charts` draws them with matplotlib as static SVG and `page` fills one jinja2 template, so a
report is one self-contained file that opens offline and runs no script; `files` recognizes and
writes report files; `dashboard` is the Grafana dashboard of a run.
"""
