"""HTML reports of a plan (the review as pictures) and of a run (the plan plus its journal).

Pure view models (`schedule`, `plan_view`, `run_view`) are built from a PlanFile and journal
records; `charts` draws them with matplotlib as static SVG and `page` fills one jinja2 template,
so a report is one self-contained file that opens offline and runs no script.
"""
