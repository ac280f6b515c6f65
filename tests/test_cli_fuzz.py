"""`pagedcheck fuzz` called in-process through oracle.cli.main: exit codes, JSON, errors, the repro program.

Exit status is the CLI's contract with CI: 0 green, 1 the implementation failed, 2 a usage error. A usage
error is one line on stderr, never a traceback. A failure prints a minimal program a person can paste.
"""

import json
import os
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from io import StringIO
from pathlib import Path

import pytest

from oracle.cli import main
from tests.conftest import broken_python, broken_python_folder

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--examples", "20", "--steps", "15", "-q"]
BROKEN = broken_python("fork_no_incref")  # its program must name a created sequence: fork takes one


def run(argv: list[str]) -> tuple[int, str, str]:
    """main(argv) with stdout/stderr captured; argparse's SystemExit becomes its exit code."""
    out, err = StringIO(), StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code
    return code, out.getvalue(), err.getvalue()


def test_green_run_exits_0_and_writes_json_statistics(tmp_path):
    path = tmp_path / "report.json"
    code, out, _ = run(["fuzz", *FAST, "--seed", "1", "--json", str(path)])
    assert code == 0 and "OK" in out
    report = json.loads(path.read_text())
    assert {"steps", "seconds", "examples", "rules", "events"} <= report.keys()
    assert report["passed"] is True and report["divergence"] is None
    assert report["examples"] == 20 and report["steps"] > 0 and report["seconds"] >= 0  # the target, never more
    assert report["shrink_replays"] == 0 and report["cut_short"] is None
    assert report["rules"]["init"] == report["examples"] and sum(report["rules"].values()) == report["steps"]
    assert report["events"]  # at least some boundary was reached


def test_same_seed_gives_the_same_run(tmp_path):
    reports = []
    for name in ("a.json", "b.json"):
        assert run(["fuzz", *FAST, "--seed", "7", "--json", str(tmp_path / name)])[0] == 0
        reports.append(json.loads((tmp_path / name).read_text()))
    a, b = ({k: r[k] for k in ("steps", "examples", "rules", "events", "seed")} for r in reports)
    assert a == b


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--examples", "0"], "--examples"),
        (["--examples", "x"], "--examples"),
        (["--steps", "-3"], "--steps"),
        (["--seed", "abc"], "--seed"),
        (["--json", "/nonexistent/dir/x.json"], "/nonexistent/dir"),
        (["--impl", "no.such.module"], "no.such.module"),
        (["--impl", "os"], "does not define llm_init"),
        (["--family", "nope"], "--family"),
    ],
    ids=["examples-0", "examples-x", "steps-negative", "seed-abc", "json-missing-dir", "impl-unimportable", "impl-missing-functions", "family"],
)
def test_malformed_options_exit_2_with_a_one_line_error_and_no_traceback(argv, says):
    code, out, err = run(["fuzz", *FAST, *argv])
    assert code == 2
    assert "Traceback" not in out + err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("pagedcheck") and says in errors[0], err
    assert "examples" not in out  # failed before any run


@pytest.fixture(scope="module")
def broken_run():
    """One CLI run against a broken engine (fork forgets ref_count), shared by the tests below."""
    return run(["fuzz", "--impl", BROKEN, "--examples", "300", "--steps", "10", "--seed", "0", "-q"])


def test_broken_implementation_exits_1_with_program_and_first_divergence(broken_run):
    code, out, _ = broken_run
    assert code == 1
    assert "Minimal failing program" in out and "state = HW3Machine()" in out
    assert re.search(r"^sequences_\d+ = state\.create", out, re.M)  # bundle lines kept: the fork step names one
    assert re.search(r"^First divergence: ref_count\[\d+\]: expected \d+, got \d+ after fork_sequence\(engine, -?\d+, -?\d+\)$", out, re.M), out
    assert f"--impl {BROKEN}" in out and "--seed 0" in out  # the rerun line


def test_printed_program_is_runnable_and_raises_the_divergence(broken_run, tmp_path):
    """Pasting the program into python must reproduce the same first divergence."""
    _, out, _ = broken_run
    program = out.split("(run it with python):\n\n", 1)[1].split("\n\nFirst divergence: ", 1)[0]
    divergence = out.split("First divergence: ", 1)[1].splitlines()[0]
    script = tmp_path / "repro.py"
    script.write_text(program + "\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(broken_python_folder()),
                                                                   os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, env=env)
    assert done.returncode != 0
    assert f"oracle.hw3.driver.Divergence: {divergence}" in done.stderr, program + "\n---\n" + done.stderr


def test_a_failing_run_counts_programs_and_shrink_replays_apart(tmp_path):
    path = tmp_path / "report.json"
    code, out, _ = run(["fuzz", "--impl", broken_python("no_cow"), "--examples", "30", "--steps", "20", "--seed", "3",
                        "--json", str(path), "-q"])
    report = json.loads(path.read_text())
    assert code == 1 and report["passed"] is False and report["cut_short"] is None
    assert 1 <= report["examples"] <= 30 and report["shrink_replays"] > 0
    assert report["rules"]["init"] == report["examples"]  # the generated programs' steps alone
    assert f"; shrinking: {report['shrink_replays']} replays" in out and "may not be minimal" not in out


def test_a_c_file_fails_with_its_minimal_program_as_numbered_c_calls(submission):
    """A C student reads the minimal program as C calls, numbered, each with what it must return, the failing
    one marked, and what went wrong there, expected beside actual, naming the rule."""
    folder = submission("broken", "append_cow")
    code, out, _ = run(["fuzz", "--impl", str(folder / "llm_memory.c"), "--seed", "1", *FAST])
    assert code == 1, out
    listed = out.split("Minimal failing program, as C calls", 1)[1].split("The same program for pagedcheck", 1)[0]
    calls = re.findall(r"^/\*\s+(\d+) \*/ (?:engine = )?(\w+)\(", listed, re.M)
    assert calls[0] == ("1", "llm_init") and [int(n) for n, _ in calls] == list(range(1, len(calls) + 1)), listed
    assert "fork_sequence(engine" in listed and "state." not in listed  # C calls, no machine steps
    marked = re.search(r"^/\*\s+(\d+) \*/ (append_kv\(engine, \d+, -?\d+\));\s+/\* must return 0  <-- went wrong here \*/$",
                       listed, re.M)
    assert marked, listed
    assert re.search(rf"^Call {marked.group(1)} `{re.escape(marked.group(2))}`: .*expected -?\d+, got -?\d+ "
                     r"\(rule: Task 4: .*\)$", listed, re.M), listed


def test_a_python_module_fails_with_its_minimal_program_as_python_calls(broken_run):
    code, out, _ = broken_run
    listed = out.split("Minimal failing program, as Python calls", 1)[1].split("The same program for pagedcheck", 1)[0]
    assert re.search(r"^\s+1: engine = llm_init\(pool, \d+\)", listed, re.M) and "<-- went wrong here" in listed, listed
