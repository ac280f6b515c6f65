"""`pagedcheck grade-all`: hostile submissions are each graded to completion with exit 1, in bounded time,
leaving no process behind; a broken folder costs its own row only; scores.csv and one report per folder."""

import csv
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from oracle.cli import main
from oracle.hw3.c.build import build
from tests.test_grade import REFERENCE, small_rubric
from tests.test_submission_mistakes import MISTAKES, upload


def _running(fragment: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if fragment in cmdline:
                found.append(cmdline)
    return found


MEMORY_SAFETY = 'id = "memory_safety"\nname = "Memory safety (valgrind, leaks)"\npoints = 10\n'


def memcheck_limit(rubric: str, seconds: float) -> str:
    """`rubric` with memory_safety's limit on one call under valgrind set to `seconds` (CPU seconds, on top of
    valgrind's start-up): a hang under valgrind is waited out twice, so the default 20 s costs a hanging
    submission a minute. The reference's slowest call under valgrind is well under 1 s (its memory_safety passes
    at `timeout = 1.0`), so 5 s stops only a hang, as 20 s does."""
    assert MEMORY_SAFETY in rubric, "the default rubric's memory_safety item changed"
    return rubric.replace(MEMORY_SAFETY, f"{MEMORY_SAFETY}\n[item.options]\ntimeout = {seconds}\n")


# Each hostile submission is the reference plus one act inside a call the checks reach: the label the items
# whose rule owns that call must show. Those items fail with the label (the fuzz item too, where it makes that
# call); the others do not fail for it: they read past it, or are not run when they could check nothing of
# their own rule before it (an act in create_sequence stops every program at its first create).
HOSTILE_LABELS = {
    "segfault": ("crashed with SIGSEGV", {"append_cow", "fuzz"}),  # the 5th append of a driver
    "exit": ("called exit(0)", {"fork", "fuzz"}),
    "abort": ("aborted (SIGABRT)", {"create_free", "fuzz"}),
    "hang": ("hung: no answer within 0.5 s", {"append_cow", "fuzz"}),
    "flood": ("wrote more output than allowed (SIGXFSZ)", {"create_free", "fuzz"}),
    "fork": ("made a forbidden system call (SIGSYS)", {"create_free", "fuzz"}),
    "double_free": ("a double free: this call already freed that block", {"create_free", "fuzz"}),
    "cyclic_list": ("active list broken: ", {"create_free", "fuzz"}),
    "garbage_list": ("state unreadable: the grader could not read a node of your engine's active_seqs list", {"llm_init", "fuzz"}),
    "leak": ("heap: expected every allocation freed", {"llm_destroy", "fuzz"}),
    "missing_symbol": ("link failed: undefined symbols append_kv", {"compiles"}),
    "warning": ("error: unused variable", {"compiles"}),
}


def test_hostile_submissions_are_each_graded_with_exit_1_and_leave_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], submission: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hostile = submission("hostile")  # one folder per hostile submission
    # the grades' sandboxes go under a folder of this test's (traversable by their uids), so that what is
    # left of them can be told from other processes on the machine
    sandboxes = Path(tempfile.mkdtemp(prefix="batch-sandboxes-", dir="/tmp"))
    sandboxes.chmod(0o711)
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    # the items the acts are checked on, and memory safety (valgrind runs the submission outside the driver)
    items = sorted({"compiles", "memory_safety"}.union(*(reached for _, reached in HOSTILE_LABELS.values())))
    rubric = small_rubric(tmp_path / "rubric.toml", items)
    rubric.write_text(memcheck_limit(rubric.read_text().replace("examples = 30", "examples = 15")
                                     .replace("shrink_replays = 2000", "shrink_replays = 30"), 5.0))
    out = tmp_path / "grades"
    status = main(["grade-all", str(hostile), "--out", str(out), "--jobs", "2", "--timeout", "0.5", "--rubric", str(rubric)])
    assert status == 1
    names = sorted(p.name for p in hostile.iterdir())
    rows = list(csv.DictReader((out / "scores.csv").open()))
    assert [row["submission"] for row in rows] == names
    assert {row["status"] for row in rows} == {"failed"}
    assert sorted(HOSTILE_LABELS) == names
    for name in names:
        report = json.loads((out / name / "report.json").read_text())
        assert report["exit_status"] == 1 and report["grader_error"] is None
        assert not [i for i in report["items"] if i["status"] == "error"], name
        scope = json.loads((out / name / "results.json").read_text())
        assert scope["score"] == report["score"] < 100
        label, reached = HOSTILE_LABELS[name]
        items = {i["id"]: i for i in report["items"]}
        for item in reached:  # the act was reached: the item failed with its label, not for another reason
            assert items[item]["status"] == "failed" and label in items[item]["message"] + items[item]["details"], (name, item)
        for item in items.values():  # an item that judged nothing says what stopped it: a directed item in the
            # judge's words (oracle/grading/judge.py), memory_safety's battery and alloc_failure in their own
            if item["status"] == "not_run" and name != "missing_symbol":
                said = item["message"]
                assert "checked nothing of its own rule: " in said or "could not check its rule past" in said, \
                    (name, item["id"], said)
        fuzz = items["fuzz"]
        if fuzz["status"] == "failed":  # a divergence: the minimal program, twice
            assert fuzz["program"] and fuzz["repro"] == "repro.c" and (out / name / "repro.c").is_file(), name
    flood = {i["id"]: i for i in json.loads((out / "flood" / "report.json").read_text())["items"]}["create_free"]
    assert "Your code printed:" in flood["details"] and "more characters)" in flood["details"]  # truncated
    reports = {n: json.loads((out / n / "report.json").read_text()) for n in ("warning", "missing_symbol")}
    # the reference plus a warning: "compiles" fails, the rest is graded on the build without -Werror
    assert reports["warning"]["score"] == reports["warning"]["max_score"] - 5
    assert {i["status"] for i in reports["missing_symbol"]["items"][1:]} == {"not_run"}
    assert "grade-all: [12/12]" in capsys.readouterr().err
    assert not _running(str(sandboxes))  # every process a grade started in its sandbox is gone


