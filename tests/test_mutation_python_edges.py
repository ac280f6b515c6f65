"""mutation/python.py's refusals: a checkout whose pyproject.toml does not parse or is another project's,
mutmut exiting non-zero, and statistics it did not write."""

import importlib.util

import pytest

from mutation import python as campaign


def _checkout(root, pyproject: str):
    (root / "engine").mkdir(parents=True)
    (root / "engine" / "llm_memory.py").write_text("")
    (root / "pyproject.toml").write_text(pyproject)
    return root


@pytest.mark.parametrize("pyproject", ["[project\n", '[project]\nname = "other"\n[tool.mutmut]\n',
                                       '[project]\nname = "pagedcheck"\n'])
def test_a_directory_that_only_looks_like_a_checkout_is_not_one(tmp_path, pyproject):
    inner = _checkout(tmp_path / "fake", pyproject)
    with pytest.raises(campaign.CampaignError, match="is not inside a pagedcheck checkout"):
        campaign.find_checkout(inner / "engine")


def test_statistics_mutmut_did_not_write_are_a_campaign_error(tmp_path):
    with pytest.raises(campaign.CampaignError, match="cannot read mutmut's statistics"):
        campaign.read_stats(tmp_path / "missing.json")
    (tmp_path / "s.json").write_text("{not json")
    with pytest.raises(campaign.CampaignError, match="cannot read mutmut's statistics"):
        campaign.read_stats(tmp_path / "s.json")
    (tmp_path / "s.json").write_text('{"killed": 3}')
    assert campaign.read_stats(tmp_path / "s.json") == {**dict.fromkeys(campaign.STAT_KEYS, 0), "killed": 3}


@pytest.mark.skipif(importlib.util.find_spec("mutmut") is None, reason="needs mutmut")
def test_mutmut_exiting_non_zero_is_a_campaign_error_with_its_last_lines(tmp_path):
    with pytest.raises(campaign.CampaignError, match=r"`mutmut no-such-command` exited [1-9]"):
        campaign._mutmut(tmp_path, "no-such-command")


def test_mutated_lines_are_the_added_lines_of_a_diff():
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-    return x * 2\n+    return x / 2\n"
    assert campaign.mutated_lines(diff) == ["return x / 2"]
