"""One process of a submission alive at a time. A second opinion (fresh_pool.py, refusal_rule.py) runs the
implementation in fresh processes (a fork's evidence needs none: fork_witness.py reads the graded run's own
later calls, graded_calls.py); were the graded run's process alive meanwhile, a witness could find it (outside
bubblewrap's namespaces: an abstract unix name it bound, anything two live processes of one uid share) and know
itself a witness. So, by construction:

- a graded run starts in a fresh process of the implementation, as each witness does: its first process has seen
  only the program's own calls (a Python submission's adapters otherwise share one process for a whole grading);
- before a second opinion starts, the graded run's process is ended, and the witness runs in a fresh process of
  the graded run's own adapter: the same folders, pool file and descriptors, so nothing the grader hands a
  process (its paths, its descriptors' numbers) tells a witness from the graded run; closing it ends that process;
- after it, the graded run goes on in a fresh process that first replays every call the run made so far, their
  returns not judged again (the calls after it are judged on what that process shows, as ever). A replay that
  crashes or hangs ends the run there, as a crash does.

    aside = Aside(implementation, fresh)
    search_failed(aside.fresh, ...)               # the graded run's process is ended first
    engine = aside.resumed(engine, trace.calls)   # before the next call: replayed in a fresh process

An implementation in this process (adapters.PythonAdapter, `pagedcheck fuzz`'s) has no process to end: its
second opinions are `fresh`'s."""

from typing import Any, Callable

from oracle.hw3.call import Call
from oracle.hw3.step import call_on
from oracle.program import Step


class Aside:
    """The graded run's `implementation` and the factory of its second opinions' (`fresh`), never both alive."""

    def __init__(self, implementation: Any, fresh: Callable[[], Any] | None):
        self.implementation = implementation
        self._fresh = fresh
        self.ended = False  # the graded run's process is ended: the calls so far must be replayed before the next
        if fresh is not None:
            self._end()  # a graded run's first process, like a witness's, has seen nothing before the program

    def fresh(self) -> Any:
        """A second opinion's implementation, the graded run's process ended first: the graded run's own adapter,
        in a process of its own (`fresh`'s when the implementation runs in this process)."""
        assert self._fresh is not None
        self._end()
        self.ended = True
        if getattr(self.implementation, "end_process", None) is None:
            return self._fresh()
        return Witness(self.implementation)

    def resumed(self, engine: object, calls: list[Call]) -> object:
        """The engine handle to go on with: `engine` itself, or, when a second opinion ended the graded run's
        process, the one the calls made so far (`calls`, every call of the run) leave in a fresh process.
        ImplementationFailure when the replay crashes or hangs."""
        if not self.ended:
            return engine
        self.ended = False
        engine, watch = None, getattr(self.implementation, "watch", None)
        if watch is not None:  # the replay makes the program's calls again, numbered as they were (c/stray.py)
            watch.calls = []
        for call in calls:
            engine, _ = call_on(self.implementation, Step(call.api, call.args, call.null), engine)
        return engine

    def _end(self) -> None:
        end = getattr(self.implementation, "end_process", None)
        if end is not None:
            end()


class Witness:
    """The graded run's adapter in a fresh process for a second opinion, its calls outside the graded program's
    (a C driver's watch names no program meanwhile, c/stray.py); closing it ends that process."""

    def __init__(self, implementation: Any):
        self._of = implementation
        self._watch = getattr(implementation, "watch", None)
        self._kept = (self._watch.program, self._watch.stray) if self._watch is not None else ("", None)
        if self._watch is not None:
            self._watch.program, self._watch.calls, self._watch.stray = "", [], None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._of, name)

    def close(self) -> None:
        self._of.end_process()
        if self._watch is not None:
            (self._watch.program, self._watch.stray), self._watch.calls = self._kept, []
