"""One exception tree for the whole tool: every user-facing failure is a RebalanceError.

The CLI maps each class to an exit code in one handler; messages say what to fix.
"""

from __future__ import annotations


class RebalanceError(Exception):
    """Base of every error the tool reports to a user (no stack trace, non-zero exit)."""

    exit_code = 1


class InputError(RebalanceError):
    """A file or flag the user gave is malformed or inconsistent."""

    exit_code = 2


class ClusterError(RebalanceError):
    """The cluster cannot be reached or answered something unusable."""

    exit_code = 3


class TopicGone(ClusterError):
    """A topic the caller asked about by name does not exist (any more): deleted, say, while
    a run moves its partitions. The cluster itself answers."""


class MetricsError(RebalanceError):
    """Prometheus cannot be reached or has no usable series."""

    exit_code = 4


class PlanError(RebalanceError):
    """No valid plan can be made, or a plan fails validation."""

    exit_code = 5


class ExecutionError(RebalanceError):
    """The executor refused to start or stopped a run."""

    exit_code = 6


class LeaseRefused(ExecutionError):
    """Another run holds the cluster's lease (or held it and was killed): nothing changed."""


class LeaseLost(ExecutionError):
    """The run's lease passed to another process (a take-over) while it ran: it stops and
    changes nothing more on the cluster, which the new holder now drives."""


class SandboxError(RebalanceError):
    """The local sandbox cluster could not be started, found or stopped."""

    exit_code = 7


MAX_PROBLEMS = 8
"""How many problems one message lists (STYLE rule 11: every problem, up to a cap)."""


def problems_message(problems: list[str], total: int | None = None) -> str:
    """Problems found in one input, on one line: the first MAX_PROBLEMS and how many more.

    `total` counts problems that were found but not described (it defaults to len(problems)).
    """
    count = len(problems) if total is None else total
    if count == 1:
        return problems[0]
    shown = "; ".join(problems[:MAX_PROBLEMS])
    more = count - min(len(problems), MAX_PROBLEMS)
    return f"{count} problems: {shown}" + (f"; and {more} more" if more else "")
