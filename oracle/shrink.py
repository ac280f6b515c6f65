"""Shrinking a failing program (oracle/program.py), our own loop over its steps, with a budget we count.

A machine's program (oracle/table_machine.py) is a Program of its operations, a Step's arguments in the order of
the machine's `arguments`; one that is what an earlier step returned (a sequence it made) is `Made(its index)`.
`parse` reads a program Hypothesis printed, `render` prints one so again (runnable after the family's preamble),
`replay` runs one through the family's driver, the one loop of every program (oracle/checked.py).

A candidate is kept when it still fails with the same kind of exception (as Hypothesis judges "the same bug"). The
passes: keep only the failing step (the last), the steps whose results it uses and one set-up step; delete chunks of
the steps before it (halving their size, each with the later steps that use its result); point an argument that is
an earlier result at an earlier one (dropping the step that made the old one), or at the value it held; simplify
literals: each step's simplest values (all at once, then each: integers to 0 or 1, booleans to False), then each
integer's search (up in powers of two, one below the first that fails, a bisection; or one step towards 0). Each
candidate is cut after the step that now fails; after any progress it starts again, until nothing changes or the
budget is spent. It favours candidates that do not fail, which are cheap (a failing one may wait out a hang's
timeout). Every replay is counted: the same program and budget give the same result anywhere.
"""

import ast
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable, NamedTuple

from hypothesis.stateful import MultipleResults

from oracle import checked
from oracle.program import Program, Step

SET_UP_STEPS = 3  # the first steps tried as the set-up of the failing step (with what it uses)
END = "teardown"  # the step replay adds last: the machine's end (its check of the state left), as printed


@dataclass(frozen=True)
class Made:
    step: int  # an argument that is what the program's step `step` (0-based) returned


@dataclass
class Budget:
    """At most `replays` replays, and (a safety net) nothing once `late()` says its time limit passed (the fuzz's
    oracle/run_cpu.py SafetyNet: CPU seconds, so a busy machine never reaches it)."""

    replays: int
    late: Callable[[], bool] | None = None
    spent: int = 0
    cut_short: str | None = None  # "replays" or "seconds", when a limit stopped the shrinking

    def take(self) -> bool:
        late = self.late is not None and self.late()
        self.cut_short = "replays" if self.spent >= self.replays else "seconds" if late else None
        self.spent += not self.cut_short
        return not self.cut_short


Steps = tuple[Step, ...]


