"""White-box probes: rules only a program that edits the submission's live structures can check.

Each probe is a function of c/probes.c, compiled with the submission and run in the sandbox, in its own
process with a time limit, so a crash or a hang fails that probe alone, with the signal named. The verdict
comes over a private pipe, each line led by a random token the probe took before the submission's first
instruction; what the program prints on stdout, and its exit status alone, decide nothing.
"""

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from oracle.hw3.c.build import OFFICIAL_FLAGS
from oracle.hw3.c.process import run_program
from oracle.hw3.pool import c_defines
from oracle.hw3.repro import build_repro
from oracle.sandbox import Limits, Sandbox

PROBE_LIMITS = Limits(cpu_seconds=60, memory_bytes=4 << 30, file_bytes=1 << 20)  # big_pool maps 2 GiB

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


# The calls each probe is about: a crash or a hang in another call is that call's item's bug.
ALL_CALLS = frozenset({"llm_init", "create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy"})
SUBJECTS = {
    "l1_gap_free": {"free_sequence"}, "l1_gap_fork": {"fork_sequence"}, "init_untouched": {"llm_init"},
    "destroy_keeps_pool": {"llm_destroy"}, "l2_hole_free": {"free_sequence"}, "l2_hole_fork": {"fork_sequence"},
    "many_sequences": {"create_sequence", "free_sequence"}, "many_forks": {"fork_sequence"},
    "two_engines": ALL_CALLS, "big_pool": ALL_CALLS,
}


@dataclass(frozen=True, slots=True)
class ProbeResult:
    name: str
    rule: str  # the spec's rule, in a sentence
    passed: bool
    detail: str  # what was checked, or what differed
    stopped_in: str | None = None  # the API call a crash or a hang happened in, when the probe says

    @property
    def checked(self) -> bool:
        """It judged its rule (passed or failed it): its set-up did not stop at another item's bug."""
        return not self.detail.startswith("not checked")

    @property
    def elsewhere(self) -> bool:
        """It crashed or hung in a call the probe is not about."""
        return self.stopped_in is not None and self.stopped_in not in SUBJECTS.get(self.name, ALL_CALLS)


def run_probes(
    submission: Path, workdir: Path, timeout: float = 10, *, flags: Sequence[str] = OFFICIAL_FLAGS,
    sandbox: Sandbox | None = None,
) -> list[ProbeResult]:
    """Each probe in PROBES, in its own sandboxed process of at most `timeout` s, compiled with `flags`."""
    source = c_defines() + SOURCE.read_text()
    binary, output = build_repro(source, submission, Path(workdir) / "probes", name="probes", flags=flags,
                                 sandbox=sandbox, ours_first=True)
    if binary is None:
        detail = f"does not compile with the official flags:\n{output}"
        return [ProbeResult(name, rule, False, detail) for name, rule in PROBES.items()]
    return [_run_probe(binary, name, rule, timeout, sandbox) for name, rule in PROBES.items()]


def _run_probe(binary: Path, name: str, rule: str, timeout: float, sandbox: Sandbox | None) -> ProbeResult:
    token = secrets.token_hex(16)
    token_r, token_w = os.pipe()
    verdict_r, verdict_w = os.pipe()
    try:
        os.write(token_w, token.encode())
        os.close(token_w)
        done = run_program([binary, name, str(verdict_w), str(token_r)], timeout=timeout, sandbox=sandbox,
                           limits=PROBE_LIMITS, pass_fds=(verdict_w, token_r))
        os.close(verdict_w)
        verdict_w = -1
        text = _drain(verdict_r)
        said, calls = _said(text, token), _calls(text, token)
    finally:
        for fd in (token_r, verdict_r, verdict_w):
            if fd >= 0:
                os.close(fd)
    lines = done.output.strip().splitlines()
    stopped_in = None  # the call a crash or a hang happened in, as the probe said on its private channel
    if done.status is None:
        detail, stopped_in = f"timed out after {timeout:g} s", calls[-1] if calls else None
    elif done.signal_name:
        detail = f"crashed: {done.signal_name}" + (f" ({lines[-1]})" if lines else "")
        stopped_in = calls[-1] if calls else None
    elif said is None or done.status != 0:
        detail = said[1] if said else f"exited with status {done.status} without a verdict: {done.output.strip()[-300:]}"
    else:
        detail = said[1]
    passed = done.status == 0 and said is not None and said[0] == "PASS"
    return ProbeResult(name, rule, passed, detail, stopped_in)


def _drain(fd: int, limit: int = 1 << 16) -> str:
    """What is in a pipe whose writers are all gone, up to limit bytes."""
    chunks, have = [], 0
    while have < limit and (chunk := os.read(fd, limit - have)):
        chunks.append(chunk)
        have += len(chunk)
    return b"".join(chunks).decode(errors="replace")


def _calls(text: str, token: str) -> list[str]:
    """The API calls the probe said it entered ("TOKEN CALL: api" lines), in order."""
    return [line.removeprefix(f"{token} CALL: ") for line in text.splitlines() if line.startswith(f"{token} CALL: ")]


def _said(text: str, token: str) -> tuple[str, str] | None:
    """The first verdict line led by the token: ("PASS" or "FAIL", what it says); None if there is none."""
    for line in text.splitlines():
        head, _, rest = line.partition(" ")
        verdict, colon, what = rest.partition(": ")
        if head == token and colon and verdict in ("PASS", "FAIL"):
            return verdict, what
    return None
