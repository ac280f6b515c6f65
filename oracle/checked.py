"""One checked call at a time, for a family whose driver makes each call on its model and, through an adapter, on an
implementation, and checks the state after it (a family's driver.py): the call in words and the operation
it is counted under, the implementation's side (its failure is a crash), a query that must answer as the model
does and change nothing, and the first difference as a Divergence naming the rule it breaks (the family's
`rule_of`). `replay` runs a call program through such a driver, by the family's table of operations: the first
difference as a Finding; every directed item of every family runs its programs through it.

A family's driver subclasses Checked and defines `state` (what a query must leave as it was) and its operations;
its machine and its programs both drive it. Its adapter raises AdapterFailure (oracle/serve.py) when the
implementation fails (else it sets `failure`). A driver may record the calls the implementation received
(`run`'s `step`: a Divergence carries them, for a listing in the implementation's terms), and may take over the
implementation's state after another rule's difference it raised (`take_over`), so a directed program goes on."""

from dataclasses import replace
from typing import Any, Callable, Mapping

from oracle.difference import CRASH, Difference
from oracle.finding import Finding
from oracle.program import Program, Step
from oracle.serve import AdapterFailure
from oracle.stats import RunStats

RuleOf = Callable[[Difference, str], str]  # (difference, operation) -> the rubric item whose rule it breaks


def rule_table(by_aspect: Mapping[str, str], by_op: Mapping[str, str], default: str) -> RuleOf:
    """A family's rule_of as data: a difference breaks its aspect's rule, or (for the aspects every call checks:
    conservation, contents, a crash) the rule of the operation that made it, else `default`'s."""
    return lambda difference, op: by_aspect.get(difference.aspect) or by_op.get(op, default)


class Divergence(AssertionError):
    """The implementation and the model disagree: `difference`, made by `call` (of the operation `op`), which
    breaks `rule` ("": no rule's); `made`: the calls the implementation received up to it, each step and what it
    returned (where the driver records them), through `adapter` (which words them in its terms)."""

    def __init__(self, call: str, op: str, difference: Difference, rule: str,
                 made: list[tuple[Step, Any]] | None = None, adapter: Any = None):
        super().__init__(difference.render(call))
        self.call, self.op, self.difference, self.rule = call, op, difference, rule
        self.made, self.adapter = made or [], adapter


