"""The white-box probes (probes.py) on a Python implementation, in its child process (pyremote.py). A probe
runs there only when its verdict rests on what the grader observes itself (probes.RESTS_ON, evidence.py): the
calls' return values and the pool. Every probe today also reads the engine's objects (and some edit them),
which a Python submission's own code can fake, so none is run: each is not graded, at no point and no cost,
in its own words. big_pool, about int overflow in a C address, has no Python counterpart and passes.
"""

from typing import Callable, Sequence

from oracle.hw3.evidence import not_graded
from oracle.hw3.probes import C_ONLY, PROBES, RESTS_ON, ProbeResult, judge, not_graded_result
from oracle.served import RemoteAdapter


def run_python_probes(adapter: Callable[[], RemoteAdapter], only: Sequence[str] = tuple(PROBES)) -> list[ProbeResult]:
    """Each probe of PROBES (or of `only`) on a Python implementation in its child process, each on a fresh
    adapter from `adapter` (pyremote.served_engine's)."""
    return [ProbeResult(name, PROBES[name], True, "not applicable to a Python implementation") if name in C_ONLY
            else not_graded_result(name, "python") if not_graded("python", RESTS_ON[name])
            else judge(name, adapter()) for name in only]
