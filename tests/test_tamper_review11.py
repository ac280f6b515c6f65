"""Tamper suite, the eleventh adversarial review's attacks (issue 17, round 11): hostile submissions written by a
reviewer who had not seen the designs being built, each on top of a known bug (or the reference C) and aimed at a
design new that day or at words a submission chooses: the fork witness that reads the graded run's own later calls,
the compiler's diagnostics in the compiles item, valgrind's report in memory_safety's text for a student. The table
of what each does and how it fared: tests/hostile_review11/README.md.

Same shape as tests/test_tamper_review9.py: each submission is graded by a separate `pagedcheck` process in a world
of its own on the items it concerns, and must get exactly its honest score, leave no process, change no file outside
the scratch, and the grader must write its report. An attack that breaks the grader is a strict xfail naming the
mechanism and a fix by construction; one that holds is a plain test saying why. Each grading test runs under
bubblewrap and without it (the `scene` fixture: the Landlock fallback and the private Python).
"""

from pathlib import Path

import pytest

from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import c_submission, graded_problems, python_submission, reaper, scene  # noqa: F401

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review11"
PY_ATTACKS = Path(__file__).with_name("hostile_review11")


def _python_problems(scene: Scene, reaper: Reaper, base: str, attack: str, items: tuple[str, ...],
                     weights: dict[str, int], honest: int, full: int) -> list[str]:
    """tests/hostile_review11/<attack>.py on the broken variant `base`, graded on `items` (each of `weights` worth
    its points): what its grade got that the honest score does not allow."""
    sub = python_submission(scene, "review11", base, PY_ATTACKS / f"{attack}.py")
    return graded_problems(scene, reaper, sub, items, honest, full, weights)


# --- 1. references settled once the bug has shown (fork_witness.py, graded_calls.py) --------------------------------
# tests/hostile_review11/refs_settled_once_shown.py on fork_no_incref: the engine keeps the references its forks did
# not take; at the first append that writes in place into a block a correct fork leaves shared (its own ref count 1, a
# reference owed) it pays them all, and forks correctly from then on. The witness reads the graded run's own calls
# after that append, which now show references held. Graded on llm_init (6), fork (8) and append_cow weighed 2, as
# review 9's fork attacks: fork_no_incref's honest score 8/16 (test_tamper_review9's control).
FORK_ITEMS = ("llm_init", "fork", "append_cow")
FORK_HONEST, FORK_MAX = 8, 16
SETTLED_BROKEN = (
    "the fork witness asks the graded run's own calls after the in-place append whether the fork's references were "
    "missed (fork_witness.references_missed), but those calls come after the submission's bug has shown, and the "
    "submission knows it has (its own append wrote in place into a block a correct fork would leave shared): it pays "
    "the references its forks owed right after that append, so the sharer's free and the create after it show "
    "references held, the in-place write stays append_cow's, and the fork item reads past it (fork_shares_blocks, "
    "its one unambiguous program): 14/16 for fork_no_incref's honest 8/16, measured bwrap and fallback, with no "
    "channel and no second process. It pays where a course grades the fork item without first_fit: on the default "
    "rubric the same module gets 40/76 for fork_no_incref's 58/76 (`pagedcheck grade`, bubblewrap), since "
    "Constraint 3's programs show the fork without references where no append wrote in place (the fork's rule, "
    "charged there) and the references paid late leave create_free, append_cow and the fuzz failing. "
    "Fix by construction: evidence that can only excuse a rule may not come after the "
    "difference it excuses: an in-place write into a block the model holds shared is charged to both the fork's and "
    "append_cow's items (each once) unless the graded run showed, before that append, that the fork took its "
    "references (a free of a sharer that left the block held), or the fork item has a program whose fork without "
    "references shows before any append (a sharer's free, then a refused create) and charges the fork's rule there")


# held since fork-evidence: an append that wrote a block a fork's two share in place is charged to the fork's rule as
# well as append_cow's where the same graded run shows its appends copy a block (fork_witness.copies_after: here the
# very next append, once the references are paid, copies the block the two share), so the fork item fails at
# fork_shares_blocks step 5 and append_cow at its own programs: 6/16, measured bwrap and fallback. SETTLED_BROKEN is
# what it broke, kept as the record
@pytest.mark.bwrap_repeat  # the graded run's own calls decide, in both isolations
def test_references_settled_once_the_bug_has_shown_still_cost_the_fork(scene: Scene, reaper: Reaper) -> None:
    """The fork item fails and the grade is at most fork_no_incref's honest one: a fix that charges both the
    fork's and append_cow's items for the in-place write (6/16) holds as well as one that charges the fork's."""
    import json

    problems = _python_problems(scene, reaper, "fork_no_incref", "refs_settled_once_shown", FORK_ITEMS,
                                {"append_cow": 2}, FORK_HONEST, FORK_MAX)
    report = json.loads((scene.out / "report.json").read_text())
    problems = [p for p in problems if not p.startswith(("score ", "exit_status "))]
    if report["score"] > FORK_HONEST:
        problems.append(f"score {report['score']}/{report['max_score']}, above the honest {FORK_HONEST}/{FORK_MAX}")
    problems += [f"the fork item {item['status']}: {item['message'][:200]}" for item in report["items"]
                 if item["id"] == "fork" and item["status"] == "passed"]
    assert not problems, "\n".join([f"refs_settled_once_shown (honest score {FORK_HONEST}/{FORK_MAX}):", *problems])



