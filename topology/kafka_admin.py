"""The Kafka adapter: the one module that imports confluent-kafka and kafka-python.

`KafkaClusterAdmin` implements the `KafkaAdmin` port. confluent-kafka (librdkafka) answers
metadata, configs and leader election; kafka-python covers the admin APIs confluent-kafka lacks
(AlterPartitionReassignments, ListPartitionReassignments, DescribeLogDirs) and is opened only
when one of those is first needed. Every call is bounded by `timeout_s`, and client errors
become ClusterErrors whose messages name the bootstrap address and what to check.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

import kafka.errors as kp_errors
from confluent_kafka import ElectionType, KafkaError, KafkaException
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # re-exported, untyped
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from kafka.admin import KafkaAdminClient
from kafka.structs import TopicPartition as KpTopicPartition
from kafka.structs import TopicPartitionReplica as KpTopicPartitionReplica

from kafka_rebalance.core.errors import ClusterError, TopicGone
from kafka_rebalance.core.ports import (
    CORDONED_LOG_DIRS,
    QUOTA_WINDOW_NUM,
    QUOTA_WINDOW_SIZE,
    BrokerInfo,
    BrokerLogDirs,
    ConfigChanges,
    LogDirInfo,
    PartitionInfo,
    ReassignmentState,
    ReplicaOnBroker,
    replica_sizes,
)
from topology.bootstrap import (
    BootstrapServer,
    bootstrap_string,
    parse_bootstrap,
    refused_everywhere,
    refusing,
)
from topology.model import TopicPartition
from topology.security import SecuritySettings

_LOG = logging.getLogger("rebalance.kafka")
_LOG.addHandler(logging.NullHandler())  # librdkafka logs go here, never straight to stderr

_T = TypeVar("_T")

DEFAULT_TIMEOUT_S = 10.0
# A broker is probed for connections (KafkaClusterAdmin.brokers) at most this often: one
# killed is fenced by the controller within broker.session.timeout.ms (9 s by default) anyway.
PROBE_EVERY_SECONDS = 5.0
READ_TRIES = 3  # a metadata read asked of new clients after a connection failure (_read)
_UNREACHABLE = {KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
                KafkaError._RESOLVE, KafkaError._WAIT_COORD}
_AUTH = {KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED,
         KafkaError._SSL, KafkaError.CLUSTER_AUTHORIZATION_FAILED}


def _kafka_error(exc: BaseException) -> KafkaError | None:
    arg = exc.args[0] if exc.args else None
    return arg if isinstance(arg, KafkaError) else None


class KafkaClusterAdmin:
    """The real KafkaAdmin: confluent-kafka first, kafka-python where it must."""

    def __init__(self, bootstrap: str, security: SecuritySettings | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self._servers = parse_bootstrap(bootstrap)
        self._bootstrap = bootstrap_string(self._servers)
        self._security = security or SecuritySettings()
        self._timeout_s = timeout_s
        conf: dict[str, Any] = {"bootstrap.servers": self._bootstrap,
                                "client.id": "kafka-rebalance",
                                "logger": _LOG, "error_cb": self._remember_error,
                                **self._security.confluent_config()}
        self._last_error: KafkaError | None = None
        self._conf = conf
        try:
            self._admin = AdminClient(conf)
        except (KafkaException, ValueError, TypeError) as exc:
            raise ClusterError(f"invalid Kafka client settings: {_short(exc)}") from None
        self._kp: KafkaAdminClient | None = None
        self._probed = False  # something listened at the bootstrap list once
        self._reconnects = 0  # new clients made after a call found the cluster unreachable
        self._answered: dict[int, tuple[float, bool]] = {}  # broker -> probed when, answering

    # -- error translation -------------------------------------------------------------

    @contextmanager
    def _calling(self, action: str) -> Iterator[None]:
        """Turn client exceptions raised while doing `action` into actionable ClusterErrors.
        The first call looks whether anything listens at the bootstrap list at all."""
        if not self._probed:
            refused = refused_everywhere(self._servers)
            if refused is not None:
                raise self._unreachable(action, refused, probed=True)
            self._probed = True
        try:
            yield
        except ClusterError:
            raise
        except TimeoutError:
            error = self._unreachable(action, f"no answer within {self._timeout_s:g} s")
            self._reconnect()
            raise error from None
        except KafkaException as exc:
            error = self._from_confluent(action, exc)
            code = _kafka_error(exc)
            if code is not None and code.code() in _UNREACHABLE:
                self._reconnect()
            raise error from None
        except kp_errors.KafkaError as exc:
            self._reconnect()
            raise self._from_kafka_python(action, exc) from None

    def _reconnect(self) -> None:
        """New clients after a call found the cluster unreachable. Both clients keep the node
        they took for the controller (in KRaft a broker named at random) until their next
        metadata refresh, minutes away: when that broker dies, every controller-bound call
        waits for it and times out. New clients bootstrap again and pick a live one."""
        self._reconnects += 1
        kp, self._kp = self._kp, None
        if kp is not None:
            with contextlib.suppress(Exception):
                kp.close()
        with contextlib.suppress(KafkaException, ValueError, TypeError):
            self._admin = AdminClient(self._conf)

    def _remember_error(self, error: KafkaError) -> None:
        """librdkafka's background errors (e.g. failed SASL) explain a later timeout."""
        self._last_error = error

    def _unreachable(self, action: str, detail: str, probed: bool = False) -> ClusterError:
        """`probed`: `detail` already says which servers refuse connections."""
        self._admin.poll(0)  # serve queued error callbacks
        last = self._last_error
        if last is not None and last.code() in _AUTH:
            return ClusterError(f"Kafka at {self._bootstrap} refused the client: {last.str()} "
                                f"(while trying to {action}); check the SASL/TLS settings "
                                "(--command-config, REBALANCE_*)")
        if last is not None:
            detail = f"{detail}; client reports: {last.str()}"
        down, up = (refusing(self._servers) if len(self._servers) > 1 and not probed
                    else ([], 0))
        if down and up:  # name the brokers that are down, not the whole list
            detail = (f"{detail}; {'; '.join(down)} (the other {up} of the bootstrap list "
                      "accept connections)")
        return ClusterError(f"cannot reach Kafka at {self._bootstrap}: {detail} (while trying "
                            f"to {action}); check --bootstrap, that the brokers are up, and the "
                            "security settings")

    def _from_confluent(self, action: str, exc: KafkaException) -> ClusterError:
        err = _kafka_error(exc)
        detail = err.str() if err is not None else _short(exc)
        code = err.code() if err is not None else None
        if code in _UNREACHABLE:
            return self._unreachable(action, detail)
        if code in _AUTH:
            return ClusterError(f"Kafka at {self._bootstrap} refused the client: {detail}; "
                                "check the SASL/TLS settings (--command-config, REBALANCE_*)")
        return ClusterError(f"Kafka could not {action}: {detail}")

    def _from_kafka_python(self, action: str, exc: kp_errors.KafkaError) -> ClusterError:
        if isinstance(exc, kp_errors.KafkaTimeoutError | kp_errors.KafkaConnectionError
                      | kp_errors.NodeNotReadyError):
            return self._unreachable(action, _short(exc))
        return ClusterError(f"Kafka could not {action}: {_short(exc)}")

    def _config_result(self, resource: ConfigResource, future: Future[_T], action: str) -> _T:
        """A config future's result; a broker resource whose own broker does not answer names
        that broker, not the bootstrap list (broker configs are served by the broker itself,
        so one dead broker fails only its own resource while the cluster answers)."""
        try:
            return self._result(future)
        except (KafkaException, TimeoutError) as exc:
            err = _kafka_error(exc)
            if (resource.restype == ResourceType.TOPIC and err is not None
                    and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
                raise TopicGone(f"topic {resource.name!r} does not exist (while trying to "
                                f"{action})") from None
            if resource.restype != ResourceType.BROKER or (
                    err is not None and err.code() not in _UNREACHABLE):
                raise
            detail = err.str() if err is not None else f"no answer within {self._timeout_s:g} s"
            self._reconnect()
            raise ClusterError(f"broker {resource.name} did not answer (while trying to "
                               f"{action} of broker {resource.name}): {detail}; check that "
                               "it is up and reachable from here") from None

    def _result(self, future: Future[_T]) -> _T:
        """Wait for a confluent-kafka future, a little longer than the request timeout."""
        return future.result(timeout=self._timeout_s + 5)

    def _read(self, action: str, call: Callable[[], _T]) -> _T:
        """A metadata read, asked once more from new clients when the first try found the
        cluster unreachable: a client keeps sending to the broker it picked until its next
        metadata refresh, so a broker that has just died times out a read the live ones would
        answer (seen when a broker was killed: "cannot reach Kafka ... the other 3 of the
        bootstrap list accept connections"). New clients pick a node again, and may pick the
        dead one again while it is still registered: READ_TRIES in all. A cluster that is
        really away fails every one."""
        for _ in range(READ_TRIES - 1):
            reconnects = self._reconnects
            try:
                with self._calling(action):
                    return call()
            except ClusterError:
                if self._reconnects == reconnects:
                    raise  # not a connection failure: asking again would not help
        with self._calling(action):
            return call()

    def _kafka_python(self) -> KafkaAdminClient:
        """The kafka-python admin client, opened on first use."""
        if self._kp is None:
            timeout_ms = int(self._timeout_s * 1000)
            with self._calling("connect the kafka-python admin client"):
                self._kp = KafkaAdminClient(
                    bootstrap_servers=[str(server) for server in self._servers],
                    client_id="kafka-rebalance", bootstrap_timeout_ms=timeout_ms,
                    request_timeout_ms=timeout_ms, **self._security.kafka_python_kwargs())
        return self._kp

    # -- metadata ----------------------------------------------------------------------

    def brokers(self) -> list[BrokerInfo]:
        """Live brokers with racks (DescribeCluster), sorted by id; but one whose address
        refuses connections: a broker killed moments ago stays listed until the controller
        fences it (broker.session.timeout.ms, 9 s by default), and every call to it waits
        out its timeout meanwhile."""
        desc = self._read("describe the cluster", lambda: self._result(
            self._admin.describe_cluster(request_timeout=self._timeout_s)))
        listed = sorted((BrokerInfo(n.id, n.host, n.port, n.rack or None) for n in desc.nodes),
                        key=lambda b: b.id)
        return self._answering(listed)

    def _answering(self, brokers: list[BrokerInfo]) -> list[BrokerInfo]:
        """`brokers` but those whose address definitely refuses a TCP connection (the port
        closed, no route; a slow one counts as answering), each probed at most every
        PROBE_EVERY_SECONDS, side by side."""
        now = time.monotonic()
        due = [b for b in brokers if b.id not in self._answered
               or now - self._answered[b.id][0] >= PROBE_EVERY_SECONDS]
        if due:
            with ThreadPoolExecutor(max_workers=min(16, len(due))) as pool:
                refused = list(pool.map(lambda b: refused_everywhere(
                    (BootstrapServer(b.host, b.port),)) is not None, due))
            self._answered.update({b.id: (now, not down)
                                 for b, down in zip(due, refused, strict=True)})
        return [b for b in brokers if self._answered[b.id][1]]

    def registered_racks(self) -> dict[int, str | None]:
        """Every registered broker's rack, fenced ones included: kafka-python's
        DescribeCluster asks for fenced brokers (v2, KIP-1073), which confluent-kafka's does
        not; an older cluster answers with its live brokers only."""
        described = self._read("describe the cluster's registered brokers",
                               lambda: self._kafka_python().describe_cluster())
        return {int(b["broker_id"]): (b.get("rack") or None) for b in described["brokers"]}

    def partitions(self, topics: Iterable[str] | None = None) -> list[PartitionInfo]:
        """Every partition of `topics` (all topics, internal ones included, when None).

        A topic that reports an error and no partitions (being created or deleted right now)
        is left out of a full listing, and is an error when asked for by name.
        """
        wanted = None if topics is None else set(topics)
        metadata = self._read("list topics",
                              lambda: self._admin.list_topics(timeout=self._timeout_s))
        if wanted is not None:
            missing = sorted(wanted - set(metadata.topics))
            if missing:
                raise TopicGone(f"topic {missing[0]!r} does not exist on {self._bootstrap}")
        out: list[PartitionInfo] = []
        for name, topic in metadata.topics.items():
            if wanted is not None and name not in wanted:
                continue
            error = topic.error
            if error is not None and error.code() != KafkaError.NO_ERROR and not topic.partitions:
                if wanted is None:
                    _LOG.debug("skipping topic %s: %s", name, error.str())
                    continue
                raise ClusterError(f"Kafka reports topic {name!r} as unusable: "
                                   f"{error.str()}; retry once it is created")
            for pm in topic.partitions.values():
                leader = pm.leader if pm.leader is not None and pm.leader >= 0 else None
                out.append(PartitionInfo(name, pm.id, tuple(pm.replicas), tuple(pm.isrs), leader))
        return sorted(out, key=lambda p: (p.topic, p.partition))

    def log_dir_sizes(self, broker_ids: Iterable[int]) -> dict[tuple[TopicPartition, int], int]:
        """Replica sizes from DescribeLogDirs; future (intra-broker move) replicas are skipped."""
        return replica_sizes(self.log_dirs(broker_ids))

    def log_dirs(self, broker_ids: Iterable[int]) -> dict[int, BrokerLogDirs]:
        """Each broker's log dirs and where its replicas are (DescribeLogDirs). A replica listed
        in several dirs of one broker (it should not be) is taken at its largest.

        A broker that does not answer is left out: one just killed stays registered until the
        controller fences it (broker.session.timeout.ms, 9 s by default), and must not make
        the whole cluster look unreachable. ClusterError when none answers."""
        ids = sorted(set(broker_ids))
        if not ids:
            return {}
        try:
            return self._log_dirs(ids)
        except ClusterError:
            if len(ids) == 1:
                raise
        found: dict[int, BrokerLogDirs] = {}
        failure: ClusterError | None = None
        for broker in ids:  # one at a time, to find which does not answer
            try:
                found.update(self._log_dirs([broker]))
            except ClusterError as exc:
                failure = exc
        if not found and failure is not None:
            raise failure
        return found

    def _log_dirs(self, ids: list[int]) -> dict[int, BrokerLogDirs]:
        answers = self._read("describe log dirs",
                             lambda: self._kafka_python().describe_log_dirs(brokers=ids))
        return {int(answer["broker"]): _broker_log_dirs(answer["log_dirs"]) for answer in answers}

    def alter_replica_log_dirs(self, targets: Mapping[ReplicaOnBroker, str]
                               ) -> dict[ReplicaOnBroker, str | None]:
        """AlterReplicaLogDirs, one request per broker; per replica the error's name or None."""
        if not targets:
            return {}
        request = {KpTopicPartitionReplica(tp.topic, tp.partition, broker): path
                   for (tp, broker), path in targets.items()}
        with self._calling("alter replica log dirs"):
            answers = self._kafka_python().alter_replica_log_dirs(request)
        return {(TopicPartition(r.topic, r.partition), r.broker_id):
                None if error is kp_errors.NoError else error.__name__
                for r, error in answers.items()}

    # -- configs -----------------------------------------------------------------------

    def _described(self, resources: list[ConfigResource]
                   ) -> dict[str, Mapping[str, ConfigEntry]]:
        """Every config entry of each resource, by resource name (a deleted topic left out)."""
        if not resources:
            return {}
        # asked again from new clients when the first try found the cluster unreachable: the
        # client may have taken a broker that has just died for the controller (_read)
        return self._read("describe configs", lambda: self._describe_each(resources))

    def _describe_each(self, resources: list[ConfigResource]
                       ) -> dict[str, Mapping[str, ConfigEntry]]:
        out: dict[str, Mapping[str, ConfigEntry]] = {}
        # every batch is sent before any answer is awaited: one round trip, not one per broker
        futures = [f for batch in _batches(resources) for f in
                   self._admin.describe_configs(batch, request_timeout=self._timeout_s).items()]
        for resource, future in futures:
            try:
                out[resource.name] = self._config_result(resource, future, "describe configs")
            except TopicGone:  # (_config_result's name for UNKNOWN_TOPIC_OR_PART)
                continue  # a deleted topic has no configs left to read or restore
        return out

    def _describe(self, resources: list[ConfigResource], names: Sequence[str],
                  dynamic: ConfigSource) -> dict[str, dict[str, str | None]]:
        return {resource: {name: _dynamic_value(entries.get(name), dynamic) for name in names}
                for resource, entries in self._described(resources).items()}

    def broker_configs(self, broker_ids: Iterable[int], names: Sequence[str]) -> dict[
        int, dict[str, str | None]
    ]:
        """Per-broker dynamic values of `names` (None when not set on that broker)."""
        found = self._describe(_broker_resources(broker_ids), names,
                               ConfigSource.DYNAMIC_BROKER_CONFIG)
        return {int(name): values for name, values in found.items()}

    def cordoned_brokers(self, broker_ids: Iterable[int]) -> frozenset[int]:
        """Brokers whose `cordoned.log.dirs` (at any level) is "*" or names each of their
        log dirs (`log.dirs`, else `log.dir`)."""
        described = self._described(_broker_resources(broker_ids))
        return frozenset(int(name) for name, entries in described.items()
                         if _cordoned(entries))

    def quota_windows(self, broker_ids: Iterable[int]) -> dict[int, float]:
        """Each broker's replication quota window in seconds: the two configs multiplied, read
        at whatever level sets them (static in server.properties, or Kafka's default)."""
        windows = {}
        for name, entries in self._described(_broker_resources(broker_ids)).items():
            window = _quota_window(entries)
            if window is not None:
                windows[int(name)] = window
        return windows

    def topic_configs(self, topics: Iterable[str], names: Sequence[str]) -> dict[
        str, dict[str, str | None]
    ]:
        """Topic-level dynamic values of `names` (None when the topic does not set one); a topic
        that does not exist (any more) is left out."""
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in sorted(set(topics))]
        return self._describe(resources, names, ConfigSource.DYNAMIC_TOPIC_CONFIG)

    def _alter(self, resources: list[ConfigResource]) -> None:
        if not resources:
            return
        with self._calling("alter configs"):
            futures = [f for batch in _batches(resources) for f in
                       self._admin.incremental_alter_configs(
                           batch, request_timeout=self._timeout_s).items()]
            for resource, future in futures:
                self._config_result(resource, future, "alter configs")

    def alter_broker_configs(self, changes: Mapping[int, ConfigChanges]) -> None:
        """Incrementally SET values, or DELETE overrides given as None, per broker.

        Returns once each broker describes the new values (read-your-writes for callers).
        """
        self._alter([ConfigResource(ResourceType.BROKER, str(b), incremental_configs=_ops(c))
                     for b, c in sorted(changes.items()) if c])
        self._await_visible(lambda: _mismatches(self.broker_configs, changes), "broker")

    def alter_topic_configs(self, changes: Mapping[str, ConfigChanges]) -> None:
        """Incrementally SET values, or DELETE overrides given as None, per topic.

        Returns once the cluster describes the new values (read-your-writes for callers).
        """
        self._alter([ConfigResource(ResourceType.TOPIC, t, incremental_configs=_ops(c))
                     for t, c in sorted(changes.items()) if c])
        self._await_visible(lambda: _mismatches(self.topic_configs, changes), "topic")

    def _await_visible(self, mismatches: Callable[[], list[str]], kind: str) -> None:
        """Poll until a written config is described back: brokers apply metadata a bit later."""
        deadline = time.monotonic() + self._timeout_s
        pending = mismatches()
        while pending and time.monotonic() < deadline:
            time.sleep(0.05)
            pending = mismatches()
        if pending:
            raise ClusterError(f"{kind} config written but not visible after "
                               f"{self._timeout_s:g} s: {', '.join(pending[:3])}; check the "
                               "brokers' metadata lag and retry")

    # -- reassignments and leadership ----------------------------------------------------

    def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> None:
        """Submit target replica lists; None cancels (a no-op when nothing is in flight)."""
        if not targets:
            return
        request = {KpTopicPartition(tp.topic, tp.partition):
                   None if replicas is None else [int(r) for r in replicas]
                   for tp, replicas in targets.items()}
        with self._calling("alter partition reassignments"):
            answers = self._kafka_python().alter_partition_reassignments(
                request, timeout_ms=int(self._timeout_s * 1000))
        failures = []
        for kp_tp, error in sorted(answers.items()):
            if error is None:
                continue
            if error is kp_errors.NoReassignmentInProgressError and request[kp_tp] is None:
                continue
            reason = getattr(error, "description", "") or error.__name__
            failures.append(f"{kp_tp.topic}-{kp_tp.partition}: {reason}")
        if failures:
            raise ClusterError(f"Kafka rejected {len(failures)} reassignment(s): "
                               f"{'; '.join(failures[:5])}"
                               + (" ..." if len(failures) > 5 else ""))

    def list_partition_reassignments(self) -> dict[TopicPartition, ReassignmentState]:
        """Reassignments in flight, with the replicas being added and removed."""
        answers = self._read("list partition reassignments",
                             lambda: self._kafka_python().list_partition_reassignments(
                                 timeout_ms=int(self._timeout_s * 1000)))
        return {
            TopicPartition(kp_tp.topic, kp_tp.partition): ReassignmentState(
                tuple(state["replicas"]), tuple(state["adding_replicas"]),
                tuple(state["removing_replicas"]))
            for kp_tp, state in sorted(answers.items())
        }

    def elect_preferred_leaders(self, partitions: Iterable[TopicPartition]) -> None:
        """Preferred leader election; 'election not needed' counts as success."""
        wanted = [CkTopicPartition(tp.topic, tp.partition)
                  for tp in sorted(set(partitions), key=lambda t: (t.topic, t.partition))]
        if not wanted:
            return  # an empty list would mean every partition to librdkafka
        with self._calling("elect preferred leaders"):
            # no request_timeout kwarg: confluent-kafka 2.16 rejects any kwarg here with a
            # SystemError; the wait on the future bounds the call instead
            results = self._result(self._admin.elect_leaders(ElectionType.PREFERRED, wanted))
        failures = []
        for ck_tp, error in results.items():
            err = _kafka_error(error) if isinstance(error, KafkaException) else error
            if err is None or err.code() in (KafkaError.NO_ERROR, KafkaError.ELECTION_NOT_NEEDED):
                continue
            failures.append(f"{ck_tp.topic}-{ck_tp.partition}: {err.str()}")
        if failures:
            raise ClusterError(f"preferred leader election failed for {len(failures)} "
                               f"partition(s): {'; '.join(sorted(failures)[:5])}")

    def close(self) -> None:
        """Close the kafka-python client if it was opened (librdkafka cleans up on its own)."""
        if self._kp is not None:
            self._kp.close()
            self._kp = None


