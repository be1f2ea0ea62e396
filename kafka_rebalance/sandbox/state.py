"""The sandbox's state file (`state.json` in the sandbox dir): what runs where, with which pid.

Written by `up`/`add-broker`, read by `status`, `down` and the integration tests.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafka_rebalance.core.errors import InputError, SandboxError
from kafka_rebalance.core.names import listed
from kafka_rebalance.sandbox.links import LOOPBACK, LinkInfo, link_from_dict, link_to_dict

STATE_FILE = "state.json"
STATE_VERSION = 1
# Written by `up` before anything else and kept by `down`: the dir is a sandbox (running or
# stopped), so `up` may reuse it, `down` knows it and `down --purge` may delete what it wrote.
MARKER_FILE = ".rebalance-sandbox"
CAPACITIES_FILE = "capacities.yaml"
# What `up` deletes (RESET_DIRS, broker-N/) or writes at the top of a sandbox dir: a directory
# holding any of these that is not a sandbox already is refused by the CLI without --force.
REMOTE_DIR = "remote-storage"  # what stands for remote storage (`up --tiered-storage`)
RESET_DIRS = ("controller", "prometheus-data", "logs", REMOTE_DIR)
WRITTEN_NAMES = (*RESET_DIRS, STATE_FILE, "log4j2.properties", "exporter.yml", "prometheus.yml",
                 CAPACITIES_FILE, MARKER_FILE)
BROKER_DIR_PREFIX = "broker-"
_BROKER_DIR = re.compile(r"broker-[0-9]+")
_STATE_TMP = "state.tmp"


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
    link: LinkInfo | None = None
    """The shaped network (`up --link-mbps`); None: everything on loopback."""
    tiered_storage: bool = False
    """Brokers keep older segments of topics with remote.storage.enable in a shared directory
    (`up --tiered-storage`, Kafka's LocalTieredStorage)."""
    log_dirs: int = 1
    """Log dirs per broker (`up --log-dirs`): more than one is a JBOD broker (KIP-858)."""
    metric_names: str = "sandbox"
    """How the exporter names series (`up --metric-names`): "sandbox" (topology.promql's
    names, labelled broker_id) or "strimzi" (kafka_server_brokertopicmetrics_... as Strimzi's
    rules name them, labelled broker), for testing a --queries file for such a cluster."""

    quota_window_samples: int | None = None
    """replication.quota.window.num of every broker (`up(quota_window_samples=...)`); None:
    Kafka's default (11 samples of 1 s). The tests keep it short so runs wait less, and the
    executor reads it back from the brokers like any other cluster's."""

    def data_dirs(self, broker_id: int) -> tuple[Path, ...]:
        """A broker's log dirs: broker-N/data, then broker-N/data-2, ... on a JBOD sandbox."""
        node = self.dir / f"broker-{broker_id}"
        return (node / "data", *(node / f"data-{i}" for i in range(2, self.log_dirs + 1)))

    def broker_host(self, broker_id: int) -> str:
        """Where a broker and its exporter listen: its namespace's address, else loopback."""
        return LOOPBACK if self.link is None else self.link.address(broker_id)

    @property
    def link_mbps(self) -> int | None:
        """Rate of each broker's link each way, None on loopback."""
        return None if self.link is None else self.link.mbps

    @property
    def controller_host(self) -> str:
        """The controller listens on the bridge, where the brokers' namespaces reach it."""
        return LOOPBACK if self.link is None else self.link.bridge_address

    @property
    def bootstrap(self) -> str:
        """Bootstrap servers of every broker, "HOST:PORT,..." (127.0.0.1 on loopback)."""
        return ",".join(f"{self.broker_host(b.id)}:{b.port}" for b in self.brokers)

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
        """JSON-ready description printed by `sandbox up/status --json` (`link` only for a
        linked sandbox)."""
        described: dict[str, Any] = {
            "dir": str(self.dir),
            "bootstrap": self.bootstrap,
            "prometheus_url": self.prometheus_url,
            "controller": f"{self.controller_host}:{self.controller_port}",
            "brokers": [asdict(b) for b in self.brokers],
        }
        if self.link is not None:
            described["link"] = link_to_dict(self.link)
        return described


def replaced_entries(sandbox_dir: Path) -> list[str]:
    """Names in `sandbox_dir` that `up` would overwrite or delete (sorted)."""
    if not sandbox_dir.is_dir():
        return []
    return sorted(entry.name for entry in sandbox_dir.iterdir()
                  if entry.name in WRITTEN_NAMES or entry.name.startswith(BROKER_DIR_PREFIX))


def written_entries(sandbox_dir: Path) -> list[Path]:
    """What the sandbox wrote at the top of its dir (sorted, the marker last): the entries
    `down --purge` deletes. Only names the sandbox itself writes; broker dirs exactly
    `broker-<id>`, so a user's `broker-notes.txt` beside them is never taken."""
    if not sandbox_dir.is_dir():
        return []
    names = {*WRITTEN_NAMES, _STATE_TMP} - {MARKER_FILE}
    found = sorted(entry for entry in sandbox_dir.iterdir()
                   if entry.name in names
                   or (_BROKER_DIR.fullmatch(entry.name) and entry.is_dir()
                       and not entry.is_symlink()))
    marker = sandbox_dir / MARKER_FILE
    return [*found, marker] if marker.exists() or marker.is_symlink() else found


@dataclass(frozen=True)
class Marker:
    """The sandbox marker: whether `up` created the dir itself (then `--purge` removes it)."""

    created_dir: bool


def write_marker(sandbox_dir: Path, created_dir: bool) -> None:
    """Mark sandbox_dir as a sandbox (kept when one is there already: the first `up` knows
    whether it created the dir)."""
    path = sandbox_dir / MARKER_FILE
    if path.is_file():
        return
    document = {"version": 1, "created_dir": created_dir,
                "created_at": datetime.now(UTC).isoformat(timespec="seconds")}
    path.write_text(json.dumps(document) + "\n")


def read_marker(sandbox_dir: Path) -> Marker | None:
    """The marker of a sandbox dir; None when there is none (a damaged one claims nothing)."""
    try:
        document = json.loads((sandbox_dir / MARKER_FILE).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(document, dict):
        return None
    return Marker(created_dir=document.get("created_dir") is True)


def is_sandbox_dir(sandbox_dir: Path) -> bool:
    """True when a sandbox was started in sandbox_dir (running or stopped since)."""
    return (sandbox_dir / MARKER_FILE).is_file() or state_path(sandbox_dir).is_file()


def check_up_dir(sandbox_dir: Path, force: bool) -> None:
    """`up` needs a directory (made if missing); in one that is not a sandbox yet it would
    overwrite or delete what it names (logs/, broker-N/, prometheus.yml, ...): only with
    --force. Checked before anything is started, downloaded or written."""
    if sandbox_dir.exists() and not sandbox_dir.is_dir():
        raise InputError(f"--dir {sandbox_dir} is a file, not a directory; give a directory "
                         "for the sandbox (it is created if missing)")
    clash = replaced_entries(sandbox_dir)
    if clash and not force and not is_sandbox_dir(sandbox_dir.resolve()):
        raise InputError(f"--dir {sandbox_dir} is not a sandbox but holds {listed(clash, 5)}, "
                         "which `up` would overwrite or delete; choose another --dir, or pass "
                         "--force")


def next_broker_id(info: SandboxInfo) -> int:
    """The id `add-broker` gives the next broker."""
    return max(b.id for b in info.brokers) + 1


def state_path(sandbox_dir: Path) -> Path:
    return sandbox_dir / STATE_FILE


def write_state(info: SandboxInfo) -> None:
    """Write state.json atomically (rename), so readers never see half a file."""
    data = asdict(info)
    del data["link"]
    if info.link is not None:  # absent on loopback: the same file as before links existed
        data["link"] = link_to_dict(info.link)
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
            link=link_from_dict(data["link"]) if data.get("link") is not None else None,
            tiered_storage=bool(data.get("tiered_storage", False)),
            log_dirs=int(data.get("log_dirs", 1)),
            metric_names=str(data.get("metric_names", "sandbox")),
            quota_window_samples=(None if data.get("quota_window_samples") is None
                                  else int(data["quota_window_samples"])),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise SandboxError(f"{path} is not a sandbox state file ({exc}); remove the dir") from exc
