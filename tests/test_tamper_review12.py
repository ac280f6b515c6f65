"""Tamper suite, the twelfth adversarial review's attacks (issue 17, round 12): submissions written by a reviewer who
had not seen the designs being built, aimed at the newest: the frozen runtime of the fallback (oracle/runtime.py)
against bubblewrap's view of the system, the blockspace family's grading, the text of a submission's words on
report.html and in results.json (oracle/markdown.py, page_html.py), and the C allocation fence and ledger (driver.c's
memalign, the ledger's countdown, and its test of the driver's own mappings by the instruction that made them). The
table of what each does and how it fared: tests/hostile_review12/README.md.

Same shape as tests/test_tamper_review11.py: each submission is graded by a separate `pagedcheck` process in a world
of its own on the items it concerns, and must get exactly its honest score, leave no process, change no file outside
the scratch, and the grader must write its report. Two are correct submissions written in an unusual way, graded
under bubblewrap and without it in one test: fairness asks the same full marks in both. An attack that breaks the
grader is a strict xfail naming the mechanism and a fix by construction; one that holds is a plain test saying why.
"""

import json
import unicodedata
from pathlib import Path

import pytest

from tests.tamper import ROOT, Reaper, Scene
from tests import tamper_grading
from tests.tamper_grading import c_submission, graded_problems, reaper, scene  # noqa: F401
from tests.test_tamper_review3a import graded as blockspace_graded

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review12"
PY_ATTACKS = Path(__file__).with_name("hostile_review12")


def blockspace_submission(scene: Scene, base: str | None, attack: str) -> Path:
    """tamper_grading.blockspace_submission with tests/hostile_review12/<attack>.py."""
    return tamper_grading.blockspace_submission(scene, base, PY_ATTACKS / f"{attack}.py")


def in_both_isolations(tmp_path: Path, reaper: Reaper, attack: str, points: dict[str, int],
                       honest: int | None = None) -> list[str]:
    """tamper_grading.blockspace_in_both_isolations with tests/hostile_review12/<attack>.py."""
    return tamper_grading.blockspace_in_both_isolations(tmp_path, reaper, PY_ATTACKS / f"{attack}.py", points, honest)


# --- 1. the frozen runtime's view of the system against bubblewrap's (oracle/runtime.py, oracle/isolation.py) ------
# tests/hostile_review12/zoneinfo_at_import.py on the correct engine: the module loads its course's time zone at import
# (zoneinfo.ZoneInfo("America/New_York"), which the standard library reads from /usr/share/zoneinfo). Bubblewrap binds
# the host's /usr read-only; the fallback's run reads only the frozen copy (the interpreter, its standard library,
# dist-packages, the shell tools), which holds no time zone database. Graded on block_table (10) and sharing (15).
FAIR_POINTS = {"block_table": 10, "sharing": 15}
ZONEINFO_BROKEN = (
    "the two isolations show a run different files: bubblewrap binds the host's whole /usr read-only "
    "(oracle/isolation.py), the Landlock fallback lets a run read only the frozen runtime (oracle/runtime.py: the "
    "interpreter, its standard library, dist-packages, the shell tools, the libraries they load), which holds none of "
    "the data the standard library reads from /usr at run time: zoneinfo's database (/usr/share/zoneinfo; no tzdata "
    "package on this machine), so a correct module that loads a time zone at import gets 25/25 under bubblewrap and "
    "0/25 without it (\"the submission did not load: PermissionError: ... /usr/share/zoneinfo/America/New_York\", "
    "measured). Fix by construction: one view of the system for both isolations, made once: bubblewrap binds the "
    "frozen runtime (at its own path, as the fallback runs it) in place of the host's /usr, so a file the fallback "
    "cannot read is one bubblewrap does not show either; or the frozen copy also holds sysconfig's TZPATH folders "
    "(and any other data folder the copied standard library names)")


# held since one-view: every run reads one time zone database (oracle/run_view.py): the host's TZPATH folder, or on a
# host without one the tzdata package's (a dependency of pagedcheck, so on any machine); bubblewrap shows it, the frozen
# runtime holds a copy of it, and each run's environment names it (PYTHONTZPATH, TZDIR); ZONEINFO_BROKEN is what it
# broke, kept as the record
def test_a_time_zone_loaded_at_import_grades_the_same_in_both_isolations(tmp_path: Path, reaper: Reaper) -> None:
    problems = in_both_isolations(tmp_path, reaper, "zoneinfo_at_import", FAIR_POINTS)
    assert not problems, "\n".join(["zoneinfo_at_import (correct, honest 25/25 in both isolations):", *problems])


