"""nano-vllm graded in the sandbox with its dependencies: its files as a submission, xxhash and numpy from a site
folder made by `pip install --target` at test time (`grade --site DIR`, oracle/site.py).

nano-vllm's `nanovllm/__init__.py` imports torch and transformers (its LLM class), so the submission is an entry
file beside the package that imports the block manager's two modules under empty parent packages (nothing of
nano-vllm is changed). Needs a git clone (never committed) and PyPI; skipped with the reason otherwise:

    git clone https://github.com/GeeeekExplorer/nano-vllm /tmp/nano-vllm
    PAGEDCHECK_NANOVLLM_GIT=/tmp/nano-vllm python -m pytest tests/test_prefix_nanovllm_site.py
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from oracle.prefix.grade import grade, load

GIT = os.environ.get("PAGEDCHECK_NANOVLLM_GIT", "")
ENTRY = '''"""nano-vllm's BlockManager and Sequence, imported under empty parents (its nanovllm/__init__ imports torch)."""
import sys
import types
from pathlib import Path

here = Path(__file__).resolve().parent / "nanovllm"
for name, path in (("nanovllm", here), ("nanovllm.engine", here / "engine")):
    sys.modules.setdefault(name, types.ModuleType(name)).__path__ = [str(path)]
from nanovllm.engine.block_manager import BlockManager  # noqa: E402
from nanovllm.engine.sequence import Sequence  # noqa: E402
'''


@pytest.fixture(scope="module")
def shared():
    """A folder every sandboxed run's uid may read (pytest's own folders are private to their user)."""
    if not GIT or not Path(GIT).exists():
        pytest.skip("no nano-vllm clone (set PAGEDCHECK_NANOVLLM_GIT, see this file's docstring)")
    folder = Path(tempfile.mkdtemp(prefix="pagedcheck-nanovllm-site-"))
    folder.chmod(0o755)
    yield folder
    subprocess.run(["rm", "-rf", str(folder)], check=False)


@pytest.fixture(scope="module")
def site(shared):
    """xxhash and numpy for the system Python (the same minor version as this one's: the wheels are built for it)."""
    system = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                            text=True).stdout.strip()
    if system != str(sys.version_info[:2]):
        pytest.skip(f"the system Python is {system}, this one {sys.version_info[:2]}: pip here builds for another one")
    folder = shared / "deps"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(folder), "xxhash", "numpy"],
                          capture_output=True, text=True, timeout=900)
    if done.returncode:
        pytest.skip(f"xxhash and numpy could not be installed from PyPI: {done.stderr.strip()[-200:]}")
    subprocess.run(["chmod", "-R", "go-w,o+rX", str(folder)], check=True)
    return folder


def submission(shared: Path, commit: str) -> Path:
    """nano-vllm's package at `commit`, and the entry file beside it."""
    folder = shared / commit
    if not folder.is_dir():
        folder.mkdir()
        archive = subprocess.run(["git", "-C", GIT, "archive", commit, "nanovllm"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
        (folder / "nanovllm_blocks.py").write_text(ENTRY)
        subprocess.run(["chmod", "-R", "o+rX", str(folder)], check=True)
    return folder / "nanovllm_blocks.py"


@pytest.mark.parametrize("commit", ["9fa256a", "bb823b3"])
def test_current_api_gets_full_marks_in_the_sandbox_with_its_site_folder(shared, site, commit, tmp_path):
    report = grade(f"nanovllm:{submission(shared, commit)}@nanovllm_v2", load(), tmp_path, site=site,
                   require_sandbox=True)
    assert report.exit_status == 0 and report.score == report.max_score > 0, [
        (item.id, item.status, item.message) for item in report.items]
    ran = {item.id for item in report.items if item.status == "passed"}
    assert {"fuzz", "hash_chaining", "eviction", "hit_cap", "no_false_hit"} <= ran


def test_without_its_site_folder_the_message_says_how_to_give_one(shared, tmp_path):
    report = grade(f"nanovllm:{submission(shared, '9fa256a')}@nanovllm_v2", load(), tmp_path)
    assert {item.status for item in report.items} == {"not_run"} and report.score == 0
    message = report.items[0].message
    assert "No module named 'xxhash'" in message
    assert "--site DIR" in message and "pip install --target DIR xxhash" in message


def test_old_api_false_hit_fails_no_false_hit_by_its_program_without_fork(shared, site, tmp_path):
    """9e8507e kept a reused block's index entry and checked a hit against the block's own tokens only: a block
    that held [7]*8's second half, reused after [8, 8, 8, 8], still hits for [7]*8."""
    report = grade(f"nanovllm:{submission(shared, '9e8507e')}", load(), tmp_path, site=site)
    items = {item.id: item for item in report.items}
    assert items["no_false_hit"].status == "failed"
    assert items["no_false_hit"].message.startswith(
        "no false hit: step 22 admit(req 9, tokens [7, 7, 7, 7, 7, 7, 7, 7, 5]): req 9 block_table[1]")
    assert "holds the KV computed for the prefix [8, 8, 8, 8, 7, 7, 7, 7], not the KV of the prefix asked for, " \
        "[7, 7, 7, 7, 7, 7, 7, 7]" \
        in items["no_false_hit"].message
    assert items["fuzz"].status == "failed" and "no false hit" in items["fuzz"].message
