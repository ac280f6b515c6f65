"""Review 17 (2026-11-28): attacks on one CPU per grade (oracle/one_cpu.py) and on branch proc-mem (no procfs for a
native driver's or Python server's run). One CPU held (a submission at SCHED_IDLE under load: 100/100). proc-mem broke
the promise of one grade in both isolations (6/6 against 0/6); held since proc-parity, 0/6 in both."""

from pathlib import Path

from tests.tamper import ROOT, Reaper
from tests.tamper_grading import c_in_both_isolations, reaper  # noqa: F401

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review17"

# tests/submissions/hostile/review17/statm_if_readable.patch on the reference C: after a successful llm_destroy, a
# debugging aid reports the resident pages when access("/proc/self/statm", R_OK) says the file is readable, and trusts
# that answer (no check of the fopen). Graded on llm_destroy (6): a correct engine, 6/6 in both isolations.
STATM_ITEMS = ("llm_destroy",)
STATM_MAX = 6
STATM_BROKEN = (
    "since proc-mem a native run has no procfs, but the two isolations hide it differently: bubblewrap shows /proc as "
    "a folder of mode 0000, so access(2) is EACCES and the aid is skipped (6/6); the Landlock fallback refuses only the "
    "open, so access(2) says readable, fopen returns NULL and llm_destroy crashes (SIGSEGV) under Landlock alone "
    "(review 17: 100/100 with bubblewrap, 74/100 without, on the whole rubric; before proc-mem 100 in both). Fix by "
    "construction: one answer in both to every question about /proc (bubblewrap: a read-only procfs with the same "
    "Landlock rules inside, so access and stat answer as under the fallback and every open is EACCES in both)")


# Held since proc-parity, by that construction (oracle/proc_view.py; oracle/run_view.py PROCFS): a native run's /proc
# answers every question as the fallback's does, access(2) "readable" and every open EACCES, so the aid's unchecked
# fopen returns NULL in both and llm_destroy crashes in both: 0/6 in both (STATM_BROKEN is the record of 6/6 against
# 0/6). 6/6 in both would need access(2) to say "no" under the fallback, which no Landlock rule governs and no system
# call filter can ask by path, or statm to open in both, which no rule allows without /proc/self/mem (review 16).
def test_a_c_engine_that_reads_statm_where_access_allows_grades_the_same_in_both_isolations(
        tmp_path: Path, reaper: Reaper) -> None:
    problems = c_in_both_isolations(tmp_path, reaper, None, C_ATTACKS / "statm_if_readable.patch",
                                    STATM_ITEMS, 0, STATM_MAX)
    assert not problems, "\n".join(["statm_if_readable (fopen NULL, trusted: 0/6 in both isolations):", *problems])