# --- 2. words a submission has the compiler say (oracle/hw3/c/build.py, the compiles item's message) ---------------
# tests/submissions/hostile/review11/said_by_the_compiler.patch on the reference C: a `#line` directive names the file
# with a string of the submission's own, escapes interpreted (gcc's rule for #line), so every diagnostic after it
# starts with new lines, a run of four backticks, HTML (an image with an onerror, a script), a heading claiming every
# test passed and an image at an address of its choosing; then an `#error`. gcc prints the name raw in each
# diagnostic, which the compiles item's message carries to the terminal, report.html and results.json. The submission
# does not build: 0 of compiles (5) and llm_destroy (6), honest. The words must stay inside a code block in
# results.json's Markdown (a fence longer than any run in the text) and be HTML-escaped in report.html.
SAID_ITEMS = ("compiles", "llm_destroy")
SAID_HONEST, SAID_MAX = 0, 11


# held: markdown.fenced makes the fence longer than any run of backticks in the text (5 here), report.html escapes
# the text, and the terminal shows an escape character as the text \x1b (measured with `pagedcheck grade` on a #line
# name holding ANSI sequences: none reached the terminal)
@pytest.mark.bwrap_repeat  # the grader's own text, in both isolations
def test_words_a_submission_has_the_compiler_say_stay_inside_a_code_block(scene: Scene, reaper: Reaper) -> None:
    import json

    from tests.test_tamper_review2 import _outside_code

    sub = c_submission(scene, None, C_ATTACKS / "said_by_the_compiler.patch")
    problems = graded_problems(scene, reaper, sub, SAID_ITEMS, SAID_HONEST, SAID_MAX)
    results = json.loads((scene.out / "results.json").read_text())
    problems += [f"item {t['name']!r}: the submission's words are Markdown, outside any code block"
                 for t in results["tests"] if t.get("output_format", results.get("output_format")) == "md"
                 and _outside_code(t["output"], "REVIEW11")]
    assert any("REVIEW11" in t["output"] for t in results["tests"]), "the compiler's words never reached the report"
    problems += [f"{page.name}: the submission's HTML is not escaped" for page in scene.out.glob("*.html")
                 if "<img src=x" in page.read_text() or "<script>alert(11)" in page.read_text()]
    assert not problems, "\n".join(["said_by_the_compiler:", *problems])



# --- 3. a fence of valgrind's report closed by a file name (oracle/hw3/memory_safety.py _valgrind_words) ------------
# tests/submissions/hostile/review11/valgrind_fence_closed.patch on broken/memory_safety.patch (freeing a block table
# reads l2[16]): a `#line` names the file with carriage returns around a line of three backticks and a heading; gcc
# writes the name into the debug information, valgrind prints it raw in every frame of its report (its ==PID==
# prefix follows a new line only, never a carriage return), and Python's splitlines splits there. Graded on compiles
# (5) and memory_safety (10): honest 5/15 (review 10's memory attacks). The words must stay inside a code block.
VALGRIND_ITEMS = ("compiles", "memory_safety")
VALGRIND_HONEST, VALGRIND_MAX = 5, 15
FENCE_BROKEN = (
    "memory_safety's text for a student puts valgrind's report in a fence of exactly three backticks "
    "(memory_safety._valgrind_words), and the report holds the source file names of the submission's debug "
    "information, which a `#line` directive chooses whole, escapes interpreted: valgrind prints a name raw and puts "
    "its ==PID== prefix after a new line only, so a carriage return, which Python's splitlines and Markdown both take "
    "for a line's end, starts a line of three backticks that closes the fence, and the heading after it is the "
    "grader's Markdown in results.json (measured: bwrap and fallback, the honest 5/15 kept); a name with no space, "
    "slash or parenthesis reaches the summary line inline too (\"Valgrind: Invalid read of size 4 at <name>:96.\", "
    "memcheck._where keeps it as the site: bold words and a link, measured), and so does what the program printed, "
    "which the report's fence holds after `--- program output ---` (a printf of three backticks, measured). Fix by "
    "construction: valgrind's summary and report go through markdown.said/fenced (a fence longer than any run of "
    "backticks in it), as the student-md branch does (measured there: a fence of four, the heading inside); better, "
    "the log's lines are split on new lines only and any other control character is shown escaped")


# Held since student-md: valgrind's report, which quotes what the program printed and the file names it chose,
# goes into a fence longer than any backtick run in it (oracle/markdown.py fenced), apart from the grader's words.
@pytest.mark.bwrap_repeat  # the grader's own text, in both isolations
def test_a_file_name_of_the_submissions_cannot_close_the_fence_of_valgrinds_report(scene: Scene,
                                                                                  reaper: Reaper) -> None:
    import json

    from tests.test_tamper_review2 import _outside_code

    sub = c_submission(scene, "memory_safety", C_ATTACKS / "valgrind_fence_closed.patch")
    problems = graded_problems(scene, reaper, sub, VALGRIND_ITEMS, VALGRIND_HONEST, VALGRIND_MAX)
    results = json.loads((scene.out / "results.json").read_text())
    assert any("REVIEW11" in t["output"] for t in results["tests"]), "valgrind's report never reached the report"
    problems += [f"item {t['name']!r}: the submission's words are Markdown, outside any code block"
                 for t in results["tests"] if t.get("output_format", results.get("output_format")) == "md"
                 and _outside_code(t["output"].replace("\r", "\n"), "REVIEW11")]
    assert not problems, "\n".join(["valgrind_fence_closed:", *problems])


def test_every_review11_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted(["refs_settled_once_shown", "said_by_the_compiler", "valgrind_fence_closed"])
    table = (PY_ATTACKS / "README.md").read_text()
    assert all(f"`{name}" in table or f"`review11/{name}" in table for name in on_disk)
