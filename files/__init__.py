"""Adapters for the files the planner reads and writes: plan files (files.planfile) and partition
weights (files.weights). The planner itself stays pure: it takes and returns values."""
