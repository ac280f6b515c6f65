"""Shrinking a failing program, as printed: our own loop over its lines, with a budget we count.

A program is the list of lines Hypothesis prints for a failing state machine run: `state = Name()`, one
line per rule (`sequences_0 = state.create(initial_kv_len=1, seq_id=1)`), then `state.teardown()`. The
shrinker replays candidate programs with `exec` and keeps one when it still fails with the same kind of
exception (as Hypothesis judges "the same bug"). Its passes: keep only the failing step, the steps whose
results it uses and one set-up step; delete chunks of the steps before the failing step (halving their size,
each step with the later steps that use a name it defines); point an argument that names an earlier result
at an earlier one (dropping the step that made the old one), or at the value it held, so that the step that
made it can go; simplify literal arguments, first every step's simplest values (all of a step's at once,
then each: integers to 0 or 1, booleans to False), then each integer's search (up in powers of two, one
below the first that fails, a bisection; or one step towards 0). Every candidate is cut after the
step that now fails. After any progress it starts again, until no pass changes anything or the budget is
spent; the names the program assigns are then numbered again from 0. The passes favour candidates that do
not fail, which are cheap, over a walk of many small failing steps: a failing replay may wait out a whole
per-call timeout (a hang). Every replay is counted; the same program and budget give the same result on
any machine.
"""

import ast
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from hypothesis.stateful import MultipleResults

_NAME = re.compile(r"\b\w+\b")
_NUMBERED = re.compile(r"(\w+)_(\d+)$")
_SOURCE = "<program>"
SET_UP_STEPS = 3  # the first steps tried as the set-up of the failing step (with what it uses)


@dataclass
class Budget:
    """At most `replays` replays, and (a safety net) nothing once the wall clock passes `deadline`."""

    replays: int
    deadline: float | None = None  # time.monotonic() value
    spent: int = 0
    cut_short: str | None = None  # "replays" or "seconds", when a limit stopped the shrinking

    def take(self) -> bool:
        if self.spent >= self.replays:
            self.cut_short = "replays"
        elif self.deadline is not None and time.monotonic() > self.deadline:
            self.cut_short = "seconds"
        else:
            self.spent += 1
            return True
        return False


