"""CPU time, the one way every benchmark and report of ours measures it (``getrusage``)."""
from __future__ import annotations

import resource


def cpu_seconds(*, own: bool = True, children: bool = True) -> float:
    """User + system CPU seconds of this process (``own``) and of the child processes it has waited
    for (``children``): a difference of two readings is the CPU a piece of work cost, on any
    number of cores."""
    total = 0.0
    for who, wanted in ((resource.RUSAGE_SELF, own), (resource.RUSAGE_CHILDREN, children)):
        if wanted:
            r = resource.getrusage(who)
            total += r.ru_utime + r.ru_stime
    return total
