"""Typer command groups of the `rebalance` CLI: parse flags, call the core, render with rich."""