_K = TypeVar("_K", int, str)


def _mismatches(describe: Callable[[Iterable[_K], Sequence[str]], dict[_K, dict[str, str | None]]],
                changes: Mapping[_K, ConfigChanges]) -> list[str]:
    """'resource name' of every written config the cluster does not yet describe as written."""
    wanted = {key: dict(c) for key, c in changes.items() if c}
    if not wanted:
        return []
    names = sorted({name for c in wanted.values() for name in c})
    found = describe(list(wanted), names)
    return [f"{key} {name}" for key, c in sorted(wanted.items())
            for name, value in sorted(c.items())
            if _normal(found.get(key, {}).get(name)) != _normal(value)]


def _normal(value: str | None) -> str | None:
    return None if value is None else "".join(value.split())


def _ops(changes: ConfigChanges) -> list[ConfigEntry]:
    return [ConfigEntry(name, value, incremental_operation=(
        AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET))
        for name, value in sorted(changes.items())]


def _batches(resources: list[ConfigResource]) -> list[list[ConfigResource]]:
    """Kafka takes at most one BROKER resource per config request; topics go together."""
    brokers = [[r] for r in resources if r.restype == ResourceType.BROKER]
    others = [r for r in resources if r.restype != ResourceType.BROKER]
    return brokers + ([others] if others else [])


