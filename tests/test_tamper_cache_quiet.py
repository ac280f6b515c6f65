"""Tamper suite, the kernel's page cache as a channel between a submission's processes (issue 17, cache-quiet):
every try of alloc_failure (oracle/hw3/alloc_failure.py) is a fresh driver, and the tries must not be able to
count themselves. Same shape as tests/test_tamper_review10.py: the submission is graded by a separate `pagedcheck`
process in a world of its own, under bubblewrap and without it, and must get exactly its honest score.
"""

import ctypes
import platform
from contextlib import closing
from pathlib import Path

import pytest

from oracle import seccomp
from oracle.hw3 import alloc_failure
from tests.conftest import REFERENCE_C, SUBMISSIONS, patched
from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import c_submission, graded_problems, reaper  # noqa: F401
from tests.test_alloc_failure import _alloc_failure as alloc_failure_item
from tests.test_sandbox import _without_bwrap

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


def _page_cache_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox's filter as it was before cache-quiet, for this test only: no page-cache call refused or
    answered (preadv2 RWF_NOWAIT and posix_fadvise DONTNEED reach the kernel), everything else as it is."""
    machine = platform.machine()
    arch, socket, forbidden, sessions = seccomp._NATIVE[machine]
    opened = tuple(number for number in forbidden if number not in seccomp._CACHE[machine])
    monkeypatch.setitem(seccomp._NATIVE, machine, (arch, socket, opened, sessions))
    monkeypatch.setitem(seccomp._BY_ARGUMENT, machine, ())
    programs = {(keep, writes): seccomp._filter(keep_group=keep, writes=writes)
                for keep in (False, True) for writes in seccomp.WRITES}
    monkeypatch.setattr(seccomp, "_PROGRAMS", programs)
    monkeypatch.setattr(seccomp, "_BUFFERS", {key: ctypes.create_string_buffer(code or b"")
                                              for key, code in programs.items()})


def _alloc_failure_of_the_tally(tmp_path: Path) -> tuple[str, str]:
    """tally_dodges on broken/alloc_failure graded in this process on alloc_failure alone: its status and message."""
    source = patched(patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / "alloc_failure.patch"),
                     ATTACKS / "tally_dodges.patch")
    return alloc_failure_item(tmp_path, source)


# The order holds alone: with the page cache left open to the tally (the filter as before), the tries run in the
# program's order let it dodge (the control: alloc_failure passes on its bug), and in a secret order it meets an
# unchecked allocation. Its count still tells it something of the order (how many tries of its call ran since a try
# of a later call), so it dodges some of the four unchecked tries (2.3, 4.3, 4.4, 5.3) by chance, and the try reported
# is whichever it missed first (its words differ: heap blocks left allocated at one, a free count off at another, so
# the test asks for the call and the rule, not the words); it dodges all four about once in 10^5 grades (a simulation of its tally over 200,000
# shuffles of the 16 tries), which would fail this test.
# Its bubblewrap case is the long profile's (README, Development): in ci35 its control took 173 s without bubblewrap
# and 42 s with it, and both times found no channel, so it skipped; the test above asserts the honest score under the
# real filter in CI. Its fallback case stays in CI (tests/test_profile.py: no test's only run leaves CI).
@pytest.mark.parametrize("without_bwrap", [pytest.param(False, marks=pytest.mark.slow, id="bwrap"),
                                           pytest.param(True, id="without-bwrap")])
def test_tries_in_a_secret_order_learn_no_k_even_from_an_open_page_cache(without_bwrap: bool, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    if platform.machine() not in seccomp._NATIVE:
        pytest.skip("no system call filter on this machine")
    if without_bwrap:
        _without_bwrap(monkeypatch)
    _page_cache_open(monkeypatch)
    with monkeypatch.context() as in_order:
        in_order.setattr(alloc_failure, "_shuffled", lambda counts: [(index, k) for index, count in enumerate(counts)
                                                                     for k in range(1, count + 1)])
        controls = []
        for attempt in range(3):  # the tally reads the page cache, which the kernel fills in the background
            # (readahead): now and then a count comes out wrong and the tally meets its own unchecked allocation.
            # The control shows the channel is there, so one dodge in three attempts is enough.
            (tmp_path / f"in_order{attempt}").mkdir()
            controls.append(_alloc_failure_of_the_tally(tmp_path / f"in_order{attempt}"))
            if controls[-1][0] == "passed":
                break
    if controls[-1][0] != "passed":  # the kernel's readahead, not the grader: CI's machine made 3 of 3 counts wrong
        pytest.skip(f"the page cache here did not carry the tally in {len(controls)} attempts (background "
                    f"readahead), so the order cannot be shown to hold alone on this run: {controls[-1][1]}")
    (tmp_path / "secret").mkdir()
    status, message = _alloc_failure_of_the_tally(tmp_path / "secret")
    assert status == "failed", message
    assert "create_sequence" in message and "[rule: Robustness: a failed malloc leaves no trace" in message, message
