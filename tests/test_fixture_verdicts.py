"""One bug costs the items of its own rule, once: each broken C fixture, graded with every item of the default
rubric (a small fuzz budget), fails exactly the items tests/fixture_items.py names for it, plus possibly fuzz,
and no other; the items that read past another rule's bug say which item owns it.

Each grade takes half a minute under coverage: the default suite grades a sample of the C fixtures (DEFAULT_FIXTURES:
one per rubric item, and each fixture whose verdict has a pinned exception), of the unseen submissions and of the
Python variants (DEFAULT_UNSEEN, DEFAULT_PYTHON); the long profile
(`PAGEDCHECK_PROFILE=long python -m pytest -m slow tests/test_fixture_verdicts.py`) grades every one."""

from collections.abc import Callable
from pathlib import Path

import pytest

from oracle.hw3.grade import grade, load
from tests.conftest import sampled
from tests.fixture_items import OWN_ITEMS
from tests.test_grade import small_rubric

FIXTURES = sorted(OWN_ITEMS)
# Items that could check nothing of their own rule past the fixture's bug: not run, 0 points (an item earns
# only what it checked).
# (alloc_failure, 0 points, is not run whenever its program meets any bug with every allocation succeeding.)
NOT_CHECKED: dict[str, set[str]] = {
    "cmut_init_refuses_32mib": {"big_pool"},  # llm_init refuses the 2 GiB pool the probe needs
    "init_refuses_all": {"create_free", "fork", "append_cow", "llm_destroy", "big_pool", "check_before_allocate",
                         "first_fit", "no_premature_writes", "free_count", "l1_traversal", "tail_insertion",
                         "memory_safety"},  # with no engine, only null_engine's calls can be judged
    # ref_count holds the 0xA5 bytes of a fresh malloc: no block can be judged free or shared. The model takes
    # the tables the creates leave over (every entry -1), so the calls decided before the counts (ids, lengths)
    # are still judged; first fit and the probes' set-ups need a free block and check nothing
    "malloc_ref_count": {"big_pool", "first_fit", "l1_traversal"},
    "hang_in_free": {"memory_safety"},  # a free that hangs: the battery does not run whole (create_free's bug)
}


# Fixtures whose fuzz verdict is pinned too: every item that did not pass, fuzz included (one bug, the items of
# its rule only, and fuzz exactly when the seed's programs meet the bug).
NOT_PASSED: dict[str, set[str]] = {
    "first_fit": {"first_fit", "fuzz"},  # last fit: every block id differs from the spec's
    "tail_insertion": {"tail_insertion", "fuzz"},  # head insertion: every list order differs
    "repro_fork_at_head": {"tail_insertion", "fuzz"},
    "l1_traversal": {"l1_traversal"},
    "fuzz": {"fuzz"},
}


# The default suite's sample: the fixture named after each rubric item (int_block_offset is big_pool's; compiles is
# test_grade's test_warnings_fail_compiles_and_the_rest_is_graded[broken], the same grade asserting as much), each
# fixture NOT_CHECKED or NOT_PASSED pins (but hang_in_free, whose hangs are waited out: the long profile's;
# grade-all's hostile "hang" shows a hang's items in the default suite), and a fixture whose one bug owns two items.
DEFAULT_FIXTURES = {
    "llm_init", "create_free", "fork", "append_cow", "llm_destroy", "int_block_offset", "null_engine",
    "check_before_allocate", "first_fit", "no_premature_writes", "free_count", "l1_traversal", "tail_insertion",
    "fuzz", "memory_safety", "alloc_failure",
    "cmut_init_refuses_32mib", "init_refuses_all", "malloc_ref_count", "repro_fork_at_head",
    "cmut_create_cap_257", "realloc_registry",
    # big_pool's ways past a bug of another rule (a create mapping no block or a kv_count off, first fit's bound)
    "create_floor_blocks", "create_kv_count_rounded", "first_fit_bound_free_count",
}


@pytest.mark.parametrize("name", sampled(FIXTURES, DEFAULT_FIXTURES))
def test_a_broken_fixture_fails_exactly_its_own_items(name: str, tmp_path: Path, submission: Callable[..., Path]) -> None:
    report = grade(str(submission("broken", name)), load(small_rubric(tmp_path / "rubric.toml")), tmp_path, timeout=1.0)
    failed = {item.id for item in report.items if item.status == "failed"}
    assert failed - {"fuzz"} == OWN_ITEMS[name], [(i.id, i.message) for i in report.items if i.id in failed]
    if name in NOT_PASSED:
        assert {item.id for item in report.items if item.status != "passed"} == NOT_PASSED[name]
        assert report.exit_status == 1
    not_run = {item.id: item.message for item in report.items if item.status == "not_run" and item.max_points}
    assert set(not_run) == NOT_CHECKED.get(name, set()), not_run
    for message in not_run.values():  # each says what stopped it, and which item that is
        assert "could not check its rule" in message and "item " in message, message
    for item in report.items:
        if item.status == "passed" and item.message.startswith("not checked past"):
            assert "that is item " in item.message and "'s to judge" in item.message


