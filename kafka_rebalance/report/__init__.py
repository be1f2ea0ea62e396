"""Views of plans and runs for people: the terminal review and the HTML reports.

`review` renders a plan's dry-run review with rich (tables, or one JSON document); `text`
holds the compact units every view shares. Pure view models (`schedule`, `plan_view`,
`run_view`) are built from a PlanFile and journal records; `charts` draws them with matplotlib
as static SVG and `page` fills one jinja2 template, so a report is one self-contained file that
opens offline and runs no script.
"""
