"""The spark-submit recipe in spark_jobs/README.md ships a zip of the packages the weights job
imports: the job must import nothing else of this project."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PROJECT = ("kafka_rebalance", "topology", "planner", "executor", "spark_jobs", "cli")


def test_the_weights_job_imports_only_what_the_readme_ships() -> None:
    listed = subprocess.run(
        [sys.executable, "-c", "import sys, spark_jobs.weights\n"
         f"print('\\n'.join(m for m in sys.modules if m.split('.')[0] in {PROJECT!r}))"],
        capture_output=True, text=True, check=True, cwd=REPO).stdout.split()
    recipe = re.search(r"zip -r rebalance_jobs\.zip (.+)", (REPO / "spark_jobs" / "README.md")
                       .read_text()).group(1).split()
    inits = {e.removesuffix("/__init__.py").replace("/", ".") for e in recipe
             if e.endswith("/__init__.py")}  # the package's own module, not its subpackages
    trees = {e.rstrip("/").replace("/", ".") for e in recipe if not e.endswith(".py")}
    outside = [m for m in listed
               if m not in inits and not any(m == s or m.startswith(s + ".") for s in trees)]
    assert not outside, f"the weights job imports {outside}, which the zip does not ship"
    assert "spark_jobs.weights" in listed
