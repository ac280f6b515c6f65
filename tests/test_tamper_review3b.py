"""Tamper suite, the third adversarial review's attacks, part b (issue 17): hostile submissions written against
the heap ledger (every mapping call answered by the grader), the engine read from outside, memory_safety's two
layouts, and Python judged on its answers and the grader-owned pool, with and without bubblewrap.

Same shape as tests/test_tamper_review2.py: each attack sits on a known bug (C: tests/submissions/broken/<base>.patch,
then tests/submissions/hostile/review3b/<attack>.patch; Python: engine/llm_memory.py with tests/broken/<base>.patch's
calls, then tests/hostile_review3b/<attack>.py), is graded by a separate `pagedcheck` process in a world of its
own on the items it concerns, and must get no more than the bug's honest score, leave no process, change no file
outside the scratch, and the grader must write its report. An attack that breaks the grader today is a strict
xfail naming the mechanism that let it through.
"""

from pathlib import Path

import pytest

from tests.conftest import SUBMISSIONS
from tests.tamper import Reaper, Scene
from tests.tamper_grading import c_submission, python_submission, reaper, scene  # noqa: F401  (fixtures)
from tests.test_tamper_review import Attack
from tests.test_tamper_review2 import attack_problems

C_ATTACKS = SUBMISSIONS / "hostile" / "review3b"
PY_ATTACKS = Path(__file__).with_name("hostile_review3b")

