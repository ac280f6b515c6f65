"""The white-box probes on Python implementations. Every probe rests on the engine's objects (a count, a table,
the list) or on an edit of them, and a Python submission's objects are its own word (oracle/hw3/evidence.py,
unread.py): none is run on a graded Python submission, each is not graded, in its own words. The probes' logic
is still tested here, on the tests' own variants read and edited in this process (probe_in_process.py): each
bug a probe is aimed at (tests/broken/probe_bugs.py) fails that probe, with the words the same probe says of a
C submission (one probe for both: probes.py)."""

import pytest

from oracle.hw3.evidence import EDIT, STATE, WORDS, not_graded
from oracle.hw3.probes import PROBES, RESTS_ON, judge
from oracle.hw3.probe_scale import spread_id
from oracle.hw3.pyprobes import C_ONLY, run_python_probes
from oracle.hw3.pyremote import served
from tests.probe_in_process import InProcessTarget

EDITING = {name for name, rests_on in RESTS_ON.items() if EDIT in rests_on} - C_ONLY
NOT_RUN = {name for name, rests_on in RESTS_ON.items() if not_graded("python", rests_on)} - C_ONLY
NOT_GRADED = f"Not graded for a Python submission: {WORDS[EDIT]}."
STATE_NOT_GRADED = f"Not graded for a Python submission: {WORDS[STATE]}."


def probes(bug: str, only=tuple(PROBES)):
    """The probes' results for tests.broken.probe_bugs:<bug>, as grading runs them: in its child process."""
    with served(f"tests.broken.probe_bugs:{bug}") as remote:
        return run_python_probes(lambda: remote(timeout=20.0), only)


def judged(bug: str, probe: str):
    """The probe's result on tests.broken.probe_bugs:<bug>: in the child for a probe the grader runs on Python,
    in this process (reads and edits included) for one it does not (NOT_RUN), to test its logic."""
    if probe in NOT_RUN:
        return judge(probe, InProcessTarget(f"tests.broken.probe_bugs:{bug}"))
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
    results = [judge(name, InProcessTarget("tests.broken.probe_bugs:engine")) for name in sorted(NOT_RUN)]
    assert all(r.passed and r.checked for r in results), [(r.name, r.detail) for r in results]


def test_a_probe_that_edits_is_not_run_on_a_python_submission() -> None:
    """The variant's free stops at an unmapped entry: only an edit shows it, and no edit is made, so the probe
    is not graded (neither passed on an edit the submission could fake, nor failed), as on the engine."""
    (result,) = probes("l2_hole_free", ["l2_hole_free"])
    assert (result.passed, result.checked, result.not_graded) == (True, False, NOT_GRADED)
    assert judge("l2_hole_free", InProcessTarget("tests.broken.probe_bugs:engine")).checked  # the probe itself runs


def test_a_probe_is_not_graded_by_its_declaration_whichever_bug_its_set_up_meets() -> None:
    """many_sequences reads the counts (and edits the free count only to tell a count's bug from a create's
    refusal): on Python it is not graded by what it rests on, never by where a run goes, so a submission cannot
    steer it anywhere; in this process the edit tells the count's bug from the refusal."""
    said = (f"not checked: create_sequence(engine, {spread_id(2500)}, 1) returned NULL with 2500 sequences live: "
            "free_local_blocks is 0, while ref_count shows 2500 blocks free")
    for bug, probe in (("create_miscounts", "many_sequences"), ("create_leaves_wild", "many_forks")):
        (result,) = probes(bug, [probe])
        assert (result.passed, result.checked, result.not_graded) == (True, False, STATE_NOT_GRADED), result
    local = judge("many_sequences", InProcessTarget("tests.broken.probe_bugs:create_miscounts"))
    assert (local.passed, local.checked, local.owner) == (True, False, "free_count")
    assert local.detail.startswith(f"{said}; with free_local_blocks set to 2500 it succeeds"), local.detail


@pytest.mark.parametrize(
    "probe, detail",
    [
        ("l2_hole_free",
         "after freeing a sequence whose block_table[0] maps entries 0, 2 and 5 (entry 1 is -1), the blocks past the "
         "gap still have ref_count 1, expected 0 (the loop over an L2 table must not stop at an unmapped entry)"),
        ("l2_hole_fork",
         "fork_sequence(engine, 1, 2) of a parent whose block_table[0] maps entries 0, 2 and 5 (entry 1 is -1): "
         "the child's block_table[0][2] is -1, expected the parent's 2"),
        ("many_sequences",
         f"create_sequence(engine, {spread_id(64)}, 1) returned NULL with 64 sequences live and 4936 free blocks"),
        ("two_engines",
         "create_sequence(b, 1, 5) failed, expected success: sequence 1 exists only in the other engine, a"),
        ("init_untouched",
         "llm_init(pool, 67108864): total_local_blocks is 1024, expected 1048576"),
        ("many_forks",
         "fork_sequence(engine, 0, 255) returned NULL with 254 forks of sequence 0 live, expected a sequence"),
    ],
    ids=["l2_hole_free", "l2_hole_fork", "many_sequences", "two_engines", "init_untouched", "many_forks"],
)
def test_a_bug_fails_the_probe_aimed_at_it(probe: str, detail: str) -> None:
    """Each variant in probe_bugs named after a probe has the bug that probe is aimed at."""
    result = judged(probe, probe)
    assert not result.passed and result.detail.startswith(detail), result.detail
    assert result.rule == PROBES[probe]


