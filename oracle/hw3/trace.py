"""What the grader observed of one battery program, call by call: the trace the memory_safety item compares
between the native run and the run under valgrind. A program that behaves differently under valgrind (it
can tell valgrind is there, or its bugs do) shows here as the first step whose trace differs.

Each step is the call's return value as the API shows it (a pointer only as NULL or not), and what the
grader read after it: the engine's state, or why it could not be read, and the pool's and guards' bytes.
Nothing the submission's process says about itself (its heap counters) is in it: the two runs count their
heaps differently (the driver natively, valgrind under valgrind), and each is judged on its own.
"""

import hashlib
from dataclasses import dataclass

from oracle.hw3.observation import ImplementationFailure


@dataclass(frozen=True, slots=True)
class TraceStep:
    call: str  # "step 3 create_sequence(engine, 1, 16)"
    returned: str  # as the API shows it: "NULL", "a Sequence", "0", or how the call ended ("hung: ...")
    state: str  # the engine's state after it (a digest), or why it could not be read
    pool: str  # a digest of guard + pool + guard after it ("" with no pool)

    def differs(self, other: "TraceStep") -> str | None:
        """What differs from `other` (the same step of the run under valgrind), in words; None when nothing."""
        if self.returned != other.returned:
            return f"returned {self.returned} natively, {other.returned} under valgrind"
        if self.state != other.state:
            if "unreadable" in self.state + other.state:
                return f"the engine's state: {self.state} natively, {other.state} under valgrind"
            return "the engine's state after it differs between the native run and the run under valgrind"
        if self.pool != other.pool:
            return "the pool's bytes after it differ between the native run and the run under valgrind"
        return None


def observed(adapter: object, engine: object, own_pool: bool = True) -> tuple[str, str]:
    """The engine's state and the pool's bytes as the grader reads them now, each as a short digest (or the
    words of why the state could not be read). `own_pool`: the program has called llm_init (before that, the
    adapter's pool is an earlier program's, which the two runs need not share)."""
    try:
        observation = adapter.observe(engine)  # type: ignore[attr-defined]
    except ImplementationFailure as failure:
        return f"unreadable: {failure}", ""
    state = "none" if observation.engine is None else _digest(repr(observation.engine).encode())
    pool = "" if observation.pool is None or not own_pool else _digest(observation.guard_before + observation.pool + observation.guard_after)
    return state, pool


def first_difference(native: list[TraceStep], valgrind: list[TraceStep]) -> str | None:
    """Where the two runs of one program first differ: "step 3 ...: what differs"; None when they agree on
    every step both made."""
    for mine, theirs in zip(native, valgrind):
        if (what := mine.differs(theirs)) is not None:
            return f"{mine.call}: {what}"
    return None  # past the shorter: the run under valgrind stops at a return value the model does not expect


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]