# the five attacks below were written against main before ledger2 merged and hold since: once the driver has
# handed the grader its listener, brk may not grow and the C library's heap serves no block (since fence-only a block
# the fence cannot hold fails, NULL; once it was the C library's after the ledger answered that the fence is full), so
# neither heap.counting nor fence.max_blocks, the driver's own records, can send a block out of the ledger's sight;
# and a mapping outside the span (but a pool's window, told by what it maps, since driver-pages) is counted as a
# live block the submission cannot unmap (ledger.py)
ATTACKS = [
    # honest 5 (compiles): a failing create_sequence allocates its Sequence and L1 table before the check; the
    # attack turns heap.counting off around the doomed allocation
    Attack("counting_paused", "c", "check_before_allocate", ("compiles", "check_before_allocate"), 5),
    # honest 5 (compiles): as above; counters_restored (review2) with the fence told it is full first
    # (fence.max_blocks set to 0, then the driver's counters put back)
    Attack("fence_declared_full", "c", "check_before_allocate", ("compiles", "check_before_allocate"), 5),
    # honest 5 (compiles): freeing a table reads l2[16]; natively the attack makes the L2 tables off the fence
    # (heap.counting off), under valgrind (vgpreload in /proc/self/maps) its loop stops at l2[15]
    Attack("overread_off_fence", "c", "memory_safety", ("compiles", "memory_safety"), 5),
    # honest 5 (compiles): llm_destroy leaks each Sequence, made off the fence natively, freed under valgrind
    Attack("leak_off_fence", "c", "llm_destroy", ("compiles", "llm_destroy", "memory_safety"), 5),
    # honest 5 (compiles): llm_destroy leaks each Sequence, a page of its own mapped by libc's mmap found by address
    Attack("leak_in_own_mapping", "c", "llm_destroy", ("compiles", "llm_destroy", "memory_safety"), 5),
    # honest 5 (compiles): as counting_paused's base
    # held, not by construction: the forged reply ends the call for the grader before the doomed allocations, but
    # their grants wait in the kernel until the grader next waits for the driver, so they count in the next call,
    # and the driver's own reply, read as the next call's, says 2 allocations more: the scenario's next failing
    # create ("Call 5 create_sequence(engine, 2, 4097): ... it allocated 3 time(s)") shows them. A program whose
    # doomed call came last, or whose next call may allocate, would not (README: "Limits of what is checked")
    Attack("reply_before_allocating", "c", "check_before_allocate", ("compiles", "check_before_allocate"), 5),
    # honest 5 (compiles): as counting_paused's base; every create truncates the memory files it holds. Holds by
    # construction: the grader's pools' memory file is sealed before the driver starts (pool_file.py: F_SEAL_SHRINK,
    # F_SEAL_SEAL), so the ftruncate fails (EPERM) and the window the grader reads back is whole
    Attack("pool_file_truncated", "c", "check_before_allocate", ("compiles", "check_before_allocate"), 5),
    # honest 5 (compiles): as counting_paused's base; every create tries to seal the memory files it holds against
    # writes and growth (refused: F_SEAL_SEAL), sets O_APPEND and O_NONBLOCK on its descriptor (the grader writes
    # through a description of its own) and punches a hole over the whole file: the pool reads as zeros, judged as
    # the pool's bytes (pool_file.py)
    Attack("pool_file_worked", "c", "check_before_allocate", ("compiles", "check_before_allocate"), 5),
    # honest: alloc_failure (0 points, reported) fails: a failed L2 allocation leaks the half-built Sequence.
    # Held by construction: alloc_failure fails every allocation of every call in turn, whatever was allocated and
    # freed around the call's own; a call making more than MOST_PER_CALL (64: this one's llm_init makes 202) leaves the
    # item not run, 0 points, as a failure (tests/test_alloc_failure.py finds the same bug among 25 paddings by trying)
    Attack("padded_allocations", "c", "alloc_failure", ("compiles", "alloc_failure"), 5, failing=("alloc_failure",)),
    # honest as above; the padding kept until llm_destroy (a failing call frees its own, leaving no trace). Held by
    # construction: alloc_failure fails every allocation of every call in turn, however many others a call keeps (past
    # MOST_PER_CALL a call, as here, the item is not run, 0 points)
    Attack("padded_kept_allocations", "c", "alloc_failure", ("compiles", "alloc_failure"), 5, failing=("alloc_failure",)),
]
ATTACKS += [
    # honest 6 (llm_init; free_count fails: a create refused after frees, oracle/hw3/refusal_rule.py).
    # Once 11/11 on the items it concerns: the second opinion's pool was a fixed 4096 blocks no program of the
    # rubric uses, so the engine knew it and refused there too, deciding which item its bug cost. Held since no
    # second opinion decides a refusal: only runs of the fixed programs, graded or run as graded
    Attack("second_opinion_spotted", "python", "free_count_not_incremented", ("llm_init", "free_count"), 6),
    # honest 6, as above; the same act on any pool the rubric's fixed programs do not use (their sizes are public).
    # Once 11/11: the second opinion's pool, derived from the program's, was no fixed program's size. Held by
    # construction since no second opinion decides a refusal (oracle/hw3/refusal_rule.py): after calls that moved
    # the free count it is the count's unless the create's own item's programs, run as graded on their own pools,
    # show a create refused before any call moved it
    Attack("second_opinion_by_table", "python", "free_count_not_incremented", ("llm_init", "free_count"), 6),
]
ATTACKS += [
    # honest 6, as above: the Python pools' memory file truncated from inside a call (pool_file_truncated's act);
    # holds as pool_file_truncated does (the file is sealed before the child starts)
    Attack("pool_file_truncated_py", "python", "free_count_not_incremented", ("llm_init", "free_count"), 6),
    # honest 6, as above: pool_file_worked's acts from inside create_sequence
    Attack("pool_file_worked_py", "python", "free_count_not_incremented", ("llm_init", "free_count"), 6),
]
BY_NAME = {attack.name: attack for attack in ATTACKS}


def submission(scene: Scene, attack: Attack) -> Path:
    """Writes the attack's submission into the scene; what `pagedcheck grade` is given."""
    if attack.lang == "python":
        return python_submission(scene, "review3b", attack.base, PY_ATTACKS / f"{attack.name}.py")
    return c_submission(scene, attack.base, C_ATTACKS / f"{attack.name}.patch")


# each held by the grader's own reading of the evidence (the ledger, the sealed pool file, the second opinion's
# pool), the same in both isolations: CI grades it without bubblewrap, the long profile with it too (tests/conftest.py)
@pytest.mark.bwrap_repeat
@pytest.mark.parametrize("name", [pytest.param(a.name, marks=pytest.mark.xfail(strict=True, reason=a.broken))
                                  if a.broken else a.name for a in ATTACKS])
def test_review3b_attack_gets_no_more_than_its_honest_score(name: str, scene: Scene, reaper: Reaper) -> None:
    attack = BY_NAME[name]
    problems = attack_problems(scene, reaper, attack, submission(scene, attack))
    assert not problems, "\n".join([f"{name} (honest score {attack.expected}):", *problems])


def test_every_review3b_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")]
                     + ([p.stem for p in PY_ATTACKS.glob("*.py")] if PY_ATTACKS.is_dir() else []))
    assert on_disk == sorted(a.name for a in ATTACKS)
