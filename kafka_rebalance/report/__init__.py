"""Views of plans and runs for people: the terminal review, the run's log lines and the HTML
reports.

`review` renders a plan's dry-run review with rich (tables, or one JSON document), laid out for
the terminal's width by `layout`; `run_lines` words a run as a log, one line per change (execute
in a pipe, and auto), and `run_status` its summary and `status`. Pure view models (`plan_view`,
`run_view`) are built from a PlanFile and journal records; `charts` draws them with matplotlib
as static SVG and `page` fills one jinja2 template, so a report is one self-contained file that
opens offline and runs no script; `files` recognizes and writes report files; `dashboard` is the
Grafana dashboard of a run.
"""
