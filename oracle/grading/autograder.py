"""`pagedcheck gradescope-run`: runs a Gradescope bundle the way Gradescope does, in a folder of our own.

Under ROOT (a new temporary folder, or --root) it lays out Gradescope's tree:

    ROOT/source/          the bundle, unpacked; setup.sh runs here once (apt-get skipped)
    ROOT/run_autograder   copied from the bundle, run once per submission
    ROOT/submission/      a copy of the submission folder (links copied as links, never followed)
    ROOT/results/         where run_autograder writes results.json

Both scripts get PAGEDCHECK_AUTOGRADER_ROOT=ROOT and PAGEDCHECK_SKIP_APT=1. A ROOT whose set-up already ran
for the same bundle (same bytes) is reused: only the submission and the results are replaced.
"""

import hashlib
import json
import os
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT_VARIABLE = "PAGEDCHECK_AUTOGRADER_ROOT"
_MARK = ".pagedcheck-setup"  # in ROOT: the sha256 of the bundle whose set-up succeeded there


class AutograderError(Exception):
    """The simulation cannot run (bad bundle, a ROOT in use, a failed set-up); one line."""


@dataclass(frozen=True)
class Run:
    root: Path
    results: dict[str, Any] | None  # results.json as read, or None when it is missing or not JSON
    status: int  # run_autograder's exit status
    set_up: bool  # whether setup.sh ran this time (False: the ROOT was reused)

    @property
    def results_file(self) -> Path:
        return self.root / "results" / "results.json"


def environment(root: Path) -> dict[str, str]:
    """The scripts' environment: ours, less what would make them import this checkout instead of the bundle."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, ROOT_VARIABLE: str(root), "PAGEDCHECK_SKIP_APT": "1"}


def set_up(bundle: Path, root: Path) -> bool:
    """Unpacks the bundle into ROOT/source and runs setup.sh, unless ROOT was set up for it already.
    Returns whether setup.sh ran."""
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
    mark = root / _MARK
    if mark.is_file() and mark.read_text().strip() == digest:
        return False
    if root.exists() and any(root.iterdir()):
        raise AutograderError(f"--root {root} is not empty and was not set up for this bundle")
    try:
        with zipfile.ZipFile(bundle) as archive:
            names = archive.namelist()
            missing = {"setup.sh", "run_autograder", "rubric.toml", "requirements.txt"} - set(names)
            if missing or any(name.startswith("/") or ".." in Path(name).parts for name in names):
                raise AutograderError(f"{bundle} is not a pagedcheck bundle (missing {', '.join(sorted(missing)) or 'nothing'}"
                                      f", or a name outside the bundle)")
            archive.extractall(root / "source")
    except zipfile.BadZipFile:
        raise AutograderError(f"{bundle} is not a zip file") from None
    for script in ("setup.sh", "run_autograder"):
        (root / "source" / script).chmod(0o755)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    with open(root / "setup.log", "wb") as log:
        done = subprocess.run(["bash", str(root / "source" / "setup.sh")], cwd=root / "source", env=environment(root),
                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = (root / "setup.log").read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise AutograderError(f"setup.sh failed (exit {done.returncode}; {root / 'setup.log'}): {tail[0]}")
    mark.write_text(digest + "\n")
    return True


def run(bundle: Path, submission: Path, root: Path) -> Run:
    """Sets ROOT up for the bundle if needed, then grades `submission` as Gradescope would."""
    root.mkdir(parents=True, exist_ok=True)
    ran_setup = set_up(bundle, root)
    for name in ("submission", "results"):
        shutil.rmtree(root / name, ignore_errors=True)
    shutil.copytree(submission, root / "submission", symlinks=True)
    (root / "results").mkdir()
    with open(root / "run_autograder.log", "wb") as log:
        done = subprocess.run([str(root / "run_autograder")], cwd=root, env=environment(root),
                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        results = json.loads((root / "results" / "results.json").read_text())
    except (OSError, ValueError):
        results = None
    return Run(root, results, done.returncode, ran_setup)