# --- 2. a temporary file of the submission's own (oracle/isolation.py's sized /tmp, oracle/child.py private_tmp) ------
# tests/hostile_review12/log_in_tmp.py on the correct engine: the module opens a debug log in tempfile.gettempdir() at
# import (logging's FileHandler) and writes a line at each allocate. Under bubblewrap every run has a private, sized
# /tmp (16 MiB, in memory); under the fallback the Python server gets no temporary folder at all (child.py
# popen(private_tmp=False): it could fill the grader's disk). Graded on block_table (10) and sharing (15).
TMP_BROKEN = (
    "bubblewrap gives every run a private, sized /tmp (oracle/isolation.py: --size 16 MiB --tmpfs /tmp, HOME=/tmp), "
    "and the Python server's run keeps it; the Landlock fallback gives the server's run no temporary folder at all "
    "(oracle/child.py popen(private_tmp=False), so that it cannot fill the disk a batch shares) and /tmp is not "
    "writable: a correct module that keeps a debug log in tempfile.gettempdir() gets 25/25 under bubblewrap and 0/25 "
    "without it (\"the submission did not load: FileNotFoundError: No usable temporary directory found in [...]\", "
    "measured; the message also names the grader's own sandbox folder). Fix by construction: what a run may write is "
    "one declaration both isolations apply: the server's run gets the same bounded temporary folder in both (under "
    "Landlock a folder on a size-bounded mount of its own, or a memfd-backed one), or none in both (bubblewrap mounts "
    "no writable /tmp for it either)")


# held since one-view, by the second fix TMP_BROKEN names: the Python server writes nowhere under either isolation
# (oracle/run_view.py: no $TMPDIR under Landlock; an empty /tmp sealed read-only under bubblewrap), so the module's
# FileHandler fails at import the same way in both, 0/25 in each, in the same words, naming no folder of the grader's.
# (A folder bounded by the grader's count of a run's files held it first, and review 13 broke that count three ways:
# tests/test_tamper_review13.py.) TMP_BROKEN is what it broke, kept as the record
def test_a_debug_log_in_the_temporary_folder_grades_the_same_in_both_isolations(tmp_path: Path,
                                                                                  reaper: Reaper) -> None:
    problems = in_both_isolations(tmp_path, reaper, "log_in_tmp", FAIR_POINTS, honest=0)
    said = {(tmp_path / world / "out" / "results.json").read_text().count("No usable temporary directory")
            for world in ("bwrap", "without-bwrap")}
    assert said != {0} and len(said) == 1, said  # the load error, said alike in both
    assert not problems, "\n".join(["log_in_tmp (writes a file: 0/25 in both isolations):", *problems])


# --- 3. Unicode's bidirectional controls in a submission's words (report.html, results.json's Markdown) --------------
# tests/hostile_review12/bidi_status_name.py on watermark_ignored: where the known bug answers OK below the watermark,
# can_allocate answers a status whose name holds a right-to-left override (U+202E) that no pop closes, after words
# written backwards. Graded on the watermark item alone: honest 0/10.
BIDI_ITEMS = {"watermark": 10}
# Unicode's format characters that reorder or hide text (oracle/printable.py escapes them for a terminal and the CSV)
REORDERING = {chr(c) for c in (0x061C, *range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2066, 0x206A))}
BIDI_BROKEN = (
    "oracle/printable.py spells Unicode's reordering characters (U+202A..U+202E, U+2066..U+2069, ...) as escapes for "
    "a terminal and the CSV, but report.html (page_html.e: html.escape) and results.json's Markdown (markdown.fenced)"
    " carry a submission's words with them as they are: a status name holding a right-to-left override that no pop "
    "closes makes a browser lay out the rest of that line right to left, so the words the submission wrote backwards "
    "read forwards after the grader's \"got\" (\"... expected LATER, got OK REVIEW12 every test passed\") and the "
    "grader's own \" [rule: watermark]\" after them on report.html is mirrored, shown before them as \"[kramretaw "
    ":elur]\" (measured: the character reaches both, bwrap and fallback, the honest 0/10 kept; the page as chromium "
    "--headless --screenshot draws it). Bounded: the submission's words end the grader's sentence in every message "
    "seen, so no grader word before them moves. Fix by construction: one function makes a submission's text safe for "
    "any reader, and every writer of a page or Markdown (page_html.e, markdown.fenced, the terminal's Printable) goes"
    " through it: printable's escapes for the format characters, before html.escape or the fence")


