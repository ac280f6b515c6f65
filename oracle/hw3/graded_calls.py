"""The calls of a graded run, each kept by its index in the program, and the rest of the program made ahead of the
judging in the graded run's own process, for evidence a difference needs from the program's later calls
(fork_witness.py: a fork's references). No second process runs the program's calls: the process that is judged
is the one whose later calls are evidence, so nothing about a second run (what the machine remembers of the
first, a page cache, a clock) can tell the submission which of its runs a verdict rests on.

Made ahead, each call is made as the graded run makes it: the program's step as written, the engine handle the
calls before it left, and the state read after it, as run.py reads it after each step. The steps judged after
that are judged on what was kept (their call is not made again), so the calls after a difference are made once
and judged as ever; the item's verdict still rests on its first difference, which the run's judge reads before
any later step is judged. What the submission printed is kept by step too, so a step's finding shows what it
printed up to that step, not what the calls made ahead printed.

    graded = GradedCalls(implementation, program.steps)
    engine, returned = graded.call(at, engine)      # step `at`: made now, or kept from when it was made ahead
    seen = graded.observe(at, engine)
    returns = graded.program_returns(engine)         # every step's return, the rest made now
    pools = graded.program_pools(engine)             # the pool after each step made ahead"""

from dataclasses import dataclass
from typing import Any, Sequence

from oracle.hw3.call import returned_value
from oracle.hw3.observation import ImplementationFailure, Observation
from oracle.hw3.step import call_on
from oracle.program import Step


@dataclass(frozen=True, slots=True)
class Made:
    """One step made ahead: the engine handle after it and what it returned, or how it crashed or hung; the state
    read after it, or how reading it failed."""

    engine: object
    returned: object = None
    failed: ImplementationFailure | None = None
    seen: Observation | ImplementationFailure | None = None


class GradedCalls:
    """The graded run's calls of `steps` on `implementation`, by index: their returns as the model states them
    (None for a call that crashed or hung), and the steps made ahead of the judging."""

    def __init__(self, implementation: Any, steps: Sequence[Step]):
        self._of, self._steps = implementation, list(steps)
        self.returns: list[bool | int | None] = []  # each step's return so far, from the first
        self._ahead: dict[int, Made] = {}  # the steps made ahead, by index
        self._stopped = False  # a call crashed or hung: the program goes no further
        self._printed: dict[int, str] = {}  # what the submission printed up to each step, where later ones were made

    def made_ahead(self, at: int) -> bool:
        """Whether step `at` (an index) was made ahead: its call and the state after it are kept."""
        return at in self._ahead

    def call(self, at: int, engine: object) -> tuple[object, object]:
        """Step `at` made on the engine handle `engine`: the handle after it and what it returned (call_on's);
        ImplementationFailure when it crashed or hung."""
        made = self._ahead.get(at)
        if made is None:
            return self._made(at, engine)
        if made.failed is not None:
            raise made.failed
        return made.engine, made.returned

    def observe(self, at: int, engine: object) -> Observation:
        """The state after step `at`: read now, or kept from when the step was made ahead."""
        made = self._ahead.get(at)
        if made is None:
            return self._of.observe(engine)
        if isinstance(made.seen, ImplementationFailure):
            raise made.seen
        assert made.seen is not None  # a step made ahead that returned was observed
        return made.seen

    def printed(self, at: int) -> str | None:
        """What the submission printed up to step `at`, where steps after it were made ahead; None: the calls so
        far are all it printed for (read the adapter's `output`)."""
        return self._printed.get(at)

    def program_returns(self, engine: object) -> list[bool | int | None]:
        """Every step's return, from the first: those made so far, then the rest of the program made now in the
        same process from the engine handle `engine` (the last step's), each step's state read after it as a
        graded step's is, up to a call that crashes or hangs (None, the last)."""
        at = len(self.returns)
        if at < len(self._steps) and not self._stopped and at - 1 not in self._printed:
            self._printed[at - 1] = self._output()
        while at < len(self._steps) and not self._stopped:
            try:
                engine, returned = self._made(at, engine)
            except ImplementationFailure as failure:
                self._ahead[at], self._printed[at] = Made(engine, failed=failure), self._output()
                break
            seen: Observation | ImplementationFailure
            try:
                seen = self._of.observe(engine)
            except ImplementationFailure as failure:
                seen = failure
            self._ahead[at], self._printed[at] = Made(engine, returned, seen=seen), self._output()
            at += 1
        return list(self.returns)

    def program_pools(self, engine: object) -> list[bytes | None]:
        """The pool as read after each step made ahead, by index, the rest of the program made now as
        program_returns makes it (None for a step not made ahead, or whose state was not read)."""
        self.program_returns(engine)
        return [made.seen.pool if (made := self._ahead.get(at)) is not None and isinstance(made.seen, Observation)
                else None for at in range(len(self._steps))]

    def _output(self) -> str:
        return getattr(self._of, "output", "")

    def _made(self, at: int, engine: object) -> tuple[object, object]:
        """Step `at` made now, its return kept."""
        assert at == len(self.returns), "the steps are made in the program's order"
        self.returns.append(None)
        try:
            engine, returned = call_on(self._of, self._steps[at], engine)
        except ImplementationFailure:
            self._stopped = True
            raise
        self.returns[-1] = returned_value(self._steps[at].op, returned)
        return engine, returned
