"""Long campaigns (oracle/campaign.py): `pagedcheck campaign` writes a campaign folder and runs HypoFuzz on it,
workers sharing its example database; `pagedcheck fuzz --replay DIR` replays what any worker stored, shrinks
and prints it. The replay is tested with failures Hypothesis itself stores (pytest on the campaign's test module,
no HypoFuzz needed); the campaign with HypoFuzz (`pip install -e '.[campaign]'`, skipped without it) on one
machine with two workers, on a planted bug."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.campaign import Campaign, hypofuzz_missing
from tests.conftest import ROOT
from tests.test_prefix_teeth import broken_engine  # noqa: F401 (a fixture)


def pagedcheck(*argv: str, cwd: Path = ROOT, path: Path | None = None, timeout: float = 600):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (ROOT, path) if p)}
    return subprocess.run([sys.executable, "-m", "oracle.cli", *argv], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=timeout)


def planted(broken_engine, variant: str) -> tuple[str, Path]:  # noqa: F811
    """The impl spec of our engine with a broken variant's patch, and the folder that makes it importable."""
    name = broken_engine(variant)
    return f"lab:{name}", Path(importlib.util.find_spec(name).submodule_search_locations[0]).parent


def test_a_campaign_folder_says_what_it_runs(tmp_path):
    campaign = Campaign("prefix", "engine", 30)
    written = campaign.write(tmp_path / "c")
    assert {path.name for path in written} == {"campaign.json", "pytest.ini", "test_pagedcheck_campaign.py"}
    assert Campaign.read(tmp_path / "c") == campaign
    assert json.loads((tmp_path / "c" / "campaign.json").read_text()) == {"family": "prefix", "impl": "engine",
                                                                          "steps": 30}
    with pytest.raises(ValueError, match="holds no campaign.json"):
        Campaign.read(tmp_path)


def test_replay_of_a_folder_that_is_no_campaign_is_one_line(tmp_path):
    done = pagedcheck("fuzz", "--replay", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip() == (f"pagedcheck fuzz: error: --replay {tmp_path} holds no campaign.json: not a "
                                   "folder `pagedcheck campaign --db` made")


def test_what_a_worker_stores_replays_shrunk_with_one_command(broken_engine, tmp_path):  # noqa: F811
    """A worker is any process running the campaign's test: here plain pytest, whose Hypothesis stores the failing
    example in the campaign's database under the key HypoFuzz uses too."""
    impl, path = planted(broken_engine, "no_null_block")
    folder = tmp_path / "campaign"
    Campaign("prefix", impl, 20).write(folder)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(path)])}
    worker = subprocess.run([sys.executable, "-m", "pytest", str(folder / "test_pagedcheck_campaign.py"), "-q",
                             "-c", str(folder / "pytest.ini"), "--rootdir", str(folder), "-p", "no:cacheprovider"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert worker.returncode == 1, worker.stdout[-2000:]  # the planted bug failed the test
    replayed = pagedcheck("fuzz", "--replay", str(folder), "-q", cwd=tmp_path, path=path)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert f"replayed the failures stored in {folder / 'examples'}" in replayed.stdout
    assert "state = PrefixMachine()" in replayed.stdout and "null block" in replayed.stdout
    assert f"Rerun: pagedcheck fuzz --replay {folder} --impl {impl}" in replayed.stdout
    fixed = pagedcheck("fuzz", "--replay", str(folder), "--impl", "engine", "-q", cwd=tmp_path)
    assert fixed.returncode == 0 and "no failure stored in the campaign fails" in fixed.stdout, fixed.stdout


def test_a_campaign_folder_is_for_one_implementation(tmp_path):
    Campaign("prefix", "engine", 50).write(tmp_path / "c")
    done = pagedcheck("campaign", "--family", "prefix", "--impl", "lab:engine.prefix", "--db", str(tmp_path / "c"))
    assert done.returncode == 2
    assert done.stderr.strip() == (f"pagedcheck campaign: error: --db {tmp_path / 'c'} is the campaign of prefix "
                                   "engine with --steps 50: give those, or another folder (one per implementation)")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    done = pagedcheck("campaign", "--family", "prefix", "--db", str(tmp_path / "other"))
    assert done.returncode == 2 and "exists and is not a campaign folder" in done.stderr
    done = pagedcheck("campaign", "--family", "prefix", "--impl", "nope:x", "--db", str(tmp_path / "new"))
    assert done.returncode == 2 and done.stderr.startswith("pagedcheck campaign: error: --impl nope:x: ")


@pytest.mark.skipif(hypofuzz_missing() is None, reason="HypoFuzz is installed here")
def test_without_hypofuzz_the_campaign_says_how_to_install_it(tmp_path):
    done = pagedcheck("campaign", "--family", "prefix", "--db", str(tmp_path / "new"))
    assert done.returncode == 2 and "HypoFuzz is not installed: pip install 'pagedcheck[campaign]'" in done.stderr


@pytest.mark.skipif(hypofuzz_missing() is not None, reason="HypoFuzz is not installed: pip install -e '.[campaign]'")
def test_two_hypofuzz_workers_find_a_planted_bug_and_the_replay_prints_it(broken_engine, tmp_path):  # noqa: F811
    impl, path = planted(broken_engine, "no_null_block")
    folder = tmp_path / "campaign"
    found = pagedcheck("campaign", "--family", "prefix", "--impl", impl, "--workers", "2", "--db", str(folder),
                       "--seconds", "900", cwd=tmp_path, path=path, timeout=1200)
    log = (folder / "hypofuzz.log").read_text() if (folder / "hypofuzz.log").is_file() else ""
    assert found.returncode == 1, found.stdout + found.stderr + log[-3000:]
    assert "using 2 processes to fuzz 1 test" in log
    assert f"Replay and shrink it (on any machine, with the same pagedcheck and Hypothesis): " \
           f"pagedcheck fuzz --replay {folder}" in found.stdout
    replayed = pagedcheck("fuzz", "--replay", str(folder), "-q", cwd=tmp_path, path=path)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "First divergence: " in replayed.stdout and "null block" in replayed.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["campaign"]  # no litter where it ran
    assert sorted(p.name for p in folder.iterdir()) == ["campaign.json", "examples", "hypofuzz.log", "pytest.ini",
                                                       "test_pagedcheck_campaign.py"]
