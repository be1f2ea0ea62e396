"""Synthetic clusters for examples, tests and benchmarks: deterministic for a seed.

Racks of unequal size, three broker classes (1x, 1.5x, 2x capacity), topics of varying partition
counts with Pareto-distributed sizes, traffic loosely tied to size, a few hot topics, consumer
fan-out of 1-3x, and a rack-aware but load-blind historical placement that leaves the old brokers
somewhat unbalanced. `new_brokers` empty brokers are spread over the racks.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kafka_rebalance.core.errors import InputError
from topology.load import leader_out
from topology.model import Broker, Capacity, Partition, Topology

_CLASS_SCALE = np.array([1.0, 1.5, 2.0])
_TOPIC_PARTITION_COUNTS = np.array([1, 3, 4, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 100])
_MEAN_PARTITION_BYTES = 2.0e9
_CHUNK = 8192

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _rack_of_old(brokers: int, racks: int) -> IntArray:
    """Rack index per old broker: near-equal counts, then (with 4+ brokers per rack) one broker
    shifted from the last rack to the first, so racks are unequal as in real clusters while
    broker classes can still even out rack capacity."""
    counts = np.full(racks, brokers // racks)
    counts[: brokers % racks] += 1
    if racks > 1 and brokers >= 4 * racks:
        counts[-1] -= 1
        counts[0] += 1
    return np.repeat(np.arange(racks), counts).astype(np.int64)


def _even_racks(classes: IntArray, rack_of: IntArray, racks: int) -> IntArray:
    """Adjust broker classes so racks have similar total capacity (as operators size racks):
    repeatedly upgrade the smallest broker of the weakest rack or downgrade the largest broker
    of the strongest rack while that narrows the spread."""
    classes = classes.copy()
    for _ in range(4 * classes.size):
        totals = np.bincount(rack_of, weights=_CLASS_SCALE[classes], minlength=racks)
        weak, strong = int(np.argmin(totals)), int(np.argmax(totals))
        if totals[strong] - totals[weak] <= 0.5:
            break
        in_weak = np.flatnonzero((rack_of == weak) & (classes < 2))
        in_strong = np.flatnonzero((rack_of == strong) & (classes > 0))
        if in_weak.size:
            classes[in_weak[np.argmin(classes[in_weak])]] += 1
        elif in_strong.size:
            classes[in_strong[np.argmax(classes[in_strong])]] -= 1
        else:
            break
    return classes


def _topic_sizes(partitions: int, rng: np.random.Generator) -> IntArray:
    """Partition counts of the topics, summing exactly to `partitions`."""
    counts: list[int] = []
    total = 0
    while total < partitions:
        n = int(rng.choice(_TOPIC_PARTITION_COUNTS))
        n = min(n, partitions - total)
        counts.append(n)
        total += n
    return np.array(counts, dtype=np.int64)


def _partition_values(topic_of: IntArray, topics: int,
                      rng: np.random.Generator) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Sizes (Pareto, per-topic scale), bytes in (size-linked, lognormal noise, hot topics) and
    bytes out (in x topic fan-out 1-3)."""
    n = topic_of.size
    topic_scale = rng.pareto(2.2, topics) + 0.1
    skew = rng.lognormal(0.0, 0.35, n)
    size = topic_scale[topic_of] * skew
    size = size / size.mean() * _MEAN_PARTITION_BYTES
    size = np.minimum(size, _MEAN_PARTITION_BYTES * 30)
    retention_s = 7 * 86400 * rng.uniform(0.3, 1.0, topics)
    topic_noise = rng.lognormal(0.0, 0.6, topics)
    hot = rng.random(topics) < 0.03
    topic_noise[hot] *= 8.0
    bytes_in = size / retention_s[topic_of] * topic_noise[topic_of] * rng.lognormal(0.0, 0.3, n)
    fanout = rng.uniform(1.0, 3.0, topics)
    bytes_out = bytes_in * fanout[topic_of]
    return size, bytes_in, bytes_out