@dataclass
class Shrinker:
    """Replays programs against `machine` (bound to the name the first line uses) within `budget`."""

    machine: type
    budget: Budget
    on_replay: Callable[[int], None] | None = None  # called after each replay with the count (progress)
    kind: type = AssertionError  # what a candidate must raise to count as the same failure
    _seen: dict[tuple[str, ...], "Replayed"] = field(default_factory=dict)
    _values: dict[str, object] | None = None  # what the current program's names hold (None: not replayed yet)

    def shrink(self, steps: list[str], failure: BaseException) -> tuple[list[str], BaseException]:
        """The smallest program found that still fails, and its failure. The program as given is taken to
        fail as `failure` says (it just did): it is not replayed again."""
        self.kind = type(failure)
        self._seen[tuple(steps)] = Replayed(failure, len(steps) - 2, None)
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
        return _renumbered(steps), failure

    # -- passes ------------------------------------------------------------------------------------------

    def _keep_what_the_failing_step_needs(self, steps: list[str], failure: BaseException) -> tuple[list[str], BaseException]:
        """The failing step with only the steps whose results it uses (transitively), first alone, then
        after one of the program's first steps (where it sets up): a few replays, each a big jump."""
        if len(steps) < 4:
            return steps, failure
        needed = _needed(steps, len(steps) - 2)
        for keep in (needed, *({at} | needed for at in range(1, min(SET_UP_STEPS, min(needed) - 1) + 1))):
            if len(keep) + 2 < len(steps):
                outcome = self._try([steps[0], *(steps[at] for at in sorted(keep)), steps[-1]])
                if outcome:
                    return outcome
        return steps, failure

    def _delete_chunks(self, steps: list[str], failure: BaseException) -> tuple[list[str], BaseException]:
        """Deletes chunks of the steps before the failing step (the last one), from the end (its causes are
        earlier), halving the chunk size down to single steps; then the failing step itself (the teardown
        may fail without it)."""
        size = 1 << max(0, (len(steps) - 3).bit_length() - 1)
        while size >= 1:
            end = len(steps) - 2
            while end > 1:
                start = max(1, end - size)
                outcome = self._try(_without_steps(steps, start, end - start))
                if outcome:
                    steps, failure = outcome
                elif self.budget.cut_short:
                    return steps, failure
                end = min(start, len(steps) - 2)
            size //= 2
        if len(steps) > 2:
            steps, failure = self._try(_without_steps(steps, len(steps) - 2, 1)) or (steps, failure)
        return steps, failure

    def _simplify_arguments(self, steps: list[str], failure: BaseException) -> tuple[list[str], BaseException]:
        """Each step's literal arguments, in two sweeps over the steps: the simplest values first (all of a
        step's at once, then each), so that later steps ask for less (a pool's size bounds what they can
        take); then each integer's search."""
        for search in (False, True):
            index = 1
            while index < len(steps) - 1 and not self.budget.cut_short:
                if not search:
                    steps, failure = self._simplest_at_once(steps, failure, index)
                for name in _literal_arguments(steps[index]) if index < len(steps) - 1 else []:
                    if index < len(steps) - 1:
                        steps, failure = self._simplify(steps, failure, index, name, search)
                index += 1
        return steps, failure

    def _simplest_at_once(self, steps: list[str], failure: BaseException, index: int) -> tuple[list[str], BaseException]:
        simplest = {name: _simpler(_argument(steps[index], name))[:1] for name in _literal_arguments(steps[index])}
        if sum(map(len, simplest.values())) < 2:
            return steps, failure
        candidate = steps
        for name, value in simplest.items():
            candidate = _with(candidate, index, name, ast.Constant(value[0])) if value else candidate
        return self._try(candidate) or (steps, failure)

    def _rebind_arguments(self, steps: list[str], failure: BaseException) -> tuple[list[str], BaseException]:
        index = len(steps) - 2
        while index > 0 and not self.budget.cut_short:
            for name, held in _reference_arguments(steps[index]) if index < len(steps) - 1 else []:
                steps, failure = self._rebind(steps, failure, index, name, held)
            index -= 1
        return steps, failure

    def _simplify(self, steps: list[str], failure: BaseException, index: int, name: str,
                  search: bool = True) -> tuple[list[str], BaseException]:
        """One argument of steps[index]: its simplest value that still fails; for an integer 0, else 1 (or
        -1), else (if `search`) the smallest magnitude towards 0 that fails: up from 1 in powers of two to the first that
        fails (else one step towards 0: a value at a boundary stops there), one below it (a boundary stops
        there), then a bisection. Few candidates fail that way, and a failing replay may cost a whole
        per-call timeout (a hang)."""
        value = _argument(steps[index], name)
        for simpler in _simpler(value):
            outcome = self._try(_with(steps, index, name, ast.Constant(simpler)))
            if outcome:
                return outcome
        if not search or not isinstance(value, int) or isinstance(value, bool) or abs(value) <= 1:
            return steps, failure
        sign, low, high = (1 if value > 0 else -1), 1, None  # low does not fail; high (once found) does
        while 2 * low < abs(value) and not self.budget.cut_short:  # up from 1 in powers of two
            outcome = self._try(_with(steps, index, name, ast.Constant(sign * 2 * low)))
            if outcome:
                (steps, failure), high = outcome, 2 * low
                if high - low > 1:  # a power of two is often the boundary itself (64 bytes, 256 blocks)
                    outcome = self._try(_with(steps, index, name, ast.Constant(sign * (high - 1))))
                    if not outcome:
                        return steps, failure
                    (steps, failure), high = outcome, high - 1
                break
            low *= 2
        if high is None:  # no power of two fails: one step towards 0, or the value is at a boundary already
            outcome = self._try(_with(steps, index, name, ast.Constant(value - sign)))
            if not outcome:
                return steps, failure
            (steps, failure), high = outcome, abs(value) - 1
        while high - low > 1 and not self.budget.cut_short:
            middle = (low + high) // 2
            outcome = self._try(_with(steps, index, name, ast.Constant(sign * middle)))
            if outcome:
                (steps, failure), high = outcome, middle
            else:
                low = middle
        return steps, failure

    def _rebind(self, steps: list[str], failure: BaseException, index: int, name: str, held: str) -> tuple[list[str], BaseException]:
        """An argument that names an earlier step's result: the earliest other result that still fails, else
        the value it holds as a literal if the step that made `held` can then go."""
        maker = next((at for at in range(1, index) if held in _defined([steps[at]])), None)
        for earlier in _defined(steps[1:index]):  # not `state` itself
            if earlier == held:
                break
            candidate = _with(steps, index, name, ast.Name(earlier))
            if maker is not None and not any(held in _NAME.findall(line.split(" = ", 1)[-1]) for line in candidate[maker + 1 : -1]):
                outcome = self._try(_without_steps(candidate, maker, 1))  # and the step that made `held`, now unused
                if outcome:
                    return outcome
            outcome = self._try(candidate)
            if outcome:
                return outcome
        value = self._held(steps).get(held) if maker is not None else None
        if isinstance(value, (int, str)) and maker is not None:  # the value itself, without the step that made it
            return self._try(_without_steps(_with(steps, index, name, ast.Constant(value)), maker, 1)) or (steps, failure)
        return steps, failure

    def _held(self, steps: list[str]) -> dict[str, object]:
        """What the names of `steps` (the current program) hold; the program given to shrink() was not
        replayed, so it is, once, when a pass first needs its values."""
        if self._values is None and self.budget.take():
            self._values = replay(self.machine, steps).values
            if self.on_replay:
                self.on_replay(self.budget.spent)
        return self._values or {}

    # -- one candidate -----------------------------------------------------------------------------------

    def _try(self, candidate: list[str]) -> tuple[list[str], BaseException] | None:
        """The candidate, cut after its failing step, and its failure; None when it does not fail the same
        way (or the budget is spent)."""
        key = tuple(candidate)
        if key not in self._seen:
            if not self.budget.take():
                return None
            self._seen[key] = replay(self.machine, candidate)
            if self.on_replay:
                self.on_replay(self.budget.spent)
        failure, line, values = self._seen[key]
        if not isinstance(failure, self.kind):
            return None
        if line < len(candidate) - 1:
            candidate = candidate[: line + 1] + [candidate[-1]]  # the rest never ran: keep the teardown line
        self._values = values
        return candidate, failure


