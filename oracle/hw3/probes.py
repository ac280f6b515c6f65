"""White-box probes: rules only a program that edits the submission's live structures can check.

Each probe is a function of c/probes.c, compiled with the submission and run in its own process with a
time limit, so a crash or a hang fails that probe alone, with the signal named.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from oracle.hw3.c.build import OFFICIAL_FLAGS
from oracle.hw3.c.process import run_program
from oracle.hw3.pool import c_defines
from oracle.hw3.repro import build_repro

SOURCE = Path(__file__).with_name("c") / "probes.c"

PROBES = {
    "l1_gap_free": "free_sequence visits all 16 L1 slots and does not stop at a NULL one",
    "l1_gap_fork": "fork_sequence copies every non-NULL parent L2 table, past a NULL one too, and shares each block",
    "init_untouched": "llm_init writes nothing into the pool, counts pool_size / 64 blocks (pools up to 64 MiB), zeroes ref_count, "
    "points the empty list head at itself both ways, and refuses a NULL or too small pool",
    "destroy_keeps_pool": "llm_destroy neither frees nor writes the pool: the caller owns it",
    "l2_hole_free": "free_sequence releases every mapped L2 entry (!= -1), past an unmapped one too",
    "l2_hole_fork": "fork_sequence copies every L2 entry of the parent, past an unmapped one too, and shares each block",
    "many_sequences": "only the pool limits how many sequences are live: 5000 at once, ids spread up to INT_MAX",
    "many_forks": "only the pool limits how many sequences share a block: a sequence and 300 forks (ref_count 301)",
    "two_engines": "each engine's state is its own: two live engines with the same sequence ids do not interfere",
    "big_pool": "block addresses are computed in size_t: blocks past 2^25 of a pool over 2 GiB are written and copied right",
}


@dataclass(frozen=True, slots=True)
class ProbeResult:
    name: str
    rule: str  # the spec's rule, in a sentence
    passed: bool
    detail: str  # what was checked, or what differed


def run_probes(
    submission: Path, workdir: Path, timeout: float = 10, *, flags: Sequence[str] = OFFICIAL_FLAGS
) -> list[ProbeResult]:
    """Each probe in PROBES, in its own process of at most `timeout` s, compiled with `flags`."""
    source = c_defines() + SOURCE.read_text()
    binary, output = build_repro(source, submission, Path(workdir) / "probes", name="probes", flags=flags)
    if binary is None:
        detail = f"does not compile with the official flags:\n{output}"
        return [ProbeResult(name, rule, False, detail) for name, rule in PROBES.items()]
    results = []
    for name, rule in PROBES.items():
        done = run_program([binary, name], cwd=binary.parent, timeout=timeout)
        lines = done.output.strip().splitlines()
        said = next((line.split(": ", 1)[1] for line in lines if line.startswith(("PASS: ", "FAIL: "))), "")
        if done.status is None:
            detail = f"timed out after {timeout:g} s"
        elif done.signal_name:
            detail = f"crashed: {done.signal_name}" + (f" ({lines[-1]})" if lines else "")
        elif done.status != 0 or not said:
            detail = said or f"exited with status {done.status}: {done.output.strip()[-300:]}"
        else:
            detail = said
        results.append(ProbeResult(name, rule, done.status == 0 and bool(said), detail))
    return results
