"""`pagedcheck fuzz --family prefix` through oracle.cli.main: exit codes, the repro program, usage errors."""

import subprocess
import sys

from tests.test_cli_fuzz import ROOT, run

FAST = ["fuzz", "--family", "prefix", "--examples", "20", "--steps", "15", "-q", "--seed", "3"]


def test_prefix_family_fuzzes_our_engine_green():
    code, out, _ = run(FAST)
    assert code == 0, out
    assert out.startswith("prefix engine: ") and "OK" in out


def test_prefix_family_shape_and_policy_from_impl():
    code, out, _ = run([*FAST, "--impl", "lab:engine.prefix@any"])
    assert code == 0 and "prefix lab:engine.prefix@any" in out


def test_bad_prefix_impl_is_one_line_on_stderr_with_status_2():
    code, out, err = run([*FAST, "--impl", "lab:engine.prefix@nope"])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "unknown policy 'nope'" in err and "Traceback" not in err


def test_a_divergence_prints_a_program_that_reproduces_it(tmp_path):
    impl = "lab:engine.prefix@vllm_v1"  # our engine: last writer wins, freed blocks appended; vLLM v1 differs
    code, out, _ = run(["fuzz", "--family", "prefix", "--impl", impl, "--examples", "400", "--steps", "20", "-q", "--seed", "1"])
    assert code == 1
    program = out.split("run it with python):\n\n", 1)[1].split("\n\nFirst divergence: ", 1)[0]
    divergence = out.split("First divergence: ", 1)[1].splitlines()[0]
    assert ("free order" in divergence or "index" in divergence) and f"--family prefix --impl {impl}" in out
    script = tmp_path / "repro.py"
    script.write_text(program + "\n")
    replay = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                            env={"PYTHONPATH": str(ROOT)})
    assert replay.returncode == 1 and divergence in replay.stderr
