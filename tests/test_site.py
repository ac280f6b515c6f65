"""A submission's dependencies in the sandbox (`--site DIR`, oracle/site.py): a folder of packages made by
`pip install --target`, mounted read-only and last on the sandboxed child's import path, under bubblewrap and
under the fallback; refused in one line when the sandbox could not use it; named in the load error of a
submission that lacks a package. The real case, nano-vllm with xxhash and numpy, is
tests/test_prefix_nanovllm_site.py."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from oracle.grading.grader import GraderError
from oracle.prefix.grade import grade, load
from oracle.site import missing_module_hint, site_folder
from tests.conftest import ROOT
from tests.test_prefix_grade import small_rubric, statuses, with_lab_package


@pytest.fixture
def shared_tmp():
    """A folder under the system's temporary folder that every run's uid may pass through (pytest's own is
    private to its user), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="pagedcheck-site-test-"))
    folder.chmod(0o755)
    yield folder
    subprocess.run(["rm", "-rf", str(folder)], check=False)


def site_with_marker(folder: Path) -> Path:
    """A site folder holding the pure-Python package `sitemarker` (as pip would lay it out)."""
    site = folder / "site"
    (site / "sitemarker").mkdir(parents=True)
    (site / "sitemarker" / "__init__.py").write_text("HELD = 'from the site folder'\n")
    for path in [site, *site.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return site


def student_needing_marker(folder: Path) -> Path:
    student = with_lab_package(folder / "student") / "needs_marker.py"
    student.write_text("import sitemarker\nassert sitemarker.HELD == 'from the site folder'\n"
                       "from labsol import KVCacheManager, Request\n")
    for path in [folder / "student", *(folder / "student").rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return student


def test_a_site_folder_gives_the_submission_its_package(shared_tmp, tmp_path):
    report = grade(str(student_needing_marker(shared_tmp)), load(small_rubric(tmp_path / "rubric.toml")), tmp_path,
                   site=site_with_marker(shared_tmp), require_sandbox=True)
    assert report.exit_status == 0 and report.score == report.max_score, report.items


def test_without_the_site_folder_the_load_error_names_the_package_and_the_option(shared_tmp, tmp_path):
    report = grade(str(student_needing_marker(shared_tmp)), load(), tmp_path)
    assert set(statuses(report).values()) == {"not_run"}
    message = report.items[0].message
    assert "No module named 'sitemarker'" in message
    assert "--site DIR" in message and "pip install --target DIR sitemarker" in message


def test_the_graders_own_packages_stay_out_of_the_child(shared_tmp, tmp_path):
    """hypothesis is the grader's (its virtual environment), not the system Python's: a site folder of other
    packages does not bring it along."""
    student = with_lab_package(shared_tmp / "student") / "needs_hypothesis.py"
    student.write_text("import hypothesis\nfrom labsol import KVCacheManager, Request\n")
    for path in [shared_tmp / "student", *(shared_tmp / "student").rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    if subprocess.run(["/usr/bin/python3", "-I", "-c", "import hypothesis"], capture_output=True).returncode == 0:
        pytest.skip("the system Python has hypothesis of its own")
    report = grade(str(student), load(), tmp_path, site=site_with_marker(shared_tmp))
    assert set(statuses(report).values()) == {"not_run"}
    assert "No module named 'hypothesis'" in report.items[0].message
    assert "not in the --site folder" in report.items[0].message


def test_the_site_folder_is_read_only_in_the_sandbox(shared_tmp, tmp_path):
    site = site_with_marker(shared_tmp)
    student = with_lab_package(shared_tmp / "student") / "writes_site.py"
    student.write_text("import sitemarker, pathlib\n"
                       "pathlib.Path(sitemarker.__file__).write_text('HELD = \"changed\"\\n')\n"
                       "from labsol import KVCacheManager, Request\n")
    for path in [shared_tmp / "student", *(shared_tmp / "student").rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    report = grade(str(student), load(), tmp_path, site=site)
    assert set(statuses(report).values()) == {"not_run"}
    assert "Error" in report.items[0].message  # OSError: read-only file system, or permission denied
    assert (site / "sitemarker" / "__init__.py").read_text() == "HELD = 'from the site folder'\n"


def test_the_fallback_isolation_gives_the_site_folder_too(shared_tmp):
    """With a bwrap that fails first on PATH (a container without namespaces): Landlock's allow-list (or the
    uid fallback) must let the child read the site folder."""
    fake = shared_tmp / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    out = shared_tmp / "out"
    out.mkdir()
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "oracle.cli", "grade", "--family", "prefix",
                           str(student_needing_marker(shared_tmp)), "--site", str(site_with_marker(shared_tmp)),
                           "--rubric", str(small_rubric(out / "rubric.toml")), "--json", str(out / "report.json"),
                           "-q"], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "submission code ran in: landlock" in done.stdout or "submission code ran in: uid" in done.stdout


def test_a_folder_that_is_missing_is_one_line_and_status_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "oracle.cli", "grade", "--family", "prefix", "engine", "--site",
                           str(tmp_path / "nowhere")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"pagedcheck grade: error: --site {tmp_path / 'nowhere'}: no such folder "
        "(make one with `pip install --target DIR PACKAGE...`)"]


def test_a_family_without_site_folders_refuses_the_option(shared_tmp):
    done = subprocess.run([sys.executable, "-m", "oracle.cli", "grade", "engine/c/llm_memory.c", "--site",
                           str(site_with_marker(shared_tmp))], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2 and "the hw3 family's grader takes no site folder" in done.stderr


def test_a_site_folder_others_may_write_or_not_reach_is_refused(shared_tmp, tmp_path):
    site = site_with_marker(shared_tmp)
    (site / "sitemarker").chmod(0o777)
    with pytest.raises(ValueError, match="writable by other users"):
        site_folder(site)
    (site / "sitemarker").chmod(0o755)
    (site / "sitemarker" / "__init__.py").chmod(0o600)
    with pytest.raises(ValueError, match="not readable by other users"):
        site_folder(site)
    private = tmp_path / "private"  # pytest's folders are private to their user
    private.mkdir()
    tmp_path.chmod(0o700)
    with pytest.raises(ValueError, match="not passable by other users"):
        site_folder(private)
    with pytest.raises(GraderError, match="--site"):
        grade("engine", load(), tmp_path / "out", site=private)


def test_the_hint_is_for_missing_modules_only():
    assert missing_module_hint("SyntaxError: invalid syntax (x.py, line 1)", None) == ""
    assert "--site DIR" in missing_module_hint("ModuleNotFoundError: No module named 'xxhash'", None)
    assert "pip install --target /s numpy" in missing_module_hint(
        "ModuleNotFoundError: No module named 'numpy.core'", Path("/s"))


def test_a_module_in_the_current_folder_gets_the_pythonpath_hint(tmp_path):
    """The console script (not `python -m`, which puts the current folder first on the path)."""
    script = Path(sys.executable).with_name("pagedcheck")
    if not script.is_file():
        pytest.skip("no pagedcheck console script beside this Python (pip install -e .)")
    (tmp_path / "mypool").mkdir()
    (tmp_path / "mypool" / "__init__.py").write_text("")
    (tmp_path / "mypool" / "bm.py").write_text("")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    for command in (["fuzz", "--impl", "nanovllm:mypool.bm"], ["grade", "nanovllm:mypool.bm"]):
        done = subprocess.run([str(script), command[0], "--family", "prefix", *command[1:]],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
        assert done.returncode == 2, done.stderr
        assert "'mypool' is in the current folder" in done.stderr and "PYTHONPATH=." in done.stderr


def test_grade_all_gives_every_submission_the_site_folder(shared_tmp):
    classroom = shared_tmp / "class"
    for name in ("alice", "bob"):
        with_lab_package(classroom / name)
        (classroom / name / "kv_cache.py").write_text("import sitemarker\nfrom labsol import KVCacheManager, Request\n")
    for path in [classroom, *classroom.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    site = site_with_marker(shared_tmp)
    rubric = small_rubric(shared_tmp / "course" / "rubric.toml")
    done = subprocess.run([sys.executable, "-m", "oracle.cli", "grade-all", "--family", "prefix", str(classroom),
                           "--site", str(site), "--rubric", str(rubric), "--jobs", "2", "-q"], capture_output=True,
                          text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = (shared_tmp / "class-grades" / "scores.csv").read_text().splitlines()
    assert rows[1].startswith("alice,100,100,passed") and rows[2].startswith("bob,100,100,passed")


def test_fuzz_puts_the_site_folder_on_its_own_path(shared_tmp):
    """fuzz runs the implementation in its own process: the folder goes last on that process's path."""
    site = site_with_marker(shared_tmp)
    pool = shared_tmp / "pool"
    with_lab_package(pool)
    (pool / "needs_marker.py").write_text("import sitemarker\nfrom labsol import *\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(pool)])}
    argv = [sys.executable, "-m", "oracle.cli", "fuzz", "--family", "prefix", "--impl", "lab:needs_marker",
            "--examples", "5", "--seed", "1", "-q"]
    without = subprocess.run(argv, capture_output=True, text=True, cwd=shared_tmp, env=env, timeout=300)
    assert without.returncode == 2 and "No module named 'sitemarker'" in without.stderr
    assert "--site DIR, a folder made by `pip install --target DIR sitemarker`" in without.stderr
    done = subprocess.run([*argv, "--site", str(site)], capture_output=True, text=True, cwd=shared_tmp, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_rubric_names_the_site_folder_for_a_course(shared_tmp, tmp_path):
    """`site = "..."` in a rubric, beside it: every grade and grade-all with that rubric gives it to the child;
    --site wins; a Gradescope bundle refuses it (it would not carry the folder)."""
    site_with_marker(shared_tmp)
    rubric = small_rubric(shared_tmp / "course.toml", prefix='site = "site"\n')
    student = student_needing_marker(shared_tmp)
    done = subprocess.run([sys.executable, "-m", "oracle.cli", "grade", "--family", "prefix", str(student),
                           "--rubric", str(rubric), "-q"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0 and "100/100" in done.stdout, done.stdout + done.stderr
    elsewhere = subprocess.run([sys.executable, "-m", "oracle.cli", "grade", "--family", "prefix", str(student),
                                "--rubric", str(rubric), "--site", str(tmp_path / "none"), "-q"], capture_output=True,
                               text=True, cwd=ROOT, timeout=600)
    assert elsewhere.returncode == 2 and f"--site {tmp_path / 'none'}: no such folder" in elsewhere.stderr
    bundle = subprocess.run([sys.executable, "-m", "oracle.cli", "gradescope-bundle", str(tmp_path / "b.zip"),
                             "--family", "prefix", "--rubric", str(rubric)], capture_output=True, text=True, cwd=ROOT,
                            timeout=600)
    assert bundle.returncode == 2 and "a Gradescope bundle carries no site folder yet" in bundle.stderr
    assert not (tmp_path / "b.zip").exists()
    (shared_tmp / "site" / "sitemarker").chmod(0o777)
    refused = subprocess.run([sys.executable, "-m", "oracle.cli", "grade", "--family", "prefix", str(student),
                              "--rubric", str(rubric), "-q"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"pagedcheck grade: error: rubric {rubric}: site {shared_tmp / 'site'}: ")
