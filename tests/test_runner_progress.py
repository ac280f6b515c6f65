"""The fuzz progress line: at most one a second, rewritten in place on a terminal, one line each elsewhere."""

import io

from oracle.runner import Progress
from oracle.stats import RunStats


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def stats(examples: int, steps: int) -> RunStats:
    run = RunStats()
    run.examples, run.steps = examples, steps
    return run


def test_progress_writes_at_most_once_a_second_one_line_each_off_a_terminal():
    out = io.StringIO()
    progress = Progress(10, out)
    progress(stats(1, 5))
    assert out.getvalue() == ""  # less than a second since the start
    progress.last -= 1.5
    progress(stats(12, 40))
    assert out.getvalue().startswith("fuzz: 10/10 examples, 40 steps, ") and out.getvalue().endswith(" s\n")
    progress.done()
    assert out.getvalue().count("\n") == 1


def test_progress_rewrites_in_place_on_a_terminal_and_ends_the_line_when_done():
    out = Terminal()
    progress = Progress(3, out)
    progress.done()
    assert out.getvalue() == ""  # nothing was written, nothing to end
    progress.last -= 1.5
    progress(stats(2, 7))
    assert out.getvalue().startswith("\rfuzz: 2/3 examples, 7 steps, ") and "\n" not in out.getvalue()
    progress.done()
    assert out.getvalue().endswith("\n")


def test_progress_shows_shrink_replays_apart_from_examples():
    out = io.StringIO()
    progress = Progress(10, out)
    run = stats(4, 30)
    run.shrink_replays = 57
    progress.last -= 1.5
    progress(run)
    assert out.getvalue().startswith("fuzz: 4/10 examples, 30 steps, ") and out.getvalue().endswith(", shrinking: 57 replays\n")
