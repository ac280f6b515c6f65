"""A Hypothesis state machine built from a family's table of operations, for a family whose driver makes and
checks each call (oracle/checked.py): each operation is what it does to the driver and the strategies of its
arguments. The start runs once, first; the other operations run as rules in any order, under their own names (a
printed program calls them by those names). The machine makes one driver per program and closes its adapter after.
Each step is drawn as one index for the operation (the first in the table is what shrinking aims at) and one draw
per argument (oracle/step_strategy.py): give arguments as `Choice` and `Between` there, one choice each, rather than
`st.one_of`, `.map` or nested strategies, whose spans cost most of a step.

    machine_for = table_machine("FamilyMachine", START, OPERATIONS, make_driver)
    machine_for(load_adapter("engine")).TestCase

`repro_preamble` gives the lines that make a printed program runnable, for a family package with `load_adapter`
and `machine.machine_for`.
"""

import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from hypothesis.errors import UnsatisfiedAssumption
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, precondition, rule
from hypothesis.strategies import SearchStrategy

from oracle.stats import RunStats
from oracle.step_strategy import install

AdapterFactory = Callable[[], Any]


@dataclass(frozen=True)
class Operation:
    act: Callable[..., Any]  # (driver, **arguments)
    arguments: Mapping[str, SearchStrategy] = field(default_factory=dict)  # a Bundle (or consumes) draws a result
    target: Bundle | None = None  # the bundle what `act` returns goes to (hypothesis.stateful.multiple(): nothing)
    when: Callable[[Any], bool] | None = None  # (driver) -> whether the operation can be drawn now


def valid(condition: bool) -> None:
    """A program the strategies never make (a shrunk or hand-written replay) is not valid: Hypothesis drops it,
    the shrinker rejects it. (Not `assume`, which warns when a program is replayed outside Hypothesis.)"""
    if not condition:
        raise UnsatisfiedAssumption("outside the generated domain")


def _rule(name: str, operation: Operation, decorator: Callable[..., Callable]) -> Callable:
    def step(self: Any, **arguments: Any) -> Any:
        return operation.act(self.driver, **arguments)

    step.__name__ = step.__qualname__ = name
    target = {} if operation.target is None else {"target": operation.target}
    made = decorator(**operation.arguments, **target)(step)
    when = operation.when
    return made if when is None else precondition(lambda self: when(self.driver))(made)


def table_machine(name: str, start: Operation | Callable[[AdapterFactory], Operation],
                  operations: Mapping[str, Operation],
                  driver: Callable[[Any, RunStats, AdapterFactory], Any], start_name: str = "start",
                  end: Callable[[Any], Any] | None = None) -> Callable[..., type]:
    """`machine_for(adapter_factory, stats=None)`: a machine class bound to an implementation, whose runs count
    into `stats`; `driver(adapter, stats, adapter_factory)` makes a program's driver. `start` may depend on the
    implementation: `start(adapter_factory)` is its start (the sizes it supports). `start_name`: what a printed program
    calls the start by; `end(driver)`: the program's last step (its teardown), made unless a step failed (a check of
    the state it leaves, say). A Program of its operations (oracle/shrink.py) replays without Hypothesis, through
    the class's `operations` (`arguments`: each one's names in a Step's order), `make_driver` and `end`."""

    def __init__(self: Any) -> None:
        RuleBasedStateMachine.__init__(self)
        install(self, order)  # a step as a few plain choices, the table's first operation what shrinking aims at
        self.stats.examples += 1
        self.driver = driver(self.adapter_factory(), self.stats, self.adapter_factory)

    def teardown(self: Any) -> None:
        # Hypothesis runs teardown in a `finally`: a step that raised (a divergence, or an error of the grader's
        # own) is the program's failure, which the end must not replace
        try:
            if end is not None and sys.exc_info()[1] is None:
                end(self.driver)
        finally:
            self.driver.impl.close()

    order = tuple(operations)
    rules = {op: _rule(op, operation, rule) for op, operation in operations.items()}
    fixed = isinstance(start, Operation)
    first = {start_name: _rule(start_name, start, initialize)} if fixed else {}
    base = type(name, (RuleBasedStateMachine,), {"__init__": __init__, "teardown": teardown, **rules, **first,
                                                 "make_driver": staticmethod(driver), "end": staticmethod(end)})

    def machine_for(adapter_factory: AdapterFactory, stats: RunStats | None = None) -> type:
        begin = start if fixed else start(adapter_factory)
        own = {} if fixed else {start_name: _rule(start_name, begin, initialize)}
        table = {start_name: begin, **operations}  # and a step's arguments by name, as Hypothesis prints them
        arguments = {op: tuple(o.arguments if op == start_name else sorted(o.arguments)) for op, o in table.items()}
        return type(name, (base,), {"adapter_factory": staticmethod(adapter_factory), "operations": table,
                                    "arguments": arguments, "stats": stats if stats is not None else RunStats(), **own})

    return machine_for


def repro_preamble(package: str, name: str) -> Callable[[str], list[str]]:
    """The imports that bind `name` to `package`'s machine over the implementation `impl`, before its program."""
    return lambda impl: [f"from {package} import load_adapter", f"from {package}.machine import machine_for",
                         f"{name} = machine_for(load_adapter({impl!r}))"]