# held since bidi-escape (the lead): oracle/tables.py `e` and oracle/markdown.py `fenced` spell a submission's control
# and reordering characters as oracle/printable.py does for a terminal, before html.escape or the fence; BIDI_BROKEN is
# what it broke, kept as the record
@pytest.mark.bwrap_repeat  # the grader's own text, in both isolations
def test_reordering_characters_of_a_submissions_words_reach_no_page_unescaped(scene: Scene, reaper: Reaper) -> None:
    sub = blockspace_submission(scene, "watermark_ignored", "bidi_status_name")
    problems = blockspace_graded(scene, reaper, sub, BIDI_ITEMS, 0)
    results = json.loads((scene.out / "results.json").read_text())
    assert any("21WEIVER" in t["output"] for t in results["tests"]), "the status name never reached the report"
    texts = {"report.html": (scene.out / "report.html").read_text(),
             **{f"results.json item {t['name']!r}": t["output"] for t in results["tests"]}}
    problems += [f"{where}: {unicodedata.name(ch)} (U+{ord(ch):04X}) of the submission's, unescaped"
                 for where, text in texts.items() for ch in sorted(set(text) & REORDERING)]
    assert not problems, "\n".join(["bidi_status_name (honest 0/10):", *problems])


# --- 4. a correct C submission whose blocks come from aligned_alloc (driver.c memalign, the ledger's countdown) -----
# tests/submissions/hostile/review12/cache_line_aligned.patch on the reference C: malloc and calloc are macros for
# aligned_alloc(64, size rounded up to 64) (calloc zeroes by hand, its product checked), each failure checked as the
# reference checks malloc's. Every block then comes from the fence's memalign path (driver.c memalign -> fence_alloc
# with an alignment), which the ledger must count and fail in turn as it does malloc's. Graded on compiles (5), llm_init
# (6), memory_safety (10) and alloc_failure weighed 5: honest 26/26.
ALIGNED_ITEMS = ("compiles", "llm_init", "memory_safety", "alloc_failure")
ALIGNED_HONEST = ALIGNED_MAX = 26


# held: aligned_alloc reaches the fence's memalign (driver.c), whose grants the ledger counts and fails in turn as
# malloc's (its countdown on every request for a fresh place, whatever the alignment), and valgrind's replacement
# under memory_safety; a correct submission keeps full marks
@pytest.mark.bwrap_repeat  # the driver's fence and the grader's ledger decide, in both isolations
def test_blocks_from_aligned_alloc_are_failed_in_turn_as_mallocs_are(scene: Scene, reaper: Reaper) -> None:
    sub = c_submission(scene, None, C_ATTACKS / "cache_line_aligned.patch")
    problems = graded_problems(scene, reaper, sub, ALIGNED_ITEMS, ALIGNED_HONEST, ALIGNED_MAX, {"alloc_failure": 5})
    report = json.loads((scene.out / "report.json").read_text())
    failed = [i["message"] for i in report["items"] if i["id"] == "alloc_failure"]
    assert failed and "allocations failed one at a time" in failed[0], failed
    assert not problems, "\n".join([f"cache_line_aligned (honest {ALIGNED_HONEST}/{ALIGNED_MAX}):", *problems])


# --- 5. memory mapped by the driver's own system call instruction (oracle/hw3/c/ledger.py `driver_site`, driver.c) ---
# tests/submissions/hostile/review12/sequences_on_the_drivers_pages.patch on broken/llm_destroy.patch (llm_destroy
# frees each sequence's tables but not the Sequence): each Sequence record is a page mapped by the driver's own_call
# (found by its bytes between __executable_start and etext, and called), unmapped the same way by free_sequence; the
# known bug's llm_destroy still leaves them. The ledger takes every mapping made from that one instruction for the
# driver's own memory, and valgrind reports no mapping as lost. Graded on llm_destroy (6) and memory_safety (10):
# llm_destroy.patch's honest 0/16 (the controls below measure each honest score).
DRIVERS_PAGES_ITEMS = ("llm_destroy", "memory_safety")
DRIVERS_PAGES_HONEST, DRIVERS_PAGES_MAX = 0, 16
# held since driver-pages: no instruction is trusted once the submission's code has run. The driver maps its own
# table and reply buffer at their bounded size before the handover (driver_main.c reserve_own_memory) and sends
# their places with the listener (no call may unmap, remap or advise them afterwards); the ledger tells the one
# mapping the driver makes later, a pool's window, by what it maps (MAP_SHARED of the grader's memory file, at the
# offset and length the grader gave for that request: ledger.py expect_window), never by where the call was made;
# every other mapping outside the span is a request for a block of the submission's: counted, failed in turn by
# the countdown, FULL past the budget, and live for the rest of the run. Once (review 12) the ledger took every
# mapping made from the driver's own system call instruction (own_call, learnt at the first mapping call after the
# handover) for the driver's, and the submission found that instruction by its bytes and called it: 16/16 for
# llm_destroy.patch's honest 0/16, 100/100 for its 74/100 on the default rubric, and 46/46 for alloc_failure.patch's
# honest 41/46 (measured, bwrap and fallback)


