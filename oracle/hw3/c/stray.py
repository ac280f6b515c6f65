"""Stray accesses the grader counted, call by call: natively a read or write of the submission's outside any live
heap block (a heap overflow or a use after free) lets the program go on, on a page the grader counts from outside
(ledger.py `faulted`, or heap_maps.py without a listener: native_heap.HeapFacts.faulted). An adapter with a
Watch notes each call whose reply came with more such pages than before, as a Stray, into a list the grader
keeps for the whole submission: whichever run it was in, it is a memory error (stray_charge.py charges it to
memory_safety). Only the grader's own count is read, never the driver's word.

    adapter = CAdapter(driver, watch=Watch(strays))
    named(adapter, "create_sequence_cap")   # the calls from here on are that program's steps 1, 2, ...
"""

from dataclasses import dataclass, field
from typing import Any

from oracle.hw3.call import c_text

# adapter.py's requests, as the C calls they make: the arguments after the engine
_ARGS = {"C": ("create_sequence", 2), "F": ("fork_sequence", 2), "A": ("append_kv", 2), "R": ("free_sequence", 1),
         "D": ("llm_destroy", 0)}


def c_call(op: str, target: int, a: int, b: int) -> str:
    """One request of adapter.py's, in C terms (call.c_text): `create_sequence(engine, 1, 4097)`,
    `llm_init(pool, 19200)`."""
    if op == "I":  # target: the pool's size; b: a NULL pool
        return c_text("llm_init", (target,), bool(b))
    if op not in _ARGS:
        return f"the grader's request {op!r}"
    api, count = _ARGS[op]
    return c_text(api, (a, b)[:count], not target)


@dataclass(frozen=True)
class Stray:
    """A call during which the submission's code read or wrote pages outside any live heap block, as the grader
    counted them: the program the calls were of ("" when the runner named none), the call's number in it (from
    1), the call and every call before it since the program began, in C terms, and the pages newly touched."""

    program: str
    step: int
    calls: tuple[str, ...]
    pages: int

    @property
    def call(self) -> str:
        return self.calls[-1]

    @property
    def where(self) -> str:
        """`create_sequence_cap, step 2, create_sequence(engine, 1, 4097)`."""
        run = self.program or "a run of the grader's"
        return f"{run}, {'step' if self.program else 'call'} {self.step}, {self.call}"

    def problem(self) -> str:
        return (f"natively, a read or write outside any live heap block ({self.pages} page(s) of guard or freed "
                "memory touched: a heap overflow or a use after free)")


@dataclass
class Watch:
    """One adapter's watch: the calls made since its program was named (or since it was made), and the first
    stray the grader counted in them, appended to `strays` (shared by every adapter of a submission). One a program
    is enough to charge it, and keeps the list small however many calls of a hostile program stray."""

    strays: list[Stray]
    program: str = ""
    calls: list[str] = field(default_factory=list)
    stray: Stray | None = None  # this program's stray, once noted (in `strays` too)

    def calling(self, op: str, target: int, a: int, b: int) -> None:
        self.calls.append(c_call(op, target, a, b))

    def counted(self, before: int, after: int) -> None:
        """The stray pages the grader counted in the driver's run before the last call and after it."""
        if after > before and self.calls and self.stray is None:
            self.stray = Stray(self.program, len(self.calls), tuple(self.calls), after - before)
            self.strays.append(self.stray)


def named(adapter: Any, program: str) -> Any:
    """The adapter, its calls from now on numbered as the steps of `program` (an adapter without a Watch, a
    Python submission's say, is left as it is)."""
    watch = getattr(adapter, "watch", None)
    if watch is not None:
        watch.program, watch.calls, watch.stray = program, [], None
    return adapter