# Submissions of tests/submissions/unseen/ (written without the grader's code in view) that once cost another
# item: each fails exactly these items, plus possibly fuzz.
UNSEEN_ITEMS: dict[str, set[str]] = {
    "create_cap_in_loop": {"check_before_allocate"},  # the cap is met while mapping: a failing create allocated
    "create_ceil_plus_one": {"create_free"},  # a block too many: the probes' set-ups go on past it
    "create_double_decrement": {"free_count"},  # many_sequences' create refused by a free count ref_count contradicts
    "free_skips_last_l1": {"l1_traversal", "memory_safety"},  # a free that skips L1 slot 15 (its blocks leak)
    # the third batch (session 6)
    "append_moves_seq_to_tail": {"tail_insertion"},  # the list's order is creation order, whichever call moved it
    "append_zeroes_new_page": {"no_premature_writes"},  # the record right, and the rest of its fresh block zeroed
    "cow_sets_old_ref_to_one": {"append_cow"},  # a block shared by four: seen only from the second copy on
    "rewrite_cow_only_if_ref_two": {"append_cow"},
    "init_refuses_partial_block": {"llm_init"},  # no_premature_writes also runs on a pool of whole blocks
    "init_int_cast_before_divide": {"big_pool"},  # refuses 2 GiB, takes the 64 MiB the llm_init item gives
    "rewrite_fork_allocs_all_l2": {"fork"},  # the gap probe notes an empty L2 table where the parent has none
    # the fourth batch (session 6)
    "lookup_cache_across_engines": {"create_free"},  # two_engines looks an id up in one engine right after the other
    "create_rejects_negative_id": {"create_free"},  # any int is an id
    "rewrite_cow_stale_record_ptr": {"append_cow"},  # free blocks in a bitmap: big_pool copies out of 2^25 anyway
    "destroy_wipes_live_blocks": {"no_premature_writes"},  # llm_destroy writes the pool: Constraint 4
}


# The default suite's sample: one submission per item the unseen ones cost (free_skips_last_l1 costs two).
DEFAULT_UNSEEN = {"create_cap_in_loop", "create_ceil_plus_one", "free_skips_last_l1", "append_moves_seq_to_tail",
                  "append_zeroes_new_page", "cow_sets_old_ref_to_one", "init_refuses_partial_block",
                  "init_int_cast_before_divide", "rewrite_fork_allocs_all_l2", "create_double_decrement"}


@pytest.mark.parametrize("name", sampled(sorted(UNSEEN_ITEMS), DEFAULT_UNSEEN))
def test_an_unseen_submission_fails_exactly_its_own_items(name: str, tmp_path: Path, submission: Callable[..., Path]) -> None:
    report = grade(str(submission("unseen", name)), load(small_rubric(tmp_path / "rubric.toml")), tmp_path, timeout=1.0)
    failed = {item.id for item in report.items if item.status != "passed" and item.max_points}
    assert failed - {"fuzz"} == UNSEEN_ITEMS[name], [(i.id, i.message) for i in report.items if i.id in failed]


# The Python variants of tests/broken/ (each the engine with one bug), graded in their child process.
PYTHON_OWN_ITEMS: dict[str, set[str]] = {
    "big_endian": {"append_cow"},
    "cap_one_early": {"append_cow"},
    "cap_one_late": {"append_cow"},
    "cow_copies_written_only": {"append_cow"},
    "cow_no_oom_check": {"append_cow"},  # the append's return value: Task 4's
    # the list's order and an L2 table are read only inside the submission's process, which a Python submission's
    # code owns: tail_insertion and the L2 half of check_before_allocate are not graded for it (oracle/hw3/evidence.py)
    "create_at_head": set(),
    "destroy_returns_minus_one": {"llm_destroy"},
    # only an edit of the live tables (an L1 gap) shows these two, and a Python submission's objects are not
    # edited by the grader (oracle/hw3/evidence.py): l1_traversal passes on what is graded, saying what is not
    "fork_breaks_at_null_l1": set(),
    # fork's missing reference shows in no return and no pool byte at the fork, only in later calls (a write to
    # the shared block lands in place, a free hands out a block the child holds): the graded run's own append in
    # place and its own later calls show the references missed (oracle/hw3/fork_witness.py), so those calls' items
    # read past it
    "fork_no_incref": {"fork"},
    "free_breaks_at_null_l1": set(),
    "free_count_not_incremented": {"free_count"},
    "last_fit": {"first_fit"},
    "no_cow": {"append_cow"},
    "oom_append_allocates_l2": set(),
    "zero_on_create": {"no_premature_writes"},
}


# The default suite's sample: one variant per item the variants cost (no_cow and cow_no_oom_check: append_cow by the
# pool's bytes and by the append's return value), and one of each reason a variant costs nothing (the list's order,
# an L1 gap, an L2 table: none graded for Python); the long profile grades every one.
DEFAULT_PYTHON = {"no_cow", "cow_no_oom_check", "destroy_returns_minus_one", "fork_no_incref",
                  "free_count_not_incremented", "last_fit", "zero_on_create", "create_at_head", "fork_breaks_at_null_l1",
                  "oom_append_allocates_l2"}


@pytest.mark.parametrize("name", sampled(sorted(PYTHON_OWN_ITEMS), DEFAULT_PYTHON))
def test_a_broken_python_variant_fails_exactly_its_own_items(name: str, tmp_path: Path) -> None:
    report = grade(f"tests.broken.{name}", load(small_rubric(tmp_path / "rubric.toml")), tmp_path, timeout=1.0)
    failed = {item.id for item in report.items if item.status == "failed"}
    assert failed - {"fuzz"} == PYTHON_OWN_ITEMS[name], sorted(failed)
    assert [item.id for item in report.items if item.status == "not_run" and item.max_points] == []

