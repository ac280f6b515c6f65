"""`pagedcheck mutation`: usage errors, the triage file, and a real (tiny) mutmut campaign end to end.

The campaign of our own engine takes minutes and is run by its documented command (mutation/README.md);
here real mutmut runs on a three-function stand-in checkout, fast enough for CI, so that the runner's reading
of mutmut's statistics, survivors, triage and exit status is tested against mutmut itself.
"""

import json
import os
import textwrap
from pathlib import Path

import pytest

from mutation import python as campaign
from oracle.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_outside_a_checkout_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["mutation", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not inside a pagedcheck checkout" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["--threshold", "1.5"], ["--threshold", "x"], ["--jobs", "0"]])
def test_bad_options_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["mutation", *argv])
    assert exited.value.code == 2 and "error: argument" in capsys.readouterr().err


def test_find_checkout_finds_this_one_from_a_subdirectory():
    assert campaign.find_checkout(ROOT / "tests" / "broken") == ROOT


def test_our_triage_file_loads_and_every_pragma_in_engine_has_a_reason():
    campaign.load_triage(ROOT / campaign.TRIAGE_FILE)
    assert campaign.unlisted_pragmas(ROOT) == []


def test_a_pragma_without_a_reason_is_reported(tmp_path):
    checkout = stand_in(tmp_path)
    source = checkout / "engine" / "llm_memory.py"
    source.write_text(source.read_text().replace("return x * 2", "return x * 2  # pragma: no mutate"))
    assert campaign.unlisted_pragmas(checkout) == ["engine/llm_memory.py:return x * 2"]


def test_triage_entry_without_a_reason_is_refused(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text('[equivalent]\n"m__mutmut_1" = { line = "x" }\n')
    with pytest.raises(campaign.CampaignError, match="needs a `line` and a `reason`"):
        campaign.load_triage(path)
    path.write_text("[equivalent\n")
    with pytest.raises(campaign.CampaignError, match="cannot read the triage file"):
        campaign.load_triage(path)


def test_parse_results_keeps_mutant_lines_only():
    text = "    engine.m.x_f__mutmut_1: killed\n    engine.m.x_f__mutmut_2: survived\nnoise: here\n"
    assert campaign.parse_results(text) == {"engine.m.x_f__mutmut_1": "killed", "engine.m.x_f__mutmut_2": "survived"}


# -- a real campaign on a stand-in checkout ---------------------------------------------------------------

ENGINE = '''
def double(x):
    return x * 2


def label(x):
    return "big" if x > 10 else "small"
'''

TESTS = '''
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.llm_memory import double, label


def test_double():
    assert double(3) == 6


def test_label():
    assert label(20) == "big" and label(1) == "small"
'''


def stand_in(tmp_path: Path, triage: str = "[equivalent]\n") -> Path:
    checkout = tmp_path / "checkout"
    (checkout / "engine").mkdir(parents=True)
    (checkout / "tests").mkdir()
    (checkout / "mutation").mkdir()
    (checkout / "engine" / "__init__.py").write_text("")
    (checkout / "engine" / "llm_memory.py").write_text(ENGINE)
    (checkout / "tests" / "test_engine.py").write_text(TESTS)
    (checkout / "mutation" / "equivalent.toml").write_text(triage)
    (checkout / "pyproject.toml").write_text(textwrap.dedent('''
        [project]
        name = "pagedcheck"
        version = "0"

        [tool.mutmut]
        source_paths = ["engine/"]
        pytest_add_cli_args_test_selection = ["tests/"]
        pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]
    '''))
    return checkout


@pytest.fixture(scope="module")
def campaign_run(tmp_path_factory):
    """One real campaign; `x > 10` -> `x >= 10` survives (nothing tests 10) and is triaged here."""
    tmp = tmp_path_factory.mktemp("mutation")
    checkout = stand_in(tmp, '[equivalent]\n"engine.llm_memory.x_label__mutmut_5" = '
                             '{ line = \'return "big" if x >= 10 else "small"\', reason = "stand-in: nothing asks about 10" }\n'
                             '"engine.llm_memory.x_double__mutmut_99" = { line = "gone", reason = "a stale entry" }\n')
    cwd = os.getcwd()
    os.chdir(checkout)
    try:
        out = tmp / "m.json"
        status = main(["mutation", "-q", "--jobs", "1", "--threshold", "0.5", "--json", str(out)])
        strict = main(["mutation", "-q", "--jobs", "1", "--threshold", "0.9"])
    finally:
        os.chdir(cwd)
    return status, strict, json.loads(out.read_text())


def test_campaign_counts_scores_and_triages_against_real_mutmut(campaign_run):
    status, _, report = campaign_run
    for key in ("killed", "timeout", "survived", "no_tests", "suspicious", "total", "score", "equivalent", "seconds"):
        assert key in report
    assert report["total"] == report["killed"] + report["timeout"] + report["survived"] + report["no_tests"] \
        + report["suspicious"] + report["skipped"] + report["segfault"]
    assert report["no_tests"] == 0 and report["survived"] == 2 and report["killed"] >= 6
    caught = report["killed"] + report["timeout"]
    assert report["score"] == round(caught / (caught + report["survived"]), 4)
    assert [e["name"] for e in report["equivalent"]] == ["engine.llm_memory.x_label__mutmut_5"]
    assert ">= 10" in report["equivalent"][0]["diff"]
    assert report["untriaged_survivors"] and all("@@" in s["diff"] for s in report["untriaged_survivors"])
    assert "engine.llm_memory.x_double__mutmut_99" in report["stale_triage"]
    assert status == 0 and report["passed"] is True and report["threshold"] == 0.5


def test_campaign_below_threshold_exits_1(campaign_run):
    _, strict, report = campaign_run
    assert report["score"] < 0.9 and strict == 1


def test_a_mutant_without_tests_fails_the_campaign_whatever_the_score():
    stats = dict.fromkeys(campaign.STAT_KEYS, 0) | {"killed": 10, "no_tests": 1, "total": 11}
    result = campaign.CampaignResult(stats, [], 1.0, 2)
    assert result.score == 1.0 and not result.passed(0.5)
    assert "FAIL: 1 mutants are reached by no selected test" in campaign.render(result, 0.5)
    assert result.passed(0.5) is False and campaign.CampaignResult(stats | {"no_tests": 0}, [], 1.0, 2).passed(0.95)
