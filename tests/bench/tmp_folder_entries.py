"""Benchmark: what a run's empty files cost the grader, under bubblewrap and the Landlock fallback (issue 17, review
13).

A correct blockspace module that makes N empty files in its temporary folder at import
(tests/hostile_review13/empty_files_at_import.py) is graded on block_table (10) by a separate `pagedcheck` process in
a world of its own (tests/tamper.py's Scene), once with bubblewrap and once without it; for each N and isolation it
prints the score, the grading's wall-clock seconds and the CPU seconds of the grader and everything it ran (the
children's rusage). Under the fallback with one-view's first tmp_bound each creation waited while the grader walked
the run's whole folder and /proc, so the grader's time grew as N squared; since the Python server writes nowhere
(oracle/run_view.py) the module fails to load at its first file in both isolations, at no cost to the grader.

    python tests/bench/tmp_folder_entries.py [N ...]     (default 1000 2000)

Prints figures; asserts nothing.
"""

import json
import resource
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from tests.tamper import Scene, run_pagedcheck  # noqa: E402
from tests.test_blockspace_grade import student_copy  # noqa: E402
from tests.test_tamper_review3a import grade_args, rubric  # noqa: E402

ATTACK = ROOT / "tests" / "hostile_review13" / "empty_files_at_import.py"


def graded(n: int, without_bwrap: bool) -> tuple[str, float, float]:
    """The score, wall seconds and CPU seconds (the grader's and its children's) of one grading."""
    with tempfile.TemporaryDirectory() as tmp, closing(Scene(Path(tmp), without_bwrap=without_bwrap)) as scene:
        sub = student_copy(scene.root / "submission")
        manager = sub / "block_manager.py"
        manager.write_text(manager.read_text() + "\n\n" + scene.fill(ATTACK.read_text(), N=str(n)))
        before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        ran = run_pagedcheck(grade_args(sub, scene, rubric(scene.rubric_dir / "rubric.toml", {"block_table": 10})),
                             scene, limit=900)
        wall, after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        try:
            report = json.loads((scene.out / "report.json").read_text())
            score = f"{report['score']}/{report['max_score']}"
        except (OSError, ValueError):
            score = f"no report (status {ran.status})"
        return score, wall, cpu


def main() -> None:
    sizes = [int(arg) for arg in sys.argv[1:]] or [1000, 2000]
    print(f"{'N':>6} {'isolation':<10} {'score':<8} {'wall s':>8} {'cpu s':>8}")
    for n in sizes:
        for without_bwrap in (False, True):
            score, wall, cpu = graded(n, without_bwrap)
            print(f"{n:>6} {'fallback' if without_bwrap else 'bwrap':<10} {score:<8} {wall:>8.1f} {cpu:>8.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
