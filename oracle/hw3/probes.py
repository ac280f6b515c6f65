"""White-box probes: rules only a program that edits the submission's live structures can check.

Each probe (probe_tables, probe_scale, probe_pool) is written once, against the small interface of
probe_target.py: it makes calls, reads counters, block tables and pool bytes, edits a live block table, and
judges here, in the grader, what it observed. The submission's process only answers (C: the driver of
c/probe_adapter.py, one process per probe with a time limit, so a crash or a hang fails that probe alone;
Python: its child process, pyprobes.py), so nothing it prints or writes can pass a probe: only the state a
correct implementation would leave.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from oracle.hw3.c.stray import Stray, Watch, named
from oracle.hw3.evidence import EDIT, POOL, RETURNS, STATE, not_graded
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.probe_checks import CheckedPast, NotChecked, ProbeFailed, Unavailable
from oracle.hw3.probe_pool import big_pool, destroy_keeps_pool, init_untouched
from oracle.hw3.probe_scale import many_forks, many_sequences, two_engines
from oracle.hw3.probe_tables import l1_gap_fork, l1_gap_free, l2_hole_fork, l2_hole_free
from oracle.hw3.probe_target import ProbeTarget
from oracle.sandbox import Sandbox

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
PROBE_FUNCTIONS: dict[str, Callable[[ProbeTarget], str]] = {
    "l1_gap_free": l1_gap_free, "l1_gap_fork": l1_gap_fork, "init_untouched": init_untouched,
    "destroy_keeps_pool": destroy_keeps_pool, "l2_hole_free": l2_hole_free, "l2_hole_fork": l2_hole_fork,
    "many_sequences": many_sequences, "many_forks": many_forks, "two_engines": two_engines, "big_pool": big_pool,
}
C_ONLY = {"big_pool"}  # about int overflow in a C address: no Python counterpart
MEMORY_SAFETY_ITEM = "memory_safety"  # the item a memory error the grader saw in a probe's run is left to

# What each probe's verdict rests on (evidence.py): a probe resting on an EDIT or the STATE is not run where
# those are not graded (Python: none is run there, pyprobes.py). Two edit only on a path the submission's state
# chooses (many_sequences, to tell a free count's bug from a create's refusal; a create's set-up, to set a wild
# L1 slot to NULL); they rest on the STATE, so they never run where an edit cannot be made.
RESTS_ON: dict[str, frozenset[str]] = {
    "l1_gap_free": frozenset({RETURNS, STATE, EDIT}), "l1_gap_fork": frozenset({RETURNS, STATE, EDIT}),
    "l2_hole_free": frozenset({RETURNS, STATE, EDIT}), "l2_hole_fork": frozenset({RETURNS, STATE, EDIT}),
    "init_untouched": frozenset({RETURNS, STATE, POOL}), "destroy_keeps_pool": frozenset({RETURNS, STATE, POOL}),
    "many_sequences": frozenset({RETURNS, STATE}), "many_forks": frozenset({RETURNS, STATE}),
    "two_engines": frozenset({RETURNS, STATE}), "big_pool": frozenset({RETURNS, STATE, POOL, EDIT}),
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
    stopped_in: str | None = None  # the API call the probe had entered last when the submission crashed or hung
    owner: str | None = None  # not checked, checked past, or failed with `met`: the item whose bug it met (None:
    # some other item's)
    unavailable: bool = False  # not checked: this machine cannot run it (no item's bug)
    checked: bool = True  # it judged its rule (passed or failed it): its set-up did not stop at another item's bug
    past: bool = False  # it judged its rule, which holds, and met another item's bug (owner's) on the way
    not_graded: str = ""  # not checked: its verdict would rest on what this kind of submission cannot give
    # (evidence.py), in a student's words; no point, no cost
    met: str = ""  # failed, and met another item's bug (owner's) as well, in words: that item must fail for it too

    @property
    def elsewhere(self) -> bool:
        """It crashed or hung in a call the probe is not about."""
        return self.stopped_in is not None and self.stopped_in not in SUBJECTS.get(self.name, ALL_CALLS)


def judge(name: str, target: ProbeTarget) -> ProbeResult:
    """Runs probe `name` on `target` (closed after) and words its result. A stray access the grader counted in the
    probe's run (`memory_error`: natively, counted after the operation that made it) stops nothing: a stray read
    changes no state, and a stray write lands on a page the driver maps for it, in no live block, so what the grader
    reads of the state after it is the submission's doing as before it. The probe's verdict stands as it would
    without the stray (a failure of its rule is its item's, another item's bug met is that item's), and the stray is
    charged to memory_safety where the grader saw it (stray_charge.py): each bug costs its own item, once. A rule
    found holding with no other item's bug met says memory_safety's was met on the way. Only a crash stops a probe
    (_verdict)."""
    rule = PROBES[name]
    try:
        result = _verdict(name, rule, target)
    finally:
        target.close()
    stray = getattr(target, "memory_error", None)
    if stray is None or not (result.passed and result.checked) or result.past:
        return result
    return ProbeResult(name, rule, True, f"its rule holds; on the way, another item's bug: {stray} (item "
                       f"{MEMORY_SAFETY_ITEM})", owner=MEMORY_SAFETY_ITEM, past=True)


def _verdict(name: str, rule: str, target: ProbeTarget) -> ProbeResult:
    """Probe `name`'s result on `target`, from what it observed alone."""
    try:
        return ProbeResult(name, rule, True, PROBE_FUNCTIONS[name](target))
    except Unavailable as why:
        return ProbeResult(name, rule, True, f"not checked: {why}", unavailable=True, checked=False)
    except CheckedPast as why:
        return ProbeResult(name, rule, True, f"its rule holds; on the way, another item's bug: {why}", owner=why.owner, past=True)
    except NotChecked as why:
        return ProbeResult(name, rule, True, f"not checked: {why} (another item's bug)", owner=why.owner,
                           checked=False)
    except ProbeFailed as failure:
        also = failure.past
        return ProbeResult(name, rule, False, str(failure), owner=also.owner if also is not None else None,
                           met=str(also) if also is not None else "")
    except ImplementationFailure as failure:  # it crashed, hung, raised or left a state that cannot be read: on the
        # fence no memory error ends a call (each is a stray the run goes on past, driver.c), so a heap the C library
        # found corrupted (its blocks only past the fence's room) is a crash like any other, the probe's item's
        return ProbeResult(name, rule, False, target.stopped(failure), target.entered)
    except Exception as exc:  # what was observed has a shape no probe step expects (a short ref_count)
        return ProbeResult(name, rule, False, f"raised {type(exc).__name__}: {exc}")


def not_graded_result(name: str, kind: str) -> ProbeResult:
    """Probe `name` left out for a submission of `kind`: it rests on what that kind cannot give (evidence.py)."""
    why = not_graded(kind, RESTS_ON[name])
    assert why is not None, f"{name} is graded for a {kind} submission"
    return ProbeResult(name, PROBES[name], True, f"not checked: {why}", checked=False, not_graded=why)


def run_probes(driver: Path, timeout: float = 10, *, sandbox: Sandbox | None = None,
               only: Iterable[str] = tuple(PROBES), strays: list[Stray] | None = None) -> list[ProbeResult]:
    """Each probe of PROBES (or of `only`) on a C submission built into `driver` (c/build.py), each in its own
    driver process in the sandbox, for at most `timeout` s. A stray access the grader counts in a probe's run is
    noted in `strays` (the submission's: stray_charge.py charges it to memory_safety), named by the probe."""
    from oracle.hw3.c.probe_adapter import CProbeAdapter

    noted = strays if strays is not None else []
    return [judge(name, named(CProbeAdapter(driver, limit=timeout, sandbox=sandbox, watch=Watch(noted)),
                              f"white-box probe {name}")) for name in only]