# tests/submissions/hostile/review12/l2_tables_on_the_drivers_pages.patch, the same mechanism on
# broken/alloc_failure.patch (a create whose L2 table cannot be allocated returns NULL and leaks what it built): every
# L2 table is a page mapped by the driver's own_call, and unmapped by it. Graded on compiles (5), create_free (10),
# llm_destroy (6), fuzz (10), memory_safety (10) and alloc_failure weighed 5: alloc_failure.patch's honest 41/46
# (alloc_failure's 5 lost). The attack's own honest score is lower, 15/46: its unmaps of the pages are refused (no
# mapping outside the span is unmapped, ledger.py), so each L2 page really stays mapped, a leak llm_destroy (6), the
# fuzz (10) and memory_safety (10) see, and alloc_failure is not run (5: llm_destroy goes wrong already with no
# allocation failing). Such a page failed in turn by the countdown: tests/test_heap_notify.py.
L2_PAGES_ITEMS = ("compiles", "create_free", "llm_destroy", "fuzz", "memory_safety", "alloc_failure")
L2_PAGES_HONEST, L2_PAGES_ATTACKED, L2_PAGES_MAX = 41, 15, 46
ON_THE_DRIVERS_PAGES = {  # attack -> the known bug it sits on, its items, alloc_failure's weight, the base's honest
    # score, the attack's own, and the full score
    "sequences_on_the_drivers_pages": ("llm_destroy", DRIVERS_PAGES_ITEMS, 0, DRIVERS_PAGES_HONEST,
                                       DRIVERS_PAGES_HONEST, DRIVERS_PAGES_MAX),
    "l2_tables_on_the_drivers_pages": ("alloc_failure", L2_PAGES_ITEMS, 5, L2_PAGES_HONEST, L2_PAGES_ATTACKED,
                                       L2_PAGES_MAX),
}


@pytest.mark.bwrap_repeat  # the grader's own ledger and valgrind decide, in both isolations
@pytest.mark.parametrize("attack", sorted(ON_THE_DRIVERS_PAGES))
def test_the_known_bugs_under_the_drivers_pages_attacks_cost_their_honest_scores(attack: str, scene: Scene,
                                                                                  reaper: Reaper) -> None:
    """The controls: llm_destroy.patch alone scores 0/16 on its items (llm_destroy and memory_safety both see the
    Sequences it leaks), alloc_failure.patch 41/46 on its own (alloc_failure sees the failed create's leak)."""
    base, items, weight, honest, _, full = ON_THE_DRIVERS_PAGES[attack]
    sub = c_submission(scene, base, None)
    problems = graded_problems(scene, reaper, sub, items, honest, full, {"alloc_failure": weight} if weight else {})
    assert not problems, "\n".join([f"{base} (control for {attack}, honest {honest}/{full}):", *problems])


@pytest.mark.bwrap_repeat  # the grader's own ledger and valgrind decide, in both isolations
@pytest.mark.parametrize("attack", sorted(ON_THE_DRIVERS_PAGES))
def test_blocks_on_pages_the_driver_maps_for_them_are_still_the_submissions(attack: str, scene: Scene,
                                                                            reaper: Reaper) -> None:
    """Each page the submission maps outside the span, wherever the call is made, is its block: the Sequences (or L2
    tables) left live are the leak llm_destroy reports."""
    base, items, weight, _, honest, full = ON_THE_DRIVERS_PAGES[attack]
    sub = c_submission(scene, base, C_ATTACKS / f"{attack}.patch")
    problems = graded_problems(scene, reaper, sub, items, honest, full, {"alloc_failure": weight} if weight else {})
    report = json.loads((scene.out / "report.json").read_text())
    destroyed = [i["message"] for i in report["items"] if i["id"] == "llm_destroy"]
    assert destroyed and "still live" in destroyed[0], destroyed
    assert not problems, "\n".join([f"{attack} on {base} (honest {honest}/{full}):", *problems])


def test_every_review12_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted(["zoneinfo_at_import", "log_in_tmp", "bidi_status_name", "cache_line_aligned",
                              "sequences_on_the_drivers_pages", "l2_tables_on_the_drivers_pages"])
    table = (PY_ATTACKS / "README.md").read_text()
    assert all(f"`{name}" in table or f"`review12/{name}" in table for name in on_disk)