@dataclass
class Shrinker:
    """Replays programs of `machine` (a class of oracle/table_machine.py) within `budget`."""

    machine: type
    budget: Budget
    on_replay: Callable[[int], None] | None = None  # called after each replay with the count (progress)
    kind: type = AssertionError  # what a candidate must raise to count as the same failure
    _seen: dict[str, "Replayed"] = field(default_factory=dict)
    _values: list | None = None  # what the current program's steps returned (None: not replayed yet)

    def shrink(self, program: Program, failure: BaseException) -> tuple[Program, BaseException]:
        """The smallest program found that still fails, and its failure. The program as given is taken to fail
        at its last step as `failure` says (it just did): it is not replayed again."""
        self.kind, steps = type(failure), program.steps
        self._seen[repr(steps)] = Replayed(failure, len(steps) - 1, None)
        passes = (self._keep_what_the_failing_step_needs, self._delete_chunks, self._rebind_arguments,
                  self._simplify_arguments)
        while not self.budget.cut_short:
            for shrink_pass in passes:  # after any progress, start again by deleting steps
                before = steps
                steps, failure = shrink_pass(steps, failure)
                if steps != before:
                    break
            else:
                break
        return replace(program, steps=steps), failure

    # -- passes ------------------------------------------------------------------------------------------

    def _keep_what_the_failing_step_needs(self, steps: Steps, failure: BaseException) -> tuple[Steps, BaseException]:
        """The failing step with only the steps whose results it uses (transitively), first alone, then after
        one of the program's first steps (where it sets up): a few replays, each a big jump."""
        if len(steps) < 2:
            return steps, failure
        needed = _needed(steps, len(steps) - 1)
        for keep in (needed, *({at} | needed for at in range(min(SET_UP_STEPS, min(needed))))):
            if len(keep) < len(steps):
                outcome = self._try(_only(steps, keep))
                if outcome:
                    return outcome
        return steps, failure

    def _delete_chunks(self, steps: Steps, failure: BaseException) -> tuple[Steps, BaseException]:
        """Deletes chunks of the steps before the failing (last) step, from the end (its causes are earlier), halving
        their size down to single steps; then the failing step itself (the end may fail without it)."""
        size = 1 << max(0, (len(steps) - 1).bit_length() - 1)
        while size >= 1:
            end = len(steps) - 1
            while end > 0:
                start = max(0, end - size)
                outcome = self._try(_without_steps(steps, start, end - start))
                if outcome:
                    steps, failure = outcome
                elif self.budget.cut_short:
                    return steps, failure
                end = min(start, len(steps) - 1)
            size //= 2
        if steps:
            steps, failure = self._try(_without_steps(steps, len(steps) - 1, 1)) or (steps, failure)
        return steps, failure

    def _simplify_arguments(self, steps: Steps, failure: BaseException) -> tuple[Steps, BaseException]:
        """Each step's literal arguments, in two sweeps over the steps: the simplest values first (all of a
        step's at once, then each), so that later steps ask for less (a pool's size bounds what they can
        take); then each integer's search."""
        for search in (False, True):
            index = 0
            while index < len(steps) and not self.budget.cut_short:
                if not search:
                    steps, failure = self._simplest_at_once(steps, failure, index)
                for at in [at for at, a in enumerate(steps[index].args) if not isinstance(a, Made)] \
                        if index < len(steps) else []:
                    if index < len(steps):
                        steps, failure = self._simplify(steps, failure, index, at, search)
                index += 1
        return steps, failure

    def _simplest_at_once(self, steps: Steps, failure: BaseException, index: int) -> tuple[Steps, BaseException]:
        args = steps[index].args
        simplest = tuple(a if isinstance(a, Made) else [*_simpler(a), a][0] for a in args)
        if sum(a != b for a, b in zip(args, simplest)) < 2:
            return steps, failure
        return self._try((*steps[:index], replace(steps[index], args=simplest), *steps[index + 1:])) or (steps, failure)

    def _rebind_arguments(self, steps: Steps, failure: BaseException) -> tuple[Steps, BaseException]:
        index = len(steps) - 1
        while index >= 0 and not self.budget.cut_short:
            for at in range(len(steps[index].args) if index < len(steps) else 0):  # (a rebind may drop steps)
                if index < len(steps) and at < len(steps[index].args) and isinstance(steps[index].args[at], Made):
                    steps, failure = self._rebind(steps, failure, index, at)
            index -= 1
        return steps, failure

    def _simplify(self, steps: Steps, failure: BaseException, index: int, at: int,
                  search: bool = True) -> tuple[Steps, BaseException]:
        """One argument of steps[index]: its simplest value that still fails (0, else 1 or -1), else (if `search`)
        an integer's smallest magnitude that fails: up from 1 in powers of two to the first that fails (else one
        step towards 0), one below it (a boundary stops there), a bisection: few candidates that fail (a hang's)."""
        value = steps[index].args[at]
        for simpler in _simpler(value):
            outcome = self._try(_with(steps, index, at, simpler))
            if outcome:
                return outcome
        if not search or not isinstance(value, int) or isinstance(value, bool) or abs(value) <= 1:
            return steps, failure
        sign, low, high = (1 if value > 0 else -1), 1, None  # low does not fail; high (once found) does
        while 2 * low < abs(value) and not self.budget.cut_short:  # up from 1 in powers of two
            outcome = self._try(_with(steps, index, at, sign * 2 * low))
            if outcome:
                (steps, failure), high = outcome, 2 * low
                if high - low > 1:  # a power of two is often the boundary itself (64 bytes, 256 blocks)
                    outcome = self._try(_with(steps, index, at, sign * (high - 1)))
                    if not outcome:
                        return steps, failure
                    (steps, failure), high = outcome, high - 1
                break
            low *= 2
        if high is None:  # no power of two fails: one step towards 0, or the value is at a boundary already
            outcome = self._try(_with(steps, index, at, value - sign))
            if not outcome:
                return steps, failure
            (steps, failure), high = outcome, abs(value) - 1
        while high - low > 1 and not self.budget.cut_short:
            middle = (low + high) // 2
            outcome = self._try(_with(steps, index, at, sign * middle))
            if outcome:
                (steps, failure), high = outcome, middle
            else:
                low = middle
        return steps, failure

    def _rebind(self, steps: Steps, failure: BaseException, index: int, at: int) -> tuple[Steps, BaseException]:
        """An argument that is an earlier step's result: the earliest other result that still fails, else the
        value it holds as a literal if the step that made it can then go."""
        maker, values = steps[index].args[at].step, self._held(steps)
        for earlier in (j for j in range(min(maker, len(values))) if _one(values[j]) is not None):
            candidate = _with(steps, index, at, Made(earlier))
            if not any(Made(maker) in step.args for step in candidate[maker + 1:]):
                outcome = self._try(_without_steps(candidate, maker, 1))  # and the step that made the old one, unused
                if outcome:
                    return outcome
            outcome = self._try(candidate)
            if outcome:
                return outcome
        value = _one(values[maker]) if maker < len(values) else None
        if isinstance(value, (int, str)):  # the value itself, without the step that made it
            return self._try(_without_steps(_with(steps, index, at, value), maker, 1)) or (steps, failure)
        return steps, failure

    def _held(self, steps: Steps) -> list:
        """What the current program's steps returned (the program given to shrink() replayed once, if need be)."""
        if self._values is None and self.budget.take():
            self._values = self._replay(steps).values
        return self._values or []

    def _replay(self, steps: Steps) -> "Replayed":
        replayed = replay(self.machine, Program(self.machine.__name__, steps))
        if self.on_replay:
            self.on_replay(self.budget.spent)
        return replayed

    # -- one candidate -----------------------------------------------------------------------------------

    def _try(self, candidate: Steps) -> tuple[Steps, BaseException] | None:
        """The candidate, cut after its failing step, and its failure; None: not the same failure, or no budget."""
        key = repr(candidate)
        if key not in self._seen:
            if not self.budget.take():
                return None
            self._seen[key] = self._replay(candidate)
        failure, at, values = self._seen[key]
        if not isinstance(failure, self.kind):
            return None
        self._values = values
        return candidate[: at + 1], failure  # the rest never ran (at == len: the end failed)


