"""The application layer: each use case as a function over typed, keyword-only settings.

`plan` makes a plan (read the cluster, solve, validate, order) and rechecks a saved one; `run`
starts, resumes or cancels a run and clears the throttles it left; `auto` runs one auto-balancing
cycle against the real cluster and the loop of cycles; `cluster` connects the use cases to the real
cluster (the executor's ports, the run lease, the live topology); `snapshot` reads a live cluster
into a snapshot file; `history` exports traffic history and computes weights from it;
`run_settings` turns the execute family's flags into a run's settings; `signals` makes SIGTERM and
SIGHUP end a run or a solve as Ctrl-C does and drops output whose reader has gone. The CLI
(`cli.py`, `kafka_rebalance/commands/`) only parses flags into these settings and renders what comes
back; nothing here prints.
"""