class Replayed(NamedTuple):
    failure: BaseException | None  # what the program ended in; None when it passed or was not valid
    line: int  # the index of the line that raised it (len(steps) when none did)
    values: dict[str, object] | None  # what the names the program assigned hold (None: not known)


def replay(machine: type, steps: list[str]) -> Replayed:
    """Runs a printed program line by line, with `machine` under the name its first line gives it. A
    program is not valid (no failure) when a step needs a name that a deleted step defined, or that a
    refused step left without a value (an empty `multiple()`: Hypothesis never passes one on). A program
    that stops early is torn down here, so an implementation's process does not outlive it."""
    name = re.match(r"state = (\w+)\(\)$", steps[0])
    namespace: dict = {name[1] if name else "HW3Machine": machine}
    values: dict[str, object] = {}
    for index, line in enumerate(steps):
        try:
            exec(compile(line, _SOURCE, "exec"), namespace)
        except Exception as failure:
            try:
                namespace["state"].teardown()
            except Exception:
                pass
            return Replayed(None if isinstance(failure, NameError) else failure, index, values)
        for held in _defined([line]) if index else []:  # line 0 makes `state`
            value = namespace.get(held)
            if isinstance(value, MultipleResults) and not value.values:
                del namespace[held]
            else:
                values[held] = value
    return Replayed(None, len(steps), values)


