"""The sandbox's state file (`state.json` in the sandbox dir): what runs where, with which pid.

Written by `up`/`add-broker`, read by `status`, `down` and the integration tests.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from topology.errors import SandboxError

STATE_FILE = "state.json"
STATE_VERSION = 1
# What `up` deletes (RESET_DIRS, broker-N/) or writes at the top of a sandbox dir: a directory
# holding any of these that is not a sandbox already is refused by the CLI without --force.
RESET_DIRS = ("controller", "prometheus-data", "logs")
WRITTEN_NAMES = (*RESET_DIRS, STATE_FILE, "log4j2.properties", "exporter.yml", "prometheus.yml")
BROKER_DIR_PREFIX = "broker-"


@dataclass(frozen=True)
class BrokerInfo:
    """One broker process of the sandbox."""

    id: int
    rack: str
    port: int
    metrics_port: int
    pid: int


@dataclass(frozen=True)
class SandboxInfo:
    """A running (or recorded) sandbox: addresses for clients, pids for `down`."""

    dir: Path
    base_port: int
    cluster_id: str
    jar_dir: Path
    controller_port: int
    controller_pid: int
    prometheus_port: int
    prometheus_pid: int
    brokers: tuple[BrokerInfo, ...]
    internal_rf: int

    @property
    def bootstrap(self) -> str:
        """Bootstrap servers of every broker, "127.0.0.1:PORT,..."."""
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers)

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.prometheus_port}"

    def pids(self) -> dict[str, int]:
        """Every process of the sandbox by role name."""
        named = {f"broker-{b.id}": b.pid for b in self.brokers}
        named["controller"] = self.controller_pid
        named["prometheus"] = self.prometheus_pid
        return named

    def with_broker(self, broker: BrokerInfo) -> SandboxInfo:
        return replace(self, brokers=(*self.brokers, broker))

    def summary(self) -> dict[str, Any]:
        """JSON-ready description printed by `sandbox up/status --json`."""
        return {
            "dir": str(self.dir),
            "bootstrap": self.bootstrap,
            "prometheus_url": self.prometheus_url,
            "controller": f"127.0.0.1:{self.controller_port}",
            "brokers": [asdict(b) for b in self.brokers],
        }


def replaced_entries(sandbox_dir: Path) -> list[str]:
    """Names in `sandbox_dir` that `up` would overwrite or delete (sorted)."""
    if not sandbox_dir.is_dir():
        return []
    return sorted(entry.name for entry in sandbox_dir.iterdir()
                  if entry.name in WRITTEN_NAMES or entry.name.startswith(BROKER_DIR_PREFIX))


def state_path(sandbox_dir: Path) -> Path:
    return sandbox_dir / STATE_FILE


def write_state(info: SandboxInfo) -> None:
    """Write state.json atomically (rename), so readers never see half a file."""
    data = asdict(info)
    data["version"] = STATE_VERSION
    data["dir"] = str(info.dir)
    data["jar_dir"] = str(info.jar_dir)
    target = state_path(info.dir)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, target)


def read_state(sandbox_dir: Path) -> SandboxInfo | None:
    """The recorded sandbox in a dir, or None when there is none."""
    path = state_path(sandbox_dir)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        return SandboxInfo(
            dir=Path(data["dir"]), base_port=int(data["base_port"]),
            cluster_id=str(data["cluster_id"]), jar_dir=Path(data["jar_dir"]),
            controller_port=int(data["controller_port"]),
            controller_pid=int(data["controller_pid"]),
            prometheus_port=int(data["prometheus_port"]),
            prometheus_pid=int(data["prometheus_pid"]),
            brokers=tuple(BrokerInfo(**b) for b in data["brokers"]),
            internal_rf=int(data["internal_rf"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise SandboxError(f"{path} is not a sandbox state file ({exc}); remove the dir") from exc
