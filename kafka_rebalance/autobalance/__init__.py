"""Scheduled auto-balancing: detect imbalance, plan and execute inside maintenance windows.

`windows`, `imbalance`, `cycle`, `worth` and `resume_flags` are the pure core (values in, decisions
out); `statedir` (with the lock against a second auto process) and `orchestrator` are the edge that
reads the cluster, writes plans and journals into a state directory and drives the executor, with
the outside world passed in. `kafka_rebalance.usecases.auto` connects a cycle to the real cluster
and runs the loop of cycles.
"""