class Replayed(NamedTuple):
    failure: BaseException | None  # what the program ended in; None when it passed or was not valid
    at: int  # the index of the step that raised it (len(steps): the end; -1: the driver could not be made)
    values: list | None  # what each step that ran returned (None: not known)


def replay(machine: type, program: Program, driver: Any = None, close: bool = True) -> Replayed:
    """Runs the program through the family's driver (a new one, unless `driver` is given), then the machine's end,
    by checked.replay. A program is not valid (no failure) when a step uses what an earlier step did not make. The
    adapter is closed after (`close`; else the caller closes it)."""
    made: list = []
    raised: list[BaseException] = []

    def operation(act: Callable[..., Any], names: tuple[str, ...] = ()) -> Callable[..., None]:
        def call(driver: Any, *args: Any) -> None:
            try:  # (a list given copied: an operation may change it)
                values = [_made(made, a.step) if isinstance(a, Made) else list(a) if isinstance(a, list) else a
                          for a in args]
                made.append(act(driver, **dict(zip(names, values))))
            except Exception as failure:
                raised.append(failure)
                raise
        return call

    operations = {op: operation(machine.operations[op].act, machine.arguments[op]) for op in program.ops}
    operations[END] = operation(lambda driver: machine.end(driver) if machine.end else None)
    try:  # a failure to start the implementation is at step -1
        driver = driver or machine.make_driver(machine.adapter_factory(), machine.stats, machine.adapter_factory)
        found = checked.replay(replace(program, steps=(*program.steps, Step(END))), driver, operations, [],
                               close=close)
    except Exception as failure:  # noqa: BLE001  (an implementation's own assertion, an invalid program's)
        return Replayed(None if isinstance(failure, NameError) else failure, len(made) if driver else -1, made)
    return Replayed(raised[-1], len(made), made) if found else Replayed(None, len(program.steps), made[:-1])