def _broker_log_dirs(answer: Sequence[Mapping[str, Any]]) -> BrokerLogDirs:
    """One broker's DescribeLogDirs answer as values."""
    dirs: list[LogDirInfo] = []
    replicas: dict[TopicPartition, tuple[str, int]] = {}
    futures: dict[TopicPartition, tuple[str, int]] = {}
    for log_dir in answer:
        path = str(log_dir.get("log_dir", ""))
        online = log_dir.get("error_code", 0) == 0  # an offline dir reports no partitions
        dirs.append(LogDirInfo(path, _volume_bytes(log_dir.get("total_bytes")),
                               _volume_bytes(log_dir.get("usable_bytes"), empty_ok=True),
                               bool(log_dir.get("is_cordoned", False)), online))
        if not online:
            continue
        for topic in log_dir["topics"]:
            for part in topic["partitions"]:
                tp = TopicPartition(topic["name"], int(part["partition_index"]))
                held = futures if part.get("is_future_key") else replicas
                size = int(part["partition_size"])
                if tp not in held or held[tp][1] < size:
                    held[tp] = (path, size)
    return BrokerLogDirs(tuple(dirs), replicas, futures)


def _volume_bytes(value: object, empty_ok: bool = False) -> int | None:
    """A volume size (or, `empty_ok`, its free space, which may be 0) from DescribeLogDirs:
    -1 (older brokers) means unknown."""
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return value if value > 0 or (empty_ok and value == 0) else None