class Checked:
    failure: type[Exception] = AdapterFailure  # what the adapter raises when the implementation fails

    def __init__(self, adapter: Any, stats: RunStats | None, rule_of: RuleOf):
        self.impl, self.stats, self.rule_of = adapter, stats or RunStats(), rule_of
        self.call = self.op = ""
        self.last: dict[str, Any] = {}  # the state as last checked (`state`)
        self.own: str | None = None  # the rule a directed item checks; None: every difference stops the run
        self.read_past: list[Divergence] = []  # the other rules' differences the model followed the implementation past
        self.made: list[tuple[Step, Any]] = []  # the calls recorded (`run`'s `step`), and what each returned

    def state(self) -> dict[str, Any]:  # pragma: no cover  (each family's driver defines it)
        """The implementation's state a query must leave unchanged, by name (read through the adapter)."""
        raise NotImplementedError

    def step(self, op: str, call: str) -> None:
        """A call of the operation `op` begins: `call` words it in every message about it."""
        self.op, self.call = op, call
        self.stats.steps += 1
        self.stats.rules[op] += 1

    def diverge(self, difference: Difference, op: str = "", follows: bool = False) -> None:
        """The difference, made by the step's call; `op`: the operation within it that made it (a query's crash is
        the query's rule's, not the step's), by the family's table. `follows`: the model can go on from what the
        implementation did: a difference of a rule other than `own` is then read past (it returns), not raised."""
        divergence = Divergence(self.call, self.op, difference, self.rule_of(difference, op or self.op),
                                list(self.made), self.impl)
        if not (follows and self.own is not None and divergence.rule != self.own):
            raise divergence
        self.read_past.append(divergence)

    def run(self, what: Callable[[], Any], pairs: bool = False, op: str = "", step: Step | None = None) -> Any:
        """The implementation's side of a call: its failure is a crash (of `op`, the operation called, when it is
        not the step's own); `pairs`: it returns (src, dst) pairs; `step`: the call as the implementation
        received it, recorded in `made` with what it returned (its operation is then the step's)."""
        if step is not None:
            self.op = step.op
            self.made.append((step, None))
        try:
            got = what()
        except self.failure as failure:
            self.diverge(Difference(CRASH, "", None, str(failure)), op)
        if step is not None:
            self.made[-1] = (step, got)
        try:
            return [(int(a), int(b)) for a, b in got] if pairs else got
        except (TypeError, ValueError):
            self.diverge(Difference(CRASH, "", None, f"returned {str(got)[:200]}, not a list of (src, dst) pairs"))

    def ask(self, what: str, expected: Any, ask: Callable[[], Any], unchanged: str = "unchanged",
            follows: Callable[[Any], bool] = lambda got: False) -> Any:
        """A query: it must change nothing (the aspect `unchanged`), and answer what the model does (the aspect
        `what`); its crash is the query's (the family's table of operations names the rule of `what`). Its
        answer: the model's, or the implementation's where the model `follows` it (a refusal the model can take
        for its own) and the difference is read past (`diverge`)."""
        got, now = self.run(ask, op=what), self.state()
        if now != self.last:
            self.diverge(Difference(unchanged, f"{what} (a query)", _words(self.last), _words(now)))
        if got != expected:
            self.diverge(Difference(what, "", expected, got), follows=follows(got))
        return got

    def take_over(self, divergence: Divergence) -> bool:
        """After `divergence` (raised, of a rule other than `own`), whether the model took over what the
        implementation did, so that the program goes on (Finding.past); by default it cannot."""
        return False


def _words(state: dict[str, Any]) -> str:
    return ", ".join(f"{name} {value}" for name, value in state.items())


def replay(program: Program, driver: Checked, operations: Mapping[str, Callable[..., Any]],
           calls: list[str], rule: str | None = None, close: bool = True) -> Finding | None:
    """Runs the program's steps through `driver` (`operations[op](driver, *args)` makes a step's call): the first
    difference that stopped it as a Finding (the 1-based step and the rule it breaks), or None. `rule`: the rule
    a directed item checks; a difference of another rule that the model can follow (`Checked.diverge`'s
    `follows`) or take over after it (`Checked.take_over`) is read past (Finding.past), and when nothing stops
    the program the first of them is returned `followed`. `calls` gets each call made, in words; the adapter is
    closed after (`close`; else the caller closes it, once it has read the state the program left)."""
    past: list[Finding] = []
    driver.own, driver.read_past = rule, []
    try:
        for number, step in enumerate(program.steps, 1):
            try:
                operations[step.op](driver, *step.args)
            except Divergence as divergence:
                found = [*_found(program, number, driver), _finding(program, number, divergence)]
                if rule is None or divergence.rule == rule or not driver.take_over(divergence):
                    return replace(found[-1], past=(*past, *found[:-1]))
                past += found
                continue
            finally:
                calls.append(f"  {number}. {' '.join(map(str, (step.op, *step.args)))}: {driver.call}")
            past += _found(program, number, driver)
        return replace(past[0], followed=True, past=tuple(past[1:])) if past else None
    finally:
        if close:
            driver.impl.close()


def _finding(program: Program, number: int, divergence: Divergence) -> Finding:
    return Finding(program.name, number, divergence.call, divergence.difference, divergence.rule,
                   made=tuple(divergence.made))


def _found(program: Program, number: int, driver: Checked) -> list[Finding]:
    """The differences the driver read past in the step `number`, as Findings (taken from it)."""
    found = [_finding(program, number, d) for d in driver.read_past]
    driver.read_past = []
    return found
