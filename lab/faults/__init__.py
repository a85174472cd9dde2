"""Faults (Jepsen's nemesis): one fault per module, registered by name.

    from lab.faults import make, Targets
    with make("latency", latency_ms=500).on(Targets.of(stack)) as evidence:
        ...  # the Redis link is 500 ms slower here; evidence says how that was confirmed

Toxics act on a whole proxy, so concurrent trials share one fault window. The lab therefore
groups concurrent trials by fault: trials run together only when they have the same fault (a
cell's trials). A ``window == "trial"`` fault opens before the group starts and closes after it
ends. A ``window == "send"`` fault (one-shot drops, outages, restarts) hits the same turn of
every trial of the cell: the group runs in lockstep, and the fault is armed once for all of
them around that turn and healed once they have all settled it (lab.plan.lockstep.Lockstep).

May import: lab.common, lab.stack.
"""

from lab.faults.base import REGISTRY, Fault, FaultNotConfirmed, Targets, ToxicFault, check_mode, make, register
from lab.faults import (  # noqa: F401  (modules register themselves)
    none,
    latency,
    drop,
    blackhole,
    down,
    bandwidth,
    slicer,
    slow_close,
    ttl_elapse,
    redis_pause,
    redis_restart,
    backend_restart,
    ack_lost,
    redis_net_disconnect,
    model_error,
    model_cut,
    model_stall,
    write_refused,
)

__all__ = ["REGISTRY", "Fault", "FaultNotConfirmed", "Targets", "ToxicFault", "check_mode", "make", "register"]