def _place(n: int, rf: int, rack_of: IntArray, weight: FloatArray,
           rng: np.random.Generator) -> IntArray:
    """Replica indexes [n, rf] over the old brokers: rack-aware (at most ceil(rf / racks) per
    rack) and weighted by `weight` (Gumbel top-k), leader = the highest key."""
    racks = int(rack_of.max()) + 1
    per_rack = -(-rf // racks)
    log_w = np.log(weight)
    out = np.empty((n, rf), dtype=np.int64)
    members = [np.flatnonzero(rack_of == r) for r in range(racks)]
    for start in range(0, n, _CHUNK):
        stop = min(n, start + _CHUNK)
        keys = log_w[None, :] + rng.gumbel(size=(stop - start, weight.size))
        chosen, chosen_keys = [], []
        for cols in members:
            take = min(per_rack, cols.size)
            sub = keys[:, cols]
            if take == 1:
                top = np.argmax(sub, axis=1)[:, None]
            else:
                top = np.argsort(-sub, axis=1, kind="stable")[:, :take]
            chosen.append(cols[top])
            chosen_keys.append(np.take_along_axis(sub, top, axis=1))
        cand, cand_keys = np.hstack(chosen), np.hstack(chosen_keys)
        order = np.argsort(-cand_keys, axis=1, kind="stable")[:, :rf]
        out[start:stop] = np.take_along_axis(cand, order, axis=1)
    return out


def _capacities(classes: IntArray, size: FloatArray, bytes_in: FloatArray,
                bytes_out: FloatArray, rf: int, utilization: float) -> FloatArray:
    """Capacity [brokers, 3] so the cluster averages `utilization` of each resource."""
    scale = _CLASS_SCALE[classes]
    sent = leader_out(bytes_out, bytes_in, rf)
    totals = np.array([size.sum() * rf, bytes_in.sum() * rf, sent.sum()])
    unit = totals / (utilization * scale.sum())
    caps: FloatArray = scale[:, None] * unit[None, :]
    return caps


def generate_cluster(brokers: int = 12, new_brokers: int = 3, racks: int = 3,
                     partitions: int = 5000, rf: int = 3, seed: int = 0,
                     utilization: float = 0.55, skew: float = 0.08) -> Topology:
    """A synthetic Topology; the same arguments always give the same cluster.

    `utilization` is the cluster-wide average load / capacity per resource (new brokers
    included); `skew` is how unevenly the historical placement favoured some brokers.
    """
    if brokers < 1 or new_brokers < 0 or racks < 1 or partitions < 0 or rf < 1:
        raise InputError("generate_cluster: counts must be positive (new_brokers may be 0)")
    rack_of_old = _rack_of_old(brokers, min(racks, brokers))
    if sum(min(-(-rf // racks), int((rack_of_old == r).sum())) for r in range(racks)) < rf:
        raise InputError(f"generate_cluster: {brokers} brokers on {racks} racks cannot hold "
                         f"RF {rf} rack-aware")
    rng = np.random.default_rng(seed)
    total = brokers + new_brokers
    rack_of = np.concatenate([rack_of_old, np.arange(new_brokers, dtype=np.int64) % racks])
    classes = _even_racks(rng.integers(0, 3, total), rack_of, racks)
    topic_counts = _topic_sizes(partitions, rng)
    topic_of = np.repeat(np.arange(topic_counts.size), topic_counts)
    size, bytes_in, bytes_out = _partition_values(topic_of, topic_counts.size, rng)
    weight = _CLASS_SCALE[classes[:brokers]] * rng.lognormal(0.0, skew, brokers)
    replicas = _place(partitions, rf, rack_of_old, weight, rng)
    caps = _capacities(classes, size, bytes_in, bytes_out, rf, utilization)
    return _build(rack_of, caps, topic_of, topic_counts, replicas, size, bytes_in, bytes_out)


def _build(rack_of: IntArray, caps: FloatArray, topic_of: IntArray, topic_counts: IntArray,
           replicas: IntArray, size: FloatArray, bytes_in: FloatArray,
           bytes_out: FloatArray) -> Topology:
    """Turn the arrays into model values (broker ids start at 1, racks are 'rack-a', ...)."""
    broker_list = tuple(
        Broker(i + 1, f"rack-{chr(ord('a') + int(rack_of[i]) % 26)}{int(rack_of[i]) // 26 or ''}",
               Capacity(float(round(caps[i, 0])), float(round(caps[i, 1])),
                        float(round(caps[i, 2]))))
        for i in range(rack_of.size)
    )
    starts = np.concatenate([[0], np.cumsum(topic_counts)[:-1]])
    index_in_topic = np.arange(topic_of.size) - starts[topic_of]
    ids = (replicas + 1).tolist()
    sizes = np.round(size).astype(np.int64).tolist()
    ins = np.round(bytes_in, 3).tolist()
    outs = np.round(bytes_out, 3).tolist()
    topics = topic_of.tolist()
    idx = index_in_topic.tolist()
    parts = tuple(
        Partition(f"topic-{topics[i]:05d}", idx[i], tuple(ids[i]), sizes[i], ins[i], outs[i])
        for i in range(topic_of.size)
    )
    return Topology(broker_list, parts)


def generate_zoned(zones: tuple[int, ...], added: tuple[int, ...] = (), rf: int = 3,
                   partitions: int = 300, seed: int = 0, lumpy: bool = False,
                   mixed: bool = False, utilization: float = 0.55) -> Topology:
    """A zone-bound cluster: `zones[k]` old brokers in zone k, `added[k]` empty new brokers in
    zone k (ids after the old ones), RF over the zones with the rack rule, a rack-aware and
    size-blind history over the old brokers. `lumpy` draws few, large partitions (Pareto
    sizes); `mixed` gives brokers 1x / 1.5x / 2x capacity. Same arguments, same cluster."""
    added = added or (0,) * len(zones)
    if len(added) != len(zones) or min(zones) < 1 or min(added) < 0 or rf < 1 or partitions < 1:
        raise InputError("generate_zoned: one positive broker count per zone, added >= 0")
    racks = len(zones)
    per_rack = -(-rf // racks)
    if sum(min(per_rack, n) for n in zones) < rf:
        raise InputError(f"generate_zoned: zones {zones} cannot hold RF {rf} rack-aware")
    rng = np.random.default_rng(seed)
    rack_old = np.repeat(np.arange(racks), zones).astype(np.int64)
    rack_new = np.repeat(np.arange(racks), added).astype(np.int64)
    rack_of = np.concatenate([rack_old, rack_new])
    classes = (rng.integers(0, 3, rack_of.size) if mixed
               else np.zeros(rack_of.size, dtype=np.int64))
    topic_of = np.arange(partitions, dtype=np.int64) // 8
    topics = int(topic_of.max()) + 1
    if lumpy:
        size = np.minimum(rng.pareto(1.5, partitions) + 0.2, 5.0) * _MEAN_PARTITION_BYTES
    else:
        size = rng.lognormal(0.0, 0.5, partitions) * _MEAN_PARTITION_BYTES
    bytes_in = size / (7 * 86400) * rng.lognormal(0.0, 0.4, partitions)
    bytes_out = bytes_in * rng.uniform(1.0, 3.0, topics)[topic_of]
    weight = _CLASS_SCALE[classes[: rack_old.size]] * rng.lognormal(0.0, 0.05, rack_old.size)
    replicas = _place(partitions, rf, rack_old, weight, rng)
    caps = _capacities(classes, size, bytes_in, bytes_out, rf, utilization)
    return _build(rack_of, caps, topic_of, np.bincount(topic_of), replicas, size, bytes_in,
                  bytes_out)
