"""The C mutation campaign's other outcomes, with real gcc and the real grader on a one-item rubric (cheap):
survivors (triaged or not), a grader that breaks, a grading that outlives its bound, the command line, and
the campaign's refusals (no gcc, an unreadable source, a source that does not compile cleanly)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mutation import c_campaign
from mutation.c_mutants import generate
from oracle.grading.rubric import Rubric, RubricItem

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("objcopy") is None,
                                reason="needs gcc and objcopy")
ROOT = Path(__file__).resolve().parents[1]
TINY = '#include "llm_memory.h"\nint answer(int x);\nint answer(int x) { return x + 1; }\n'


@pytest.fixture(scope="module")
def compiles_only(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("rubric") / "rubric.toml"
    path.write_text('title = "compiles only"\n[[item]]\nid = "compiles"\npoints = 5\n')
    return path


def _two_compiling_mutants():
    """Two mutants of the reference that compile cleanly and change its object code (constants in init)."""
    return {m.id for m in generate(c_campaign.REFERENCE.read_text(), header_dirs=(c_campaign.REFERENCE.parent,))
            if m.operator == "swap_args" or "BLOCK_SIZE + 1" in "".join(m.mutated_lines)}


def test_survivors_of_a_weak_rubric_are_graded_twice_and_triage_makes_one_equivalent(compiles_only):
    chosen = sorted(_two_compiling_mutants())[:2]
    mutants = {m.id: m for m in generate(c_campaign.REFERENCE.read_text(), header_dirs=(c_campaign.REFERENCE.parent,))}
    first = mutants[chosen[0]]
    triage = {first.id: c_campaign.Triage(first.id, first.mutated_lines[0], "a test says so"),
              "gone@1:1#0": c_campaign.Triage("gone@1:1#0", "x", "stale")}
    lines = []
    result = c_campaign.run_campaign(c_campaign.REFERENCE, jobs=2, rubric_path=compiles_only, triage=triage,
                                     only=lambda m: m.id in chosen, progress=lines.append)
    graded = {o.mutant.id: o for o in result.outcomes}
    assert set(graded) == set(chosen)
    assert all(o.status == "survived" and o.pass_ == "full" for o in graded.values())
    assert [o.mutant.id for o in result.equivalent] == [first.id] and len(result.untriaged) == 1
    assert result.stale_triage == []  # only with a subset: stale entries are not judged
    assert any("passed the quick grading" in line for line in lines) and lines[-1] == "full: 2/2 graded"
    text = c_campaign.render(result, 0.95)
    assert f"equivalent: {first.id}: a test says so" in text
    assert f"SURVIVED (not triaged): {result.untriaged[0].mutant.id}" in text
    assert text.endswith("FAIL: score 0.0000 < threshold 0.95")


def test_render_names_grader_errors_time_outs_and_stale_triage():
    mutant = generate(TINY, name="llm_memory.c")[0]
    result = c_campaign.CampaignResult(
        "x.c", [mutant, mutant], [], [],
        [c_campaign.Outcome(mutant, "error", "fork", 3, "grader error: KeyError: 'x'"),
         c_campaign.Outcome(mutant, "timeout", message="grading took over 1 s")],
        1.0, 1, stale_triage=["old@1:1#0"])
    text = c_campaign.render(result, 0.5)
    assert f"GRADER ERROR: {mutant.id} (fork): grader error: KeyError: 'x'" in text
    assert "killed 1 (of which time-outs 1" in text and "killed by: timeout 1" in text
    assert "note: triaged old@1:1#0 did not survive" in text and text.endswith("PASS")
    assert result.as_dict(0.5)["operators"][mutant.operator]["error"] == 1


def test_a_grading_that_outlives_its_bound_counts_as_killed(compiles_only):
    """A bound of 0 s: the first look at the grading process (after 50 ms) finds it still grading."""
    (chosen,) = sorted(_two_compiling_mutants())[:1]
    result = c_campaign.run_campaign(c_campaign.REFERENCE, jobs=1, rubric_path=compiles_only, triage={},
                                     mutant_seconds=0.0, only=lambda m: m.id == chosen)
    (outcome,) = result.outcomes
    assert outcome.status == "timeout" and outcome.message == "grading took over 0 s"
    assert result.killed == [outcome] and result.score == 1.0


def test_grade_mutant_reports_survival_a_broken_check_and_a_grader_that_cannot_start(tmp_path, compiles_only):
    from oracle.hw3 import grade as hw3

    source = tmp_path / "llm_memory.c"
    shutil.copyfile(c_campaign.REFERENCE, source)
    survived = c_campaign.grade_mutant(source, hw3.load(compiles_only), tmp_path / "out", tmp_path / "build", False)
    assert survived == {"status": "survived", "item": "", "points": 0, "message": ""}
    broken = Rubric("t", (RubricItem("fuzz", "Fuzz", 2, "visible", {"seed": 1}),), "code")
    error = c_campaign.grade_mutant(source, broken, tmp_path / "out", tmp_path / "build", True)
    assert error["status"] == "error" and error["item"] == "fuzz" and "KeyError" in error["message"]
    missing = c_campaign.grade_mutant(tmp_path / "nope" / "llm_memory.c", hw3.load(compiles_only), tmp_path / "out",
                                      tmp_path / "build", True)
    assert missing["status"] == "error" and missing["item"] == "" and missing["message"].startswith("GraderError: ")


def test_the_campaign_refuses_what_it_cannot_run(tmp_path, monkeypatch):
    with pytest.raises(c_campaign.CampaignError, match=f"cannot read {tmp_path}: Is a directory"):
        c_campaign.run_campaign(tmp_path)
    warning = tmp_path / "llm_memory.c"
    warning.write_text('#include "llm_memory.h"\nint f(int x);\nint f(int x) { int y; return x; }\n')
    with pytest.raises(c_campaign.CampaignError, match="itself does not compile cleanly"):
        c_campaign.run_campaign(warning, triage={})
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(c_campaign.CampaignError, match="gcc and objcopy must be on PATH"):
        c_campaign.run_campaign(warning)


def test_a_triage_file_that_is_not_toml_is_refused(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text("[equivalent\n")
    with pytest.raises(c_campaign.CampaignError, match="cannot read the triage file"):
        c_campaign.load_triage(path)
    with pytest.raises(c_campaign.CampaignError, match="cannot read the triage file"):
        c_campaign.load_triage(tmp_path / "missing.toml")


def test_module_command_line_on_a_tiny_source(tmp_path, capsys):
    source = tmp_path / "llm_memory.c"
    source.write_text(TINY)
    report = tmp_path / "r.json"
    ids = [m.id for m in generate(TINY, name="llm_memory.c")][:1]
    assert c_campaign.main([str(source), "--jobs", "1", "--json", str(report), "--only", *ids]) == 0
    data = json.loads(report.read_text())
    assert data["graded"] == 1 and data["killed_by_item"] == {"compiles": 1}
    assert "PASS" in capsys.readouterr().out
    # as `python -m`, grading nothing: score 0, exit 1
    proc = subprocess.run([sys.executable, "-m", "mutation.c_campaign", str(source), "--only", "none"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "FAIL: score 0.0000" in proc.stdout
