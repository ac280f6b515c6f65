"""`pagedcheck mutation --family NAME`: a family's own mutmut table, run in a copy of the checkout."""

import tomllib
from pathlib import Path

from mutation import python as campaign
from oracle.family import MutationTarget, families
from tests.test_mutation_cli import ROOT, stand_in


def test_with_mutmut_table_replaces_only_that_table():
    text = "[project]\nname = 'x'\n\n[tool.mutmut]\nsource_paths = ['a/']\n\n[tool.other]\nk = 1\n"
    data = tomllib.loads(campaign.with_mutmut_table(text, {"source_paths": ["b/"], "args": ["-k", "not x"]}))
    assert data["tool"]["mutmut"] == {"source_paths": ["b/"], "args": ["-k", "not x"]}
    assert data["project"] == {"name": "x"} and data["tool"]["other"] == {"k": 1}


def test_every_family_campaign_names_files_of_this_checkout():
    for family in families().values():
        target = family.mutation
        assert target is not None, family.name
        assert campaign.load_triage(ROOT / target.triage) is not None
        for path in (target.mutmut or {}).get("pytest_add_cli_args_test_selection", []):
            assert (ROOT / path).is_file(), path
        for path in (target.mutmut or {}).get("source_paths", []):
            assert (ROOT / path).is_dir(), path


def test_a_family_table_runs_in_a_copy_and_leaves_the_checkout_alone(tmp_path):
    checkout = stand_in(tmp_path)
    before = (checkout / "pyproject.toml").read_text()
    target = MutationTarget("engine/ (stand-in)", "mutation/equivalent.toml", {
        "source_paths": ["engine/"],
        "pytest_add_cli_args_test_selection": ["tests/test_engine.py::test_double"],  # label() goes untested
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q"],
    })
    result = campaign.run_target(checkout, target, jobs=1)
    assert result.target == "engine/ (stand-in)" and result.stats["killed"] >= 1
    assert result.stats["survived"] + result.stats["no_tests"] >= 1  # the table's narrower selection was used
    assert (checkout / "pyproject.toml").read_text() == before and not (checkout / "mutants").exists()
    assert "mutmut on engine/ (stand-in):" in campaign.render(result, 0.5)
