"""`rebalance` starts fast: importing the CLI loads no solver, Spark, Kafka client or numpy.

Those libraries cost about a second at start-up; the commands that need them import them when
they run. A fresh interpreter shows what `import cli` alone pulls in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("ortools", "pyspark", "confluent_kafka", "kafka", "numpy")

PROBE = ("import cli, json, sys; "
         f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")


def test_importing_the_cli_loads_no_heavy_library() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                            timeout=60, cwd=Path(__file__).resolve().parents[2], check=True)
    assert json.loads(result.stdout) == []
