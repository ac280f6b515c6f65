"""The white-box probes on Python implementations. Every probe rests on the engine's objects (a count, a table,
the list) or on an edit of them, and a Python submission's objects are its own word (oracle/hw3/evidence.py,
unread.py): none is run on a graded Python submission, each is not graded, in its own words. The probes' logic
is still tested here, on the tests' own variants read and edited in this process (probe_in_process.py): each
bug a probe is aimed at (tests/broken/probes/<probe>.patch) fails that probe, with the words the same probe says of a
C submission (one probe for both: probes.py)."""

import pytest

from oracle.hw3.evidence import EDIT, STATE, WORDS, not_graded
from oracle.hw3.probes import PROBES, RESTS_ON, judge
from oracle.hw3.probe_scale import spread_id
from oracle.hw3.pyprobes import C_ONLY, run_python_probes
from oracle.hw3.pyremote import served
from tests.conftest import broken_python
from tests.fixtures import HW3_PROBE_VERDICTS, PAST
from tests.probe_in_process import InProcessTarget

EDITING = {name for name, rests_on in RESTS_ON.items() if EDIT in rests_on} - C_ONLY
NOT_RUN = {name for name, rests_on in RESTS_ON.items() if not_graded("python", rests_on)} - C_ONLY
NOT_GRADED = f"Not graded for a Python submission: {WORDS[EDIT]}."
STATE_NOT_GRADED = f"Not graded for a Python submission: {WORDS[STATE]}."


def _spec(bug: str) -> str:
    """The engine with tests/broken/probes/<bug>.patch applied (`engine`: the engine itself), as a module name."""
    return "engine.llm_memory" if bug == "engine" else broken_python(bug)


def probes(bug: str, only=tuple(PROBES)):
    """The probes' results for the engine with tests/broken/probes/<bug>.patch, as grading runs them: in its child
    process."""
    with served(_spec(bug)) as remote:
        return run_python_probes(lambda: remote(timeout=20.0), only)


def judged(bug: str, probe: str):
    """The probe's result on that engine: in the child for a probe the grader runs on Python,
    in this process (reads and edits included) for one it does not (NOT_RUN), to test its logic."""
    if probe in NOT_RUN:
        return judge(probe, InProcessTarget(_spec(bug)))
    (result,) = probes(bug, [probe])
    return result


def test_no_probe_is_run_on_a_python_submission_and_each_says_why() -> None:
    results = probes("engine")
    assert [r.name for r in results] == list(PROBES)
    assert all(r.passed for r in results), [(r.name, r.detail) for r in results]
    assert {r.name for r in results if r.detail.startswith("not applicable")} == C_ONLY
    assert EDITING == {"l1_gap_free", "l1_gap_fork", "l2_hole_free", "l2_hole_fork"}
    assert NOT_RUN == set(PROBES) - C_ONLY == {r.name for r in results if r.not_graded}
    assert all(r.not_graded == NOT_GRADED and not r.checked for r in results if r.name in EDITING)
    assert all(r.not_graded == STATE_NOT_GRADED and not r.checked for r in results if r.name in NOT_RUN - EDITING)


def test_the_engine_passes_every_probe_read_in_this_process() -> None:
    results = [judge(name, InProcessTarget("engine.llm_memory")) for name in sorted(NOT_RUN)]
    assert all(r.passed and r.checked for r in results), [(r.name, r.detail) for r in results]


def test_a_probe_that_edits_is_not_run_on_a_python_submission() -> None:
    """The variant's free stops at an unmapped entry: only an edit shows it, and no edit is made, so the probe
    is not graded (neither passed on an edit the submission could fake, nor failed), as on the engine."""
    (result,) = probes("l2_hole_free", ["l2_hole_free"])
    assert (result.passed, result.checked, result.not_graded) == (True, False, NOT_GRADED)
    assert judge("l2_hole_free", InProcessTarget("engine.llm_memory")).checked  # the probe itself runs


