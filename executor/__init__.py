"""The executor: applies a plan to a live cluster one partition at a time, under a replication
throttle, gated on the source and target brokers' network, and safe to kill at any point.

Design (pure core, ports at the edge):

- `plan.ExecutionPlan`: the ordered moves (planner.result.Move) and the cluster fingerprint they
  were planned against; built by the plan-file reader, never parsed here.
- `state`: each move is an explicit state machine (PENDING -> THROTTLING -> SUBMITTED -> COPYING
  -> VERIFYING -> UNTHROTTLING -> ELECTING -> COOLING_DOWN -> DONE, with CANCELLING / CANCELLED /
  FAILED); a table lists the allowed transitions and anything else raises.
- `throttle`: pure policy. Leader rate on the brokers holding the current replicas, follower rate
  on the brokers receiving new ones, never above the cap (an operator's lower rate is kept); only
  this partition's entries are merged into the topic throttled-replica lists; the restore puts
  prior rates back and removes exactly the entries it added. `--adaptive` rates come from each
  broker's headroom, clamped to [floor, cap].
- `gates`: pure decisions over readings. Before a move: a baseline must be readable (else HOLD).
  After it: network in/out of its brokers back within a margin of the baseline (or under a floor)
  for K consecutive samples, no other under-replicated partition, optional produce-p99 SLO.
- `readings`: PromQL templates (configurable; defaults fit the sandbox exporter) evaluated on a
  `MetricsSource`, and ISR-based under-replication from the admin port.
- `journal`: JSON lines, fsynced. A move's new state is written before that state's side effect
  and the next state only after the effect is confirmed (throttles are read back before a
  reassignment is submitted); replay rebuilds the run, ignoring a torn last line.
- `preflight`: refuses (changing nothing) when a reassignment is in flight, the plan is stale
  (names the partitions), a target broker is offline, partitions are under-replicated (unless
  overridden) or the plan validator objects.
- `steps.MoveDriver`: one idempotent handler per state, each looking at the cluster first, so the
  same code serves a fresh run and a resumed one. A dead broker or no progress for N polls
  cancels the move (KIP-455) and restores its throttles.
- `runner.Executor`: the tick loop over the ports (KafkaAdmin, MetricsSource, Clock): start,
  resume (reconcile journal and cluster, re-set throttles of copies in flight), cancel (revert in
  flight, restore throttles), and `clear_throttles` (restore what the journal says may be left).
  `concurrency` moves at most, never two on one broker. `preview` (for --dry-run) reads only.
- `status`: a run's summary from its journal alone; `exporter`: optional prometheus-client
  metrics of the executor itself, fed as a reporter of the run's events.

Nothing here imports a Kafka or Prometheus client: adapters implement `kafka_rebalance.core.ports`.
"""
