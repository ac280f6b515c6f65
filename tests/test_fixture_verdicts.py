"""One bug costs the items of its own rule, once: each broken C fixture, graded with every item of the default
rubric (a small fuzz budget), fails exactly the items tests/fixtures.py names for it, plus possibly fuzz,
and no other; the items that read past another rule's bug say which item owns it.

Each grade takes half a minute under coverage: the default suite grades a sample of the C fixtures (DEFAULT_FIXTURES:
one per rubric item, and each fixture whose verdict has a pinned exception of its own), of the unseen submissions and
of the Python variants (DEFAULT_UNSEEN, DEFAULT_PYTHON); the long profile
(`PAGEDCHECK_PROFILE=long python -m pytest -m slow tests/test_fixture_verdicts.py`) grades every one."""

from collections.abc import Callable
from pathlib import Path

import pytest

from oracle.hw3.grade import grade, load
from tests.conftest import BROKEN_PROBES, BROKEN_PYTHON, SUBMISSIONS, broken_python, sampled
from tests.fixtures import (HW3_C_FAILS, HW3_C_NOT_PASSED, HW3_C_NOT_RUN, HW3_C_WORDS, HW3_PROBE_FAILS,
                            HW3_PROBE_VERDICTS, HW3_PYTHON_FAILS, HW3_UNSEEN_FAILS)
from tests.test_grade import small_rubric

# Unmeasured by --cov (conftest.py `unmeasured`): measured, these grades took 68 s each in ci35 (about 45 of its 166 worker-minutes,
# 83 of wall clock), when ci35's coverage with them was 95.62 %; the verdicts' paths are measured by tests/test_grade.py's
# graded fixtures and the judge's and settlement's own tests.
pytestmark = pytest.mark.unmeasured

FIXTURES = sorted(HW3_C_FAILS)


def test_every_broken_hw3_fixture_has_its_expected_items() -> None:
    assert {patch.stem for patch in (SUBMISSIONS / "broken").glob("*.patch")} == HW3_C_FAILS.keys()
    assert {patch.stem for patch in (SUBMISSIONS / "unseen").glob("*.patch")} >= HW3_UNSEEN_FAILS.keys()
    assert {patch.stem for patch in BROKEN_PYTHON.glob("*.patch")} == HW3_PYTHON_FAILS.keys()
    assert {patch.stem for patch in BROKEN_PROBES.glob("*.patch")} == HW3_PROBE_FAILS.keys()
    assert not HW3_PYTHON_FAILS.keys() & HW3_PROBE_FAILS.keys()  # one name, one patch (conftest.broken_python_patch)
    assert HW3_PROBE_VERDICTS.keys() <= HW3_PROBE_FAILS.keys() | HW3_PYTHON_FAILS.keys()
    for name, (item, _) in HW3_C_WORDS.items():  # the item its message is read from is one it fails
        assert item in HW3_C_FAILS[name] | {"fuzz"}, name


# The default suite's sample: the fixture named after each rubric item (int_block_offset is big_pool's; compiles is
# test_grade's test_warnings_fail_compiles_and_the_rest_is_graded[broken], the same grade asserting as much), each
# fixture HW3_C_NOT_RUN or HW3_C_NOT_PASSED pins with a verdict of its own (but hang_in_free, whose hangs are waited out: the
# long profile's; grade-all's hostile "hang" shows a hang's items in the default suite), and a fixture whose one bug
# owns two items. A second fixture of a rule and verdict CI already grades is the long profile's (each grade is half
# a minute or more under coverage): repro_fork_at_head pins tail_insertion's verdict ([tail_insertion] keeps it),
# cmut_create_cap_257 is a second bug owning two items ([realloc_registry] keeps it), and big_pool's ways past a bug
# of another rule are sampled by a create mapping no block ([create_floor_blocks]; create_kv_count_rounded is a second
# create_free count, first_fit_bound_free_count a second first_fit bug beside [first_fit]'s last fit).
DEFAULT_FIXTURES = {
    "llm_init", "create_free", "fork", "append_cow", "llm_destroy", "int_block_offset", "null_engine",
    "check_before_allocate", "first_fit", "no_premature_writes", "free_count", "l1_traversal", "tail_insertion",
    "fuzz", "memory_safety", "alloc_failure",
    "cmut_init_refuses_32mib", "init_refuses_all", "malloc_ref_count",
    "realloc_registry",
    "create_floor_blocks",
}


