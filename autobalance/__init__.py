"""Scheduled auto-balancing: detect imbalance, plan and execute inside maintenance windows.

`windows`, `imbalance` and `cycle` are the pure core (values in, decisions out); `lock`,
`statedir` and `orchestrator` are the edge that reads the cluster, writes plans and journals
into a state directory and drives the executor.
"""
