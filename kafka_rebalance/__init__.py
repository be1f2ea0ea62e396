"""kafka-rebalance's application packages, under one distinctive name so an install neither
shadows nor is shadowed by another project: `core` (errors, ports, names), `files` (plan and
weights files), `usecases` (one function per job), `commands` (the CLI's parsing and
rendering), `report` (reviews and HTML reports), `autobalance` (scheduled balancing) and
`sandbox` (the local real cluster). The design card's packages stay at the top level:
`topology/`, `planner/`, `executor/`, `spark_jobs/` and `cli.py`."""