def _cordoned(entries: Mapping[str, ConfigEntry]) -> bool:
    """Every log dir of the broker described by `entries` is cordoned (KIP-1066)."""
    def value(name: str) -> str:
        entry = entries.get(name)
        return str(entry.value or "") if entry is not None else ""
    cordoned = {d.strip() for d in value(CORDONED_LOG_DIRS).split(",") if d.strip()}
    if "*" in cordoned:
        return True
    dirs = {d.strip() for d in (value("log.dirs") or value("log.dir")).split(",") if d.strip()}
    return bool(dirs) and dirs <= cordoned


def _broker_resources(broker_ids: Iterable[int]) -> list[ConfigResource]:
    """One config resource per broker, each id once, in id order."""
    return [ConfigResource(ResourceType.BROKER, str(b)) for b in sorted(set(broker_ids))]


def _quota_window(entries: Mapping[str, ConfigEntry]) -> float | None:
    """The window the two quota configs of `entries` give, None when either is missing or not a
    positive number."""
    values = []
    for name in (QUOTA_WINDOW_NUM, QUOTA_WINDOW_SIZE):
        entry = entries.get(name)
        try:
            value = float(str(entry.value)) if entry is not None else math.nan
        except ValueError:
            return None
        if not (math.isfinite(value) and value > 0):
            return None
        values.append(value)
    return values[0] * values[1]


def _dynamic_value(entry: ConfigEntry | None, dynamic: ConfigSource) -> str | None:
    """The entry's value when it is set at the `dynamic` level, else None."""
    if entry is None:
        return None
    source = entry.source
    level = int(source.value if isinstance(source, ConfigSource) else source)
    return str(entry.value) if level == dynamic.value and entry.value is not None else None


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__

