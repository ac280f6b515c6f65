"""The white-box probes (probes.py) on a Python implementation, in its child process (pyremote.py): the same
probes, names and messages as for C. The probe edits the implementation's live objects there through the
adapter's calls and judges here what the child observed, with the field names the Python contract shares with
the C structs. big_pool, about int overflow in a C address, has no Python counterpart and passes.
"""

from typing import Callable, Sequence

from oracle.hw3.probe_scale import spread_id
from oracle.hw3.probes import C_ONLY, PROBES, ProbeResult, judge
from oracle.hw3.pyremote import RemotePythonAdapter

__all__ = ["C_ONLY", "run_python_probes", "spread_id"]


def run_python_probes(adapter: Callable[[], RemotePythonAdapter], only: Sequence[str] = tuple(PROBES)) -> list[ProbeResult]:
    """Each probe of PROBES (or of `only`) on a Python implementation in its child process, each on a fresh
    adapter from `adapter` (a RemotePython)."""
    return [ProbeResult(name, PROBES[name], True, "not applicable to a Python implementation") if name in C_ONLY
            else judge(name, adapter()) for name in only]
