"""The sandbox's jar cache: Kafka, its tools, a log4j2 binding, the JMX exporter agent and
Kafka's file-system remote storage manager (for `sandbox up --tiered-storage`).

Jars come from Maven Central through the pom shipped beside this module and are copied once into
`~/.cache/kafka-rebalance/jars/<kafka version>` (or `$REBALANCE_JAR_CACHE/<version>`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from kafka_rebalance.core.errors import SandboxError

KAFKA_VERSION = "4.3.1"
JMX_EXPORTER_JAR = "jmx_prometheus_javaagent-1.0.1.jar"
SLF4J_API_JAR = "slf4j-api-2.0.16.jar"
TIERED_STORAGE_JAR = f"kafka-storage-{KAFKA_VERSION}-test.jar"  # LocalTieredStorage
POM = Path(__file__).with_name("pom.xml")
MAVEN_TIMEOUT_S = 900


def jar_dir() -> Path:
    """Where the jars of the pinned Kafka version live (whether or not fetched yet)."""
    base = os.environ.get("REBALANCE_JAR_CACHE")
    root = Path(base) if base else Path.home() / ".cache" / "kafka-rebalance" / "jars"
    return root / KAFKA_VERSION


def require_tool(name: str) -> str:
    """Return the path of an executable on PATH, or fail with what to install."""
    found = shutil.which(name)
    if found is None:
        raise SandboxError(f"'{name}' is not on PATH; install it (see scripts/install.sh)")
    return found


def jars_present(directory: Path) -> bool:
    """True when the cache holds the Kafka server jar, the logging API and the exporter agent."""
    expected = (f"kafka_2.13-{KAFKA_VERSION}.jar", SLF4J_API_JAR, JMX_EXPORTER_JAR,
                TIERED_STORAGE_JAR)
    return all((directory / name).is_file() for name in expected)


def ensure_jars(
    directory: Path | None = None, progress: Callable[[str], None] | None = None
) -> Path:
    """Return the jar directory, fetching it with Maven first when it is empty."""
    target = directory or jar_dir()
    if jars_present(target):
        return target
    mvn = require_tool("mvn")
    require_tool("java")
    if progress is not None:
        progress(f"fetching Kafka {KAFKA_VERSION} jars from Maven Central into {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as work:
        work_dir = Path(work)
        shutil.copy(POM, work_dir / "pom.xml")
        out = work_dir / "lib"
        cmd = [mvn, "-q", "-B", "-f", str(work_dir / "pom.xml"), "dependency:copy-dependencies",
               f"-DoutputDirectory={out}", "-DincludeScope=runtime"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S,
                                  check=False)
        except subprocess.TimeoutExpired as exc:
            raise SandboxError(f"maven did not fetch the Kafka jars within {MAVEN_TIMEOUT_S}s")\
                from exc
        if done.returncode != 0 or not jars_present(out):
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise SandboxError("maven could not fetch the Kafka jars: " + " | ".join(tail))
        if not jars_present(target):
            shutil.rmtree(target, ignore_errors=True)
            out.rename(target)
    return target


def main(argv: list[str]) -> int:
    """`python -m kafka_rebalance.sandbox.jars --fetch`: fill the cache (used by
    scripts/install.sh)."""
    if argv[1:] != ["--fetch"]:
        print("usage: python -m kafka_rebalance.sandbox.jars --fetch", file=sys.stderr)
        return 2
    try:
        print(ensure_jars())
    except SandboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
