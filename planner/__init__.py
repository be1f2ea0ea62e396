"""The planner: pure `planner.solve.plan(topology, goals, budget) -> PlanResult`, the disk lower
bound (`planner.bounds`), the validator, move ordering and the plan file.

`planner.solve` imports OR-Tools, so it is imported where it is used rather than here.
"""