def parse(machine: type, lines: list[str] | tuple[str, ...]) -> Program | None:
    """The program Hypothesis printed (a line that is no step of `state`, a preamble's, is skipped); None when it is
    no program of a table machine's (a rule that draws as it runs, `data=data(...)`; a machine of its own)."""
    steps: list[Step] = []
    named: dict[str, Made] = {}  # each name a printed step assigned, and the step
    try:
        for line in lines:
            node = ast.parse(line).body[0]
            call = getattr(node, "value", None)
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)) or call.func.attr == END:
                continue
            given = {k.arg: named[k.value.id] if isinstance(k.value, ast.Name) else ast.literal_eval(k.value)
                     for k in call.keywords}
            steps.append(Step(call.func.attr, tuple(given[name] for name in machine.arguments[call.func.attr])))
            for target in getattr(node, "targets", []):
                for name in target.elts if isinstance(target, ast.Tuple) else [target]:
                    named[name.id] = Made(len(steps) - 1)
    except (AttributeError, IndexError, KeyError, SyntaxError, ValueError):
        return None
    return Program(machine.__name__, tuple(steps))


def render(machine: type, program: Program) -> list[str]:
    """The program as Hypothesis prints one, runnable after the family's preamble: each result a later step uses
    named after its bundle, numbered from 0 in the order they are made (`sequences_0 = state.create(...)`)."""
    used = {a.step for step in program.steps for a in step.args if isinstance(a, Made)}
    names: dict[int, str] = {}
    made = Counter[str]()
    lines = [f"state = {machine.__name__}()"]
    for at, step in enumerate(program.steps):
        if at in used:
            bundle = machine.operations[step.op].target.name
            names[at], made[bundle] = f"{bundle}_{made[bundle]}", made[bundle] + 1
        args = ", ".join(f"{name}={names[a.step] if isinstance(a, Made) else repr(a)}"
                         for name, a in zip(machine.arguments[step.op], step.args))
        lines.append(f"{names[at] + ' = ' if at in used else ''}state.{step.op}({args})")
    return [*lines, f"state.{END}()"]


def _without_steps(steps: Steps, index: int, count: int) -> Steps:
    """The program without steps[index:index + count] and the later steps that use their results (_only)."""
    return _only(steps, set(range(index)) | set(range(index + count, len(steps))))


def _only(steps: Steps, keep: set[int]) -> Steps:
    """The steps at the indices `keep` but those that use a result of a step left out, results renumbered."""
    moved: dict[int, Made] = {}  # each step kept, and what it is now
    for at, step in enumerate(steps):
        if at in keep and all(a.step in moved for a in step.args if isinstance(a, Made)):
            moved[at] = Made(len(moved))
    return tuple(replace(steps[at], args=tuple(moved[a.step] if isinstance(a, Made) else a for a in steps[at].args))
                 for at in moved)


def _needed(steps: Steps, index: int) -> set[int]:
    """index, and the indices of the steps whose results steps[index] uses, directly or through such a step."""
    needed = {index}
    for at in range(index, -1, -1):
        if at in needed:
            needed |= {a.step for a in steps[at].args if isinstance(a, Made)}
    return needed


def _with(steps: Steps, index: int, at: int, value: object) -> Steps:
    """The program with the argument `at` of steps[index] replaced by `value` (a literal or a Made)."""
    args = steps[index].args
    return (*steps[:index], replace(steps[index], args=(*args[:at], value, *args[at + 1:])), *steps[index + 1:])


def _one(result: object) -> object:
    """What a later step gets of a step's result: the value, or the one of a `multiple()`; else None."""
    return (result.values[0] if len(result.values) == 1 else None) if isinstance(result, MultipleResults) else result


def _made(made: list, step: int) -> object:
    """What the step `step` made; NameError (not a valid program) when it made nothing, an empty `multiple()`."""
    value = _one(made[step]) if step < len(made) else None
    if value is None:
        raise NameError(f"step {step} made no result")
    return value


def _simpler(value: object) -> list[object]:
    """Simpler values to try for a literal argument, simplest first."""
    if isinstance(value, bool):
        return [False] if value else []
    if isinstance(value, int):
        return [] if value == 0 else [0] if abs(value) == 1 else [0, 1 if value > 0 else -1]
    return []
