"""A bug cannot buy points by hiding another (tests/submissions/stacked/, from an adversarial review): a
submission with a second bug planted where it stops the programs that would show the first scores no more
than the first bug alone; two real bugs score no more than either alone. Each such stop is an item's excuse,
and a named item that passed takes the bug itself, once (oracle/grading/grader.py)."""

from pathlib import Path
from typing import Callable

import pytest

from oracle.hw3.grade import grade, load
from tests.test_grade import small_rubric

pytestmark = pytest.mark.unmeasured  # verdicts of whole grades: unmeasured by --cov (conftest.py MEASURE_ALL)


def score(name: str, tmp_path: Path, submission: Callable[..., Path]) -> float:
    out = tmp_path / name
    out.mkdir()
    report = grade(str(submission("stacked", name)), load(small_rubric(out / "rubric.toml")), out, timeout=1.0)
    return report.score


def test_a_create_bug_planted_in_the_probes_set_up_does_not_hide_the_l1_gap_bug(
        tmp_path: Path, submission: Callable[..., Path]) -> None:
    honest = score("gap_stops_free_and_fork", tmp_path, submission)
    assert honest < 100
    assert score("gap_bug_hidden_by_a_planted_create_bug", tmp_path, submission) <= honest


def test_a_free_count_skewed_when_full_does_not_hide_the_out_of_memory_bugs(
        tmp_path: Path, submission: Callable[..., Path]) -> None:
    skewed = score("free_count_skewed_when_full", tmp_path, submission)
    oom = score("oom_checked_after_allocating", tmp_path, submission)
    assert max(skewed, oom) < 100
    assert score("oom_bug_hidden_by_a_skewed_free_count", tmp_path, submission) <= min(skewed, oom)


def test_a_short_create_that_behaves_on_the_second_opinions_pool_does_not_move_its_charge(
        tmp_path: Path, submission: Callable[..., Path]) -> None:
    """The second opinion's count witness (oracle/hw3/fresh_pool.py: the same call on an empty 4096-block pool)
    can be fooled; a one-block create where the call ran still maps its block, so the shortfall is no failed
    search and stays create_free's."""
    honest = score("create_one_block_short", tmp_path, submission)
    assert honest < 100
    assert score("create_short_except_on_a_fresh_pool", tmp_path, submission) <= honest


def test_a_short_create_on_small_pools_does_not_hide_a_fork_bug(tmp_path: Path, submission: Callable[..., Path]) -> None:
    """A state the model cannot hold (records with no block) does not end the programs: the fork after it is
    still judged."""
    fork_bug = score("fork_no_incref_on_small_pools", tmp_path, submission)
    assert fork_bug < 100
    assert score("fork_bug_hidden_by_a_short_create", tmp_path, submission) <= fork_bug


def test_a_list_order_bug_does_not_hide_a_copy_on_write_hang(tmp_path: Path, submission: Callable[..., Path]) -> None:
    """Only a structural difference (a table, a mapping, a count, the list's links) can excuse a later crash or
    hang in its program; head insertion cannot."""
    hang = score("cow_hang_on_small_pools", tmp_path, submission)
    assert hang < 100
    assert score("cow_hang_hidden_by_head_insertion", tmp_path, submission) <= hang


# A second adversarial review (after the second opinion became three witnesses and holes were taken over). Each pair
# is graded twice, 35-55 s under coverage: CI grades one pair of each review (the settlement's "once", and a relabel
# of a write), and a pair whose kind a named test above keeps in CI is the long profile's, the test named beside it.
@pytest.mark.parametrize("plain, attack", [
    # a flag the short call sets cannot fake the witness made where the call ran: it replays up to the call (CI:
    # test_a_short_create_that_behaves_on_the_second_opinions_pool_does_not_move_its_charge, a witness fooled)
    pytest.param("create_short_on_used_pools", "create_short_then_poisoned", marks=pytest.mark.slow),
    pytest.param("append_page_left_unmapped", "append_page_left_unmapped_then_poisoned", marks=pytest.mark.slow),
    # an append into a hole is the spec's append of an unmapped block: the programs go on to the shared block
    # (CI: test_a_short_create_on_small_pools_does_not_hide_a_fork_bug, programs going on past a state the model
    # cannot hold)
    pytest.param("no_copy_on_write", "no_copy_on_write_hidden_by_holes", marks=pytest.mark.slow),
    # a bug its own item misses costs that item once, so a second bug its item catches buys nothing back
    ("free_keeps_shared_references", "free_keeps_shared_references_plus_a_cheap_create_bug"),
    # a create refused though ref_count shows free blocks is retried with the count ref_count gives (CI:
    # test_a_free_count_skewed_when_full_does_not_hide_the_out_of_memory_bugs, a free count that lies at a refusal)
    pytest.param("free_count_and_a_registry_of_1024", "registry_refusal_dressed_as_a_free_count",
                 marks=pytest.mark.slow),
    # a third review (session 6): a write to the append's own block cannot relabel a write elsewhere as
    # Constraint 4's, and a reorder planted beside an append's count bug does not hide it (CI:
    # test_a_list_order_bug_does_not_hide_a_copy_on_write_hang, a reorder planted beside another bug)
    ("append_writes_a_free_block", "append_writes_a_free_block_and_its_own_slot_15"),
    pytest.param("append_skips_counting_id_0", "append_skips_counting_id_0_and_moves_it_to_the_head",
                 marks=pytest.mark.slow),
])
def test_an_attack_scores_no_more_than_its_plain_bug(plain: str, attack: str, tmp_path: Path,
                                                      submission: Callable[..., Path]) -> None:
    honest = score(plain, tmp_path, submission)
    assert honest < 100
    assert score(attack, tmp_path, submission) <= honest
