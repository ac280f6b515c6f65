"""Tamper suite, the kernel's page cache as a channel between a submission's processes (issue 17, cache-quiet):
every try of alloc_failure (oracle/hw3/alloc_failure.py) is a fresh driver, and the tries must not be able to
count themselves. Same shape as tests/test_tamper_review10.py: the submission is graded by a separate `pagedcheck`
process in a world of its own, under bubblewrap and without it, and must get exactly its honest score.
"""

from contextlib import closing
from pathlib import Path

import pytest

from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import c_submission, graded_problems, reaper  # noqa: F401

ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "cache_quiet"

# --- tries counted in the page cache of the driver's own file (seccomp.py, alloc_failure.py's order) ---------------
# tests/submissions/hostile/cache_quiet/tally_dodges.patch on broken/alloc_failure.patch (create_sequence returns NULL
# and leaks what it built when an L2 table cannot be had). The driver's file holds a never-read run of pages (a large
# const array), one region per create_sequence call of a process. At each create, the region's resident pages
# (cachestat) are the tries of this call made before this one: with the tries run k = 1, 2, ... this try's k is that
# count plus one. Where the k-th allocation would be the unchecked L2 table, a checked dummy allocation takes its
# place, fails and is cleaned up. A try with a failure makes one more page resident (pread); a call with none (a run
# of the whole program, a try of a later call) drops the region (fdatasync, posix_fadvise DONTNEED). Graded on
# compiles (5) and alloc_failure weighed 5, as review 10's budget_filled: honest 5/10.
ALLOC_ITEMS = ("compiles", "alloc_failure")
ALLOC_HONEST, ALLOC_MAX = 5, 10


TALLY_BROKEN = (
    "every try of alloc_failure reads the same driver file (one copy per grade), the page cache keeps what a try "
    "made resident, any reader may drop pages (posix_fadvise DONTNEED) and ask whether one is resident (preadv2 "
    "RWF_NOWAIT), and the tries run k = 1, 2, ...: a try counts the tries of its call before it and knows its k, so "
    "a checked dummy allocation takes the place of the unchecked one that was to fail (10/10 for the honest 5/10, "
    "bubblewrap and fallback). Fix by construction: no run may probe residency or evict (the system call filter), "
    "and the tries run in an order drawn from a secret of the grade's")


# Measured before cache-quiet: 10/10 for the honest 5/10, under bubblewrap and without it (TALLY_BROKEN, kept as the
# record). Held since: the system call filter answers no probe of residency and does no eviction (oracle/seccomp.py:
# preadv2 with RWF_NOWAIT answers EAGAIN whatever is cached, posix_fadvise DONTNEED answers 0 and drops nothing, so
# the tally always reads 0, the dummy never goes where the unchecked allocation is tried, and that one fails), and
# alloc_failure runs its tries in an order drawn from a secret of the grade's (alloc_failure._shuffled), so a count
# of tries a run could still keep (timing a read) is no k: 5/10 under bubblewrap and without it.
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
def test_tries_counted_in_the_page_cache_still_meet_the_unchecked_allocation(without_bwrap: bool, tmp_path: Path,
                                                                             reaper: Reaper) -> None:
    with closing(Scene(tmp_path, without_bwrap=without_bwrap)) as scene:
        sub = c_submission(scene, "alloc_failure", ATTACKS / "tally_dodges.patch")
        problems = graded_problems(scene, reaper, sub, ALLOC_ITEMS, ALLOC_HONEST, ALLOC_MAX, {"alloc_failure": 5})
    assert not problems, "\n".join([f"tally_dodges (honest score {ALLOC_HONEST}/{ALLOC_MAX}):", *problems])
