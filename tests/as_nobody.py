"""`pagedcheck grade` run as another uid than root's (NOBODY), for the tamper suites' attacks that hold where the
grader is root (each run a uid of its own) and not where it runs as the runs' own uid (a course's own machine, a
grader that is not root). The grader is the system's Python with this environment's packages on its path: this
environment's own interpreter may lie where another uid cannot reach it (under /root)."""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.tamper import ROOT

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
MAIN = "import sys; from oracle.cli import main; sys.argv[0] = 'pagedcheck'; sys.exit(main())"


def nobody_cannot_grade() -> str | None:
    """Why this machine cannot run the grader as uid NOBODY (None: it can)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return "needs root and setpriv to run the grader as another uid"
    found = subprocess.run([SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                           text=True) if os.path.exists(SYSTEM_PYTHON) else None
    if found is None or found.stdout.strip() != str(sys.version_info[:2]):
        return f"needs {SYSTEM_PYTHON} of this Python's version, to load this environment's packages as another uid"
    return None


def graded_as_nobody(folder: Path, submission: str, without_bwrap: bool,
                     environment: dict[str, str] | None = None, options: tuple[str, ...] = ()
                     ) -> subprocess.CompletedProcess[str]:
    """`pagedcheck grade <submission> --rubric <folder>/rubric.toml` as uid NOBODY, in `folder` (given to NOBODY),
    its reports in `folder`/out; without bubblewrap (a bwrap that fails first on PATH: the Landlock fallback) when
    `without_bwrap`; `environment`: more variables of the grader's; `options`: more of grade's (`--family ...`)."""
    env = {"HOME": str(folder), "PATH": os.environ["PATH"],
           "PYTHONPATH": os.pathsep.join([sysconfig.get_paths()["purelib"], str(ROOT)]), **(environment or {})}
    if without_bwrap:
        failing = folder / "failing-bin"
        failing.mkdir()
        (failing / "bwrap").write_text("#!/bin/sh\nexit 1\n")
        (failing / "bwrap").chmod(0o755)
        env["PATH"] = f"{failing}{os.pathsep}{env['PATH']}"
    out = folder / "out"
    out.mkdir()
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, NOBODY, NOBODY)
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", SYSTEM_PYTHON, "-c",
                           MAIN, "grade", *options, submission, "--rubric", str(folder / "rubric.toml"), "--json",
                           str(out / "report.json"), "--gradescope", str(out / "results.json"), "--out", str(out),
                           "-q"], cwd=folder, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=600)