@pytest.mark.parametrize("name", sampled(FIXTURES, DEFAULT_FIXTURES))
def test_a_broken_fixture_fails_exactly_its_own_items(name: str, tmp_path: Path, submission: Callable[..., Path]) -> None:
    report = grade(str(submission("broken", name)), load(small_rubric(tmp_path / "rubric.toml")), tmp_path, timeout=1.0)
    failed = {item.id for item in report.items if item.status == "failed"}
    assert failed - {"fuzz"} == HW3_C_FAILS[name], [(i.id, i.message) for i in report.items if i.id in failed]
    if name in HW3_C_NOT_PASSED:
        assert {item.id for item in report.items if item.status != "passed"} == HW3_C_NOT_PASSED[name]
        assert report.exit_status == 1
    not_run = {item.id: item.message for item in report.items if item.status == "not_run" and item.max_points}
    assert set(not_run) == HW3_C_NOT_RUN.get(name, set()), not_run
    for message in not_run.values():  # each says what stopped it (the judge's words, or a probe's), and which item that is
        assert ("checked nothing of its own rule" in message or "could not check its rule" in message) \
            and "item " in message, message
    for item in report.items:
        if item.status == "passed" and item.message.startswith("read past"):
            assert "that is item " in item.message and "'s to judge" in item.message


# The default suite's sample: each submission whose bug another rule's item once took, or that costs two items
# (free_skips_last_l1). One whose bug only its own rule's item ever saw is a second fixture of that rule, the long
# profile's: append_moves_seq_to_tail, append_zeroes_new_page and cow_sets_old_ref_to_one (CI grades the broken
# fixtures [tail_insertion], [no_premature_writes] and [append_cow] of test_a_broken_fixture_fails_exactly_its_own_items).
DEFAULT_UNSEEN = {"create_cap_in_loop", "create_ceil_plus_one", "free_skips_last_l1", "init_refuses_partial_block",
                  "init_int_cast_before_divide", "rewrite_fork_allocs_all_l2", "create_double_decrement"}


@pytest.mark.parametrize("name", sampled(sorted(HW3_UNSEEN_FAILS), DEFAULT_UNSEEN))
def test_an_unseen_submission_fails_exactly_its_own_items(name: str, tmp_path: Path, submission: Callable[..., Path]) -> None:
    report = grade(str(submission("unseen", name)), load(small_rubric(tmp_path / "rubric.toml")), tmp_path, timeout=1.0)
    failed = {item.id for item in report.items if item.status != "passed" and item.max_points}
    assert failed - {"fuzz"} == HW3_UNSEEN_FAILS[name], [(i.id, i.message) for i in report.items if i.id in failed]


# The default suite's sample: one variant per item the variants cost (no_cow and cow_no_oom_check: append_cow by the
# pool's bytes and by the append's return value), and one of each reason a variant costs nothing (the list's order,
# an L1 gap, an L2 table: none graded for Python); the long profile grades every one.
DEFAULT_PYTHON = {"no_cow", "cow_no_oom_check", "destroy_returns_minus_one", "fork_no_incref",
                  "free_count_not_incremented", "last_fit", "zero_on_create", "create_at_head", "fork_breaks_at_null_l1",
                  "oom_append_allocates_l2"}


@pytest.mark.parametrize("name", sampled(sorted(HW3_PYTHON_FAILS), DEFAULT_PYTHON))
def test_a_broken_python_variant_fails_exactly_its_own_items(name: str, tmp_path: Path) -> None:
    report = grade(broken_python(name), load(small_rubric(tmp_path / "rubric.toml")), tmp_path, timeout=1.0)
    failed = {item.id for item in report.items if item.status == "failed"}
    assert failed - {"fuzz"} == HW3_PYTHON_FAILS[name], sorted(failed)
    assert [item.id for item in report.items if item.status == "not_run" and item.max_points] == []



# The white-box probes' bugs (tests/broken/probes/) graded as a Python submission, pinned as measured. The default
# suite's sample: a bug that stops most items' programs at llm_init (their items not run) and one that answers every
# call from the wrong engine (the patch that replaces the calls); the long profile grades every one.
DEFAULT_PROBE_BUGS = {"init_returns_null", "two_engines"}


@pytest.mark.parametrize("name", sampled(sorted(HW3_PROBE_FAILS), DEFAULT_PROBE_BUGS))
def test_a_probe_bug_fails_exactly_its_pinned_items(name: str, tmp_path: Path) -> None:
    report = grade(broken_python(name), load(small_rubric(tmp_path / "rubric.toml")), tmp_path, timeout=1.0)
    failed, not_run = HW3_PROBE_FAILS[name]
    assert {item.id for item in report.items if item.status == "failed"} - {"fuzz"} == failed, \
        [(item.id, item.message) for item in report.items if item.status == "failed"]
    assert {item.id for item in report.items if item.status == "not_run" and item.max_points} == not_run
