"""Adapters for the files the planner reads and writes: plan files (kafka_rebalance.files.planfile)
and partition weights (kafka_rebalance.files.weights). The planner itself stays pure: it takes and
returns values."""