def test_one_broken_folder_never_stops_the_batch(tmp_path: Path, submission: Callable[..., Path]) -> None:
    """A broken submission and the submission's own mistakes (nothing uploaded, a main() of its own, a name in
    another case) are ordinary rows scoring 0 of the rubric; a lone llm_memory.c one folder down is graded."""
    batch = tmp_path / "submissions"
    for name, source in (("alice", REFERENCE), ("bob", submission("broken", "tail_insertion"))):
        upload(batch / name, {"llm_memory.c": source / "llm_memory.c"})
    for name, mistake in (("carol", "empty"), ("dave", "stray_main"), ("erin", "misnamed")):
        upload(batch / name, MISTAKES[mistake][0])
    upload(batch / "frank", {"hw3/llm_memory.c": REFERENCE / "llm_memory.c"})
    rubric = small_rubric(tmp_path / "rubric.toml", ["compiles", "tail_insertion"])
    assert main(["grade-all", str(batch), "--rubric", str(rubric), "-q"]) == 1  # all graded, some failed
    out = tmp_path / "submissions-grades"
    rows = {row["submission"]: row for row in csv.DictReader((out / "scores.csv").open())}
    assert (rows["alice"]["score"], rows["alice"]["status"], rows["alice"]["tail_insertion"]) == ("8", "passed", "3")
    assert (rows["bob"]["score"], rows["bob"]["status"], rows["bob"]["tail_insertion"]) == ("5", "failed", "0")
    assert (rows["frank"]["score"], rows["frank"]["status"]) == ("8", "passed")
    for name, mistake in (("carol", "empty"), ("dave", "stray_main"), ("erin", "misnamed")):
        row = rows[name]
        assert (row["score"], row["max_score"], row["status"], row["error"]) == ("0", "8", "failed", ""), row
        report = json.loads((out / name / "report.json").read_text())
        assert all(word in item["message"] for item in report["items"] for word in MISTAKES[mistake][1])
        assert json.loads((out / name / "results.json").read_text())["score"] == 0
    assert (out / "bob" / "repro-tail_insertion.c").is_file()
    assert 'class="failing"' in (out / "bob" / "report.html").read_text()  # the failing step, pictured


