"""The layering, checked on the source: data flows core -> topology -> planner -> executor, the use
cases drive it, and only the CLI talks to people through the commands. A module importing a
package its layer may not see fails here, naming the file and the import. The design card's
packages sit at the top level; the rest live under kafka_rebalance/, so that an install puts no
generic top-level name into site-packages."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# What each product package may import of the project (besides itself).
MAY_IMPORT: dict[str, set[str]] = {
    "core": set(),
    "topology": {"core"},
    "planner": {"core", "topology"},
    "files": {"core", "topology", "planner"},
    "executor": {"core", "topology", "planner"},
    "spark_jobs": {"core", "topology"},
    "sandbox": {"core", "topology"},
    "autobalance": {"core", "topology", "planner", "files", "executor"},
    "report": {"core", "topology", "planner", "executor"},
    "usecases": {"core", "topology", "planner", "files", "executor", "autobalance",
                 "spark_jobs"},
    "commands": {"core", "topology", "planner", "files", "executor", "autobalance", "report",
                 "usecases", "sandbox", "spark_jobs"},
}
PROJECT = set(MAY_IMPORT) | {"cli"}
# The top level, as the design card prescribes; every other package is under kafka_rebalance/.
TOP_LEVEL = {"topology", "planner", "executor", "spark_jobs"}
HOME = "kafka_rebalance"


def package_dir(package: str) -> Path:
    return ROOT / package if package in TOP_LEVEL else ROOT / HOME / package


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if parts[0] == HOME and len(parts) > 1 else parts[0]


def imported_packages(source: str) -> set[str]:
    """The project's top-level packages a module imports (absolute imports only)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(_layer(node.module))
        elif isinstance(node, ast.Import):
            found.update(_layer(alias.name) for alias in node.names)
    return found & PROJECT


def test_imports_are_found_in_every_form() -> None:
    source = ("import kafka_rebalance.core.errors\nfrom planner import solve\n"
              "import os, executor.plan as p\nfrom kafka_rebalance.report import text\n")
    assert imported_packages(source) == {"core", "planner", "executor", "report"}


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_a_package_imports_only_the_layers_below_it(package: str) -> None:
    allowed = MAY_IMPORT[package] | {package}
    wrong = {}
    for path in sorted(package_dir(package).rglob("*.py")):
        beyond = imported_packages(path.read_text()) - allowed
        if beyond:
            wrong[str(path.relative_to(ROOT))] = sorted(beyond)
    assert not wrong


def test_every_product_package_is_in_the_map() -> None:
    top = {p.name for p in ROOT.iterdir()
           if (p / "__init__.py").exists() and p.name not in {"tests", "benchmarks"}}
    home = {p.name for p in (ROOT / HOME).iterdir() if (p / "__init__.py").exists()}
    assert top == TOP_LEVEL | {HOME}
    assert TOP_LEVEL | home == set(MAY_IMPORT)


def test_the_wheel_installs_only_distinctive_top_level_names() -> None:
    """What `pip install` puts into site-packages: the design card's packages, cli.py and
    kafka_rebalance, and no generic name such as core, files or report."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    setuptools = project["tool"]["setuptools"]
    included = {pattern.rstrip("*") for pattern in setuptools["packages"]["find"]["include"]}
    assert included == TOP_LEVEL | {HOME}
    assert setuptools["py-modules"] == ["cli"]


def test_the_planner_reads_and_writes_no_file() -> None:
    """Plan and weights files are read and written in kafka_rebalance/files/; planner/ takes and
    returns values."""
    io = {"pathlib", "pyarrow", "pandas", "json"}
    for path in sorted((ROOT / "planner").glob("*.py")):
        source = path.read_text()
        tree = ast.parse(source)
        modules = {alias.name.split(".")[0] for node in ast.walk(tree)
                   if isinstance(node, ast.Import) for alias in node.names}
        modules |= {node.module.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
        calls = {node.func.id for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
        assert not modules & io, f"{path.name} imports {sorted(modules & io)}"
        assert "open" not in calls, f"{path.name} opens a file"
        assert "topology.documents" not in source, f"{path.name} uses the document readers"