def _without_steps(steps: list[str], index: int, count: int) -> list[str]:
    """The program without steps[index:index + count] and every later step that uses a name they (or such
    a step) define. The last line (the teardown) always stays."""
    dropped, names = set(range(index, min(index + count, len(steps) - 1))), set()
    for at in range(index, len(steps) - 1):
        uses = set(_NAME.findall(steps[at].split(" = ", 1)[-1]))
        if at in dropped or uses & names:
            dropped.add(at)
            head, sep, _ = steps[at].partition(" = ")
            names |= {n.strip() for n in head.split(",")} if sep else set()
    return [step for at, step in enumerate(steps) if at not in dropped]


def _call(line: str) -> ast.Call:
    return _call_of(ast.parse(line))


def _literal_arguments(line: str) -> list[str]:
    """The keyword arguments of a step that are literals (not names of earlier results)."""
    names = []
    for keyword in _call(line).keywords:
        try:
            ast.literal_eval(keyword.value)
        except ValueError:
            continue
        names.append(keyword.arg)
    return names


def _reference_arguments(line: str) -> list[tuple[str, str]]:
    """The keyword arguments of a step that name an earlier step's result, with that name."""
    return [(k.arg, k.value.id) for k in _call(line).keywords if isinstance(k.value, ast.Name) and k.arg]


def _renumbered(steps: list[str]) -> list[str]:
    """The program with the names it assigns numbered again from 0 in the order they are made, per prefix
    (`sequences_2` alone becomes `sequences_0`): the same program, read more easily."""
    renamed: dict[str, str] = {}
    made: Counter[str] = Counter()
    for name in _defined(steps[1:]):
        numbered = _NUMBERED.match(name)
        if numbered and name not in renamed:
            renamed[name] = f"{numbered[1]}_{made[numbered[1]]}"
            made[numbered[1]] += 1
    return [_NAME.sub(lambda m: renamed.get(m[0], m[0]), line) for line in steps]


def _needed(steps: list[str], index: int) -> set[int]:
    """The indices of the steps before steps[index] whose results it uses, directly or through another such
    step, with index itself."""
    needed, wanted = {index}, set(_NAME.findall(steps[index].split(" = ", 1)[-1]))
    for at in range(index - 1, 0, -1):
        if wanted & set(_defined([steps[at]])):
            needed.add(at)
            wanted |= set(_NAME.findall(steps[at].split(" = ", 1)[-1]))
    return needed


def _defined(steps: list[str]) -> list[str]:
    """The names the steps assign, in order."""
    return [n.strip() for line in steps if " = " in line for n in line.partition(" = ")[0].split(",")]


def _argument(line: str, name: str) -> object:
    return next(ast.literal_eval(k.value) for k in _call(line).keywords if k.arg == name)


def _with(steps: list[str], index: int, name: str, value: ast.expr) -> list[str]:
    """The program with the argument `name` of steps[index] replaced by `value` (a literal or a name)."""
    node = ast.parse(steps[index])
    for keyword in _call_of(node).keywords:
        if keyword.arg == name:
            keyword.value = value
    return steps[:index] + [ast.unparse(node)] + steps[index + 1 :]


def _call_of(module: ast.Module) -> ast.Call:
    call = module.body[0].value  # type: ignore[attr-defined]
    assert isinstance(call, ast.Call)
    return call


def _simpler(value: object) -> list[object]:
    """Simpler values to try for a literal argument, simplest first."""
    if isinstance(value, bool):
        return [False] if value else []
    if isinstance(value, int):
        return [] if value == 0 else [0] if abs(value) == 1 else [0, 1 if value > 0 else -1]
    return []