def test_grade_all_only_regrades_some_folders_and_keeps_the_rest(
    tmp_path: Path, submission: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    batch, out = tmp_path / "submissions", tmp_path / "grades"
    upload(batch / "alice", {"llm_memory.c": REFERENCE / "llm_memory.c"})
    upload(batch / "bob", {"llm_memory.c": submission("broken", "tail_insertion") / "llm_memory.c"})
    upload(batch / "carol", {})
    rubric = small_rubric(tmp_path / "rubric.toml", ["compiles", "tail_insertion"])
    base = ["grade-all", str(batch), "--out", str(out), "--rubric", str(rubric), "-q"]
    assert main([*base, "--only", "bob"]) == 2  # no earlier grade-all there: a usage error
    assert "holds no scores.csv of an earlier grade-all" in capsys.readouterr().err
    assert main(base) == 1
    before = (out / "scores.csv").read_text()
    alice_report = (out / "alice" / "report.json").read_bytes()
    shutil.copyfile(REFERENCE / "llm_memory.c", batch / "bob" / "llm_memory.c")  # bob fixes his bug
    upload(batch / "dave", {"llm_memory.c": REFERENCE / "llm_memory.c"})  # a late submission, not asked for
    assert main([*base, "--only", "bob"]) == 0  # the regraded one passes
    assert "graded 1 of 1 submissions, 2 other rows kept" in capsys.readouterr().out
    rows = {row["submission"]: row for row in csv.DictReader((out / "scores.csv").open())}
    assert sorted(rows) == ["alice", "bob", "carol"]
    assert (rows["bob"]["score"], rows["bob"]["status"], rows["bob"]["tail_insertion"]) == ("8", "passed", "3")
    old = {row["submission"]: row for row in csv.DictReader(before.splitlines())}
    assert rows["alice"] == old["alice"] and rows["carol"] == old["carol"]  # kept as their reports say
    assert (out / "alice" / "report.json").read_bytes() == alice_report  # never regraded
    assert not (out / "bob" / "repro-tail_insertion.c").exists()  # nothing of bob's earlier grade stays
    assert main([*base, "--only", "bob", "zoe"]) == 2
    assert "--only: no submission folder 'zoe' in" in capsys.readouterr().err


def test_a_kept_row_without_a_report_keeps_its_earlier_scores_csv_row(tmp_path: Path) -> None:
    """grade-all --only keeps each other row as its report.json says; one whose grade wrote no report (a grader
    that was killed, say) keeps what the earlier scores.csv said of it; a skipped row is made afresh."""
    from oracle.grading.batch import Row, earlier_rows, write_csv

    out = tmp_path / "grades"
    (out / "alice").mkdir(parents=True)
    rows = [Row("alice", 1, 5, 8, {"compiles": 5, "tail_insertion": 0}, "", 1.0, "alice"),
            Row("bob", 2, 0, 0, {}, "grading took longer than 60 s", 60.0, "bob"),
            Row("link", 2, 0, 0, {}, "skipped: a symbolic link", 0.0, "", skipped=True)]
    write_csv(out / "scores.csv", rows, ["compiles", "tail_insertion"])
    (out / "alice" / "report.json").write_text(json.dumps({"exit_status": 0, "score": 8, "max_score": 8, "items": [
        {"id": "compiles", "points": 5}, {"id": "tail_insertion", "points": 3}]}))
    kept = {row.name: row for row in earlier_rows(out, ["alice", "bob", "link", "zoe"], {})}
    assert sorted(kept) == ["alice", "bob"]
    assert (kept["alice"].status, kept["alice"].score, kept["alice"].items["tail_insertion"]) == ("passed", 8, 3)
    assert (kept["bob"].status, kept["bob"].error, kept["bob"].folder) == ("grader error", "grading took longer than 60 s", "bob")


def test_a_regrade_that_writes_no_report_shows_no_earlier_score(tmp_path: Path) -> None:
    """An earlier run's report.json and results.json are deleted before the grade runs: a grade that
    writes none (it crashed, or was killed) has no score, whatever the folder held."""
    from oracle.grading.batch import grade_all

    sub, out = tmp_path / "subs" / "alice", tmp_path / "out"
    sub.mkdir(parents=True)
    (out / "alice").mkdir(parents=True)
    earlier = {"score": 100, "max_score": 100, "exit_status": 0, "items": [], "isolation": "bubblewrap (...)"}
    (out / "alice" / "report.json").write_text(json.dumps(earlier))
    (out / "alice" / "results.json").write_text(json.dumps({"score": 100}))
    rows = grade_all([sub], out, lambda submission, folder: ["/bin/sh", "-c", "echo crashed; exit 3"], [],
                     progress=None)
    assert (rows[0].score, rows[0].status) == (0, "grader error") and "no report (exit 3): crashed" in rows[0].error
    assert not (out / "alice" / "report.json").exists() and not (out / "alice" / "results.json").exists()