PAST = "its rule holds; on the way, another item's bug: "


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
# judged past another item's bug), and the start of what it says.
BUGS = [
    ("create returns NULL", "create_returns_null", "l1_gap_free", True,
     "not checked: create_sequence(engine, 1, 528) returned NULL with 132 free blocks"),
    ("create leaves 0, not -1", "create_leaves_0",
     "l1_gap_free", True, "not checked: block_table[2][1] is 0 after create_sequence(engine, 1, 528)"),
    ("create adds an L2 table", "create_adds_l2",
     "l2_hole_free", True, f"{PAST}block_table[15] is an L2 table after create_sequence(engine, 1, 48) (item create_free)"),
    ("create maps a block twice", "create_maps_twice",
     "l2_hole_fork", True, "not checked: create_sequence(engine, 1, 48) maps 2 distinct blocks, expected 3"),
    ("llm_init returns NULL", "init_returns_null", "l1_gap_fork", True,
     "not checked: llm_init(pool, 8448) returned NULL (item llm_init) (another item's bug)"),
    # what free returns and the list after it are create_free's: the walk is judged by the blocks it released
    ("free returns -1", "free_returns_minus_1", "l1_gap_free", True,
     f"{PAST}free_sequence(engine, 1) returned -1, expected 0 (item create_free)"),
    ("free keeps the node linked", "free_keeps_node", "l1_gap_free", True,
     f"{PAST}the active list is not empty after free_sequence(engine, 1) freed its only sequence (item create_free)"),
    ("fork returns NULL", "fork_returns_null", "l1_gap_fork", True,  # without the gap too: the fork item's bug
     "not checked: fork_sequence(engine, 1, 2) returned NULL for a parent whose L1 slots 0, 3 and 15 are in use (1, 2 "
     "and 4 to 14 NULL), and fork_sequence(engine, 1, 3) of the same parent without the gap returned NULL"),
    ("fork shares L2 tables", "fork_shares_l2", "l1_gap_fork", True,
     f"{PAST}fork_sequence(engine, 1, 2): the child's block_table[0] is the parent's L2 table, expected its own copy (item fork)"),
    ("fork zeroes kv_count", "fork_zeroes_kv_count", "l2_hole_fork", True,
     f"{PAST}fork_sequence(engine, 1, 2): the child's kv_count is 0, expected the parent's 48 (item fork)"),
    ("fork adds an empty L2 table", "fork_adds_l2", "l1_gap_fork", True,  # seen through the API too: the fork's
     f"{PAST}fork_sequence(engine, 1, 2): the child's block_table[1] is an empty L2 table where the parent's slot is NULL, "
     "expected NULL (item fork)"),
    ("fork adds a mapped L2 table", "fork_adds_mapped_l2",
     "l1_gap_fork", False, "fork_sequence(engine, 1, 2) of a parent whose L1 slot 1 is NULL: the child's block_table[1] is an L2 table"),
    ("fork counts a block taken", "fork_takes_block", "l1_gap_fork", True,  # ref_count shows none: free_count's
     f"{PAST}free_local_blocks is 98 after fork_sequence(engine, 1, 2), expected 99: a fork takes no block, and ref_count "
     "shows none taken (item free_count)"),
    ("fork shares no block", "fork_shares_no_block",
     "many_forks", False, "ref_count[0] is 1 after 300 forks of the one-block sequence that maps it, expected 301"),
    ("init writes the pool", "init_writes_pool", "init_untouched", True,
     "not checked: llm_init(pool, 63) wrote into the pool (byte 0) (item no_premature_writes)"),
    ("init takes 63 bytes", "init_takes_63", "init_untouched", False, "llm_init(pool, 63) returned an engine, expected NULL"),
    ("init refuses 65 bytes", "init_refuses_65", "init_untouched", False, "llm_init(pool, 65) returned NULL"),
    ("init counts one free block too few", "init_free_one_short",
     "init_untouched", False, "llm_init(pool, 64): free_local_blocks is 0, expected 1"),
    ("init leaves the list head open", "init_head_open",
     "init_untouched", False, "llm_init(pool, 64): the empty active_seqs head must point to itself both ways"),
    ("init takes a NULL pool", "init_takes_null",
     "init_untouched", False, "llm_init(NULL, 6400) returned an engine, expected NULL"),
    ("destroy returns -1", "destroy_returns_minus_1", "destroy_keeps_pool", False, "llm_destroy(engine) did not return 0"),
    ("destroy writes the pool", "destroy_keeps_pool", "destroy_keeps_pool", True,  # only append_kv may write it
     "not checked: llm_destroy wrote into the pool (byte 0), which only append_kv may write (item no_premature_writes)"),
    ("create takes no block", "create_takes_no_block",  # every block's ref_count is 1: the count is free_count's
     "many_sequences", True, f"{PAST}free_local_blocks is 5000 with 5000 one-block sequences in a 5000-block "
     "pool, expected 0 (item free_count)"),
    ("init counts 100 blocks", "init_counts_100",
     "many_sequences", True, "not checked: llm_init counted 100 blocks in a 5000-block pool"),
]


@pytest.mark.parametrize("bug, probe, passes, detail", [b[1:] for b in BUGS], ids=[b[0] for b in BUGS])
def test_each_check_of_a_probe_names_what_it_found(bug: str, probe: str, passes: bool, detail: str) -> None:
    result = judged(bug, probe)
    assert result.passed == passes and result.detail.startswith(detail), result.detail