def test_a_probe_is_not_graded_by_its_declaration_whichever_bug_its_set_up_meets() -> None:
    """many_sequences reads the counts (and edits the free count only to tell a count's bug from a create's
    refusal): on Python it is not graded by what it rests on, never by where a run goes, so a submission cannot
    steer it anywhere; in this process the edit tells the count's bug from the refusal."""
    said = (f"not checked: create_sequence(engine, {spread_id(2500)}, 1) returned NULL with 2500 sequences live: "
            "free_local_blocks is 0, while ref_count shows 2500 blocks free")
    for bug, probe in (("create_miscounts", "many_sequences"), ("create_leaves_wild", "many_forks")):
        (result,) = probes(bug, [probe])
        assert (result.passed, result.checked, result.not_graded) == (True, False, STATE_NOT_GRADED), result
    local = judge("many_sequences", InProcessTarget(_spec("create_miscounts")))
    assert (local.passed, local.checked, local.owner) == (True, False, "free_count")
    assert local.detail.startswith(f"{said}; with free_local_blocks set to 2500 it succeeds"), local.detail


# the patches named after a probe: each has the bug that probe is aimed at, and fails it
AIMED = sorted(name for name, (probe, passes, _) in HW3_PROBE_VERDICTS.items() if name == probe and not passes)
CHECKS = sorted(set(HW3_PROBE_VERDICTS) - set(AIMED))


def test_six_probes_have_a_bug_aimed_at_them() -> None:
    assert AIMED == ["init_untouched", "l2_hole_fork", "l2_hole_free", "many_forks", "many_sequences", "two_engines"]
    assert len(CHECKS) == 24


@pytest.mark.parametrize("probe", AIMED)
def test_a_bug_fails_the_probe_aimed_at_it(probe: str) -> None:
    """Each patch of tests/broken/probes/ named after a probe has the bug that probe is aimed at."""
    _, _, detail = HW3_PROBE_VERDICTS[probe]
    result = judged(probe, probe)
    assert not result.passed and result.detail.startswith(detail), result.detail
    assert result.rule == PROBES[probe]


def test_a_count_bug_in_a_probe_set_up_is_noted_and_the_probe_goes_on() -> None:
    """One bug costs the item of its own rule: the create's count bug is free_count's, and l1_traversal's probe
    still judges the walk past it."""
    results = {"l1_gap_free": judged("create_miscounts", "l1_gap_free")}
    assert results["l1_gap_free"].passed and results["l1_gap_free"].checked and results["l1_gap_free"].detail == (
        f"{PAST}free_local_blocks is 98 after create_sequence(engine, 1, 528), expected 99 (item free_count)")
    assert results["l1_gap_free"].owner == "free_count"


def test_a_short_create_stops_the_probe_that_needs_its_blocks() -> None:
    results = {"l2_hole_free": judged("create_returns_null", "l2_hole_free")}
    assert results["l2_hole_free"].passed and not results["l2_hole_free"].checked
    assert results["l2_hole_free"].detail.startswith("not checked: create_sequence(engine, 1, 48) returned NULL")


def test_an_exception_in_the_implementation_fails_the_probe_with_its_name() -> None:
    results = {probe: judged("fork_raises", probe) for probe in ("l1_gap_fork", "l1_gap_free")}
    assert results["l1_gap_fork"].detail == "raised KeyError: 'boom'" and not results["l1_gap_fork"].passed
    assert results["l1_gap_free"].passed


# Each bug, the probe that meets it, whether that probe fails (False) or passes (True: not checked, or its rule
# judged past another item's bug), and the start of what it says: tests/fixtures.py, HW3_PROBE_VERDICTS.
@pytest.mark.parametrize("bug", CHECKS)
def test_each_check_of_a_probe_names_what_it_found(bug: str) -> None:
    probe, passes, detail = HW3_PROBE_VERDICTS[bug]
    result = judged(bug, probe)
    assert result.passed == passes and result.detail.startswith(detail), result.detail
