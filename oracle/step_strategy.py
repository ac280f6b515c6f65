"""How a machine draws its next step cheaply: the operation and each of its arguments as one plain choice each.

Hypothesis's own rule selection asks a feature flag and a filter of every candidate rule, and `st.one_of`,
`.map` and nested strategies open a span per draw: together most of a step's cost (tests/bench/fuzz_speed.py).
`Steps` draws the operation as one index among the rules whose preconditions hold and bundles are non-empty
(shrinking towards the first rule of `order`), a bundle value as one index (newest first, as Hypothesis does),
a `Choice` or `Between` argument as one integer, and a `ListOf` as its length and then its elements; any other strategy is drawn as Hypothesis draws it. The rules
stay the machine's own `@rule`s: a step prints and replays as before (`state.create(seq_id=3, ...)`).

    Choice(0, 1, 2, Between(-2**31, 2**31 - 1))   # one of these, the earlier the simpler; a nested choice is
                                                  # drawn after its index
    install(machine, order=("create", "append", ...))   # in the machine's __init__

`install` replaces the machine's `_rules_strategy`, the one attribute of Hypothesis's RuleBasedStateMachine
this relies on (its run loop draws `(rule, arguments)` from it, hypothesis>=6.100).
"""

from typing import Any, Sequence

from hypothesis.errors import InvalidDefinition
from hypothesis.stateful import Bundle, RuleBasedStateMachine, VarReference
from hypothesis.strategies import SearchStrategy


class Between(SearchStrategy):
    """An integer from `low` to `high`, as one choice (shrinking towards 0, or the bound nearest it)."""

    def __init__(self, low: int, high: int):
        super().__init__()
        self.low, self.high = low, high

    def do_draw(self, data: Any) -> int:
        return data.draw_integer(self.low, self.high)

    def __repr__(self) -> str:
        return f"Between({self.low}, {self.high})"


class Choice(SearchStrategy):
    """One of `values`, as one index (repeat a value to weight it; the first is what shrinking aims at). A value
    that is a Choice or Between is drawn in turn: `Choice(Between(1, 48), 0, -1)` is one_of without its spans."""

    def __init__(self, *values: Any):
        super().__init__()
        if not values:
            raise ValueError("Choice of nothing")
        self.values, self.last = values, len(values) - 1

    def do_draw(self, data: Any) -> Any:
        value = self.values[data.draw_integer(0, self.last)] if self.last else self.values[0]
        return value.do_draw(data) if isinstance(value, (Choice, Between, ListOf)) else value

    def __repr__(self) -> str:
        return f"Choice({', '.join(map(repr, self.values))})"


class ListOf(SearchStrategy):
    """A list of `min_size` to `max_size` elements, each one of the values `element` (a Between, or a Choice of
    plain values) can take, in two choices whatever its length: the length, then every element at once as one
    integer whose digits are the elements' positions among those values (the first element the most significant
    digit). Shrinking lowers the length and the integer: fewer elements, each towards the first value."""

    def __init__(self, element: Choice | Between, min_size: int, max_size: int):
        super().__init__()
        if isinstance(element, Between):
            self.values: Sequence[Any] = range(element.low, element.high + 1)
        elif any(isinstance(value, (Choice, Between, ListOf)) for value in element.values):
            raise ValueError("ListOf of a Choice that nests strategies")
        else:
            self.values = element.values
        self.element, self.min_size, self.max_size = element, min_size, max_size

    def do_draw(self, data: Any) -> list:
        low, high, values = self.min_size, self.max_size, self.values
        length = low if low == high else data.draw_integer(low, high)
        number = data.draw_integer(0, len(values) ** length - 1) if length else 0
        digits = []
        for _ in range(length):
            number, digit = divmod(number, len(values))
            digits.append(values[digit])
        return digits[::-1]

    def __repr__(self) -> str:
        return f"ListOf({self.element!r}, {self.min_size}, {self.max_size})"


def _drawer(strategy: SearchStrategy) -> Any:
    """(data, machine) -> an argument's value: one choice for Choice, Between and a bundle, Hypothesis's draw for
    anything else."""
    if isinstance(strategy, (Choice, Between, ListOf)):
        do_draw = strategy.do_draw
        return lambda data, machine: do_draw(data)
    if isinstance(strategy, Bundle):
        name, consume = strategy.name, strategy.consume

        def pick(data: Any, machine: RuleBasedStateMachine) -> VarReference:
            bundle = machine.bundle(name)
            last = len(bundle) - 1
            position = last - (data.draw_integer(0, last) if last else 0)  # index 0: the newest
            return bundle.pop(position) if consume else bundle[position]

        return pick
    return lambda data, machine: data.draw(strategy)


class Steps(SearchStrategy):
    """A machine's next step: (rule, arguments), as Hypothesis's run loop draws it from `_rules_strategy`."""

    def __init__(self, machine: RuleBasedStateMachine, order: Sequence[str] = ()):
        super().__init__()
        self.machine = machine
        self.rules = _rules_of(type(machine), tuple(order))

    def do_draw(self, data: Any) -> tuple[Any, dict[str, Any]]:
        machine = self.machine
        valid = [entry for entry in self.rules if _enabled(entry, machine)]
        if not valid:
            names = ", ".join(entry[0].function.__name__ for entry in self.rules)
            raise InvalidDefinition(f"No progress can be made from state {machine!r}: no rule's precondition holds "
                                    f"(rules: {names})")
        rule, _, _, drawers = valid[data.draw_integer(0, len(valid) - 1)] if len(valid) > 1 else valid[0]
        return rule, {name: draw(data, machine) for name, draw in drawers}


def _enabled(entry: tuple, machine: RuleBasedStateMachine) -> bool:
    """Whether a rule can run: each bundle it draws from holds something, and each precondition holds."""
    _, bundles, preconditions, _ = entry
    for name in bundles:
        if not machine.bundles.get(name):  # what machine.bundle(name) holds, without making an empty one
            return False
    for holds in preconditions:
        if not holds(machine):
            return False
    return True


_CACHE: dict[tuple[type, tuple[str, ...]], list] = {}


def _rules_of(machine_type: type, order: tuple[str, ...]) -> list:
    """(rule, the bundles it draws from, its preconditions, its argument drawers) of each rule: those `order` names first, in its
    order, then the rest as Hypothesis orders them (no target first, then fewer arguments, then by name)."""
    key = (machine_type, order)
    if key not in _CACHE:
        rules = sorted(machine_type.setup_state().rules, key=lambda r: (
            order.index(r.function.__name__) if r.function.__name__ in order else len(order),
            sorted(r.targets), len(r.arguments), r.function.__name__))
        _CACHE[key] = [(rule, tuple(b.name for b in rule.bundles), tuple(rule.preconditions),
                        tuple((name, _drawer(rule.arguments[name])) for name in sorted(rule.arguments))) for rule in rules]
    return _CACHE[key]


def install(machine: RuleBasedStateMachine, order: Sequence[str] = ()) -> None:
    """Makes `machine` draw its steps with Steps (call in its __init__, after RuleBasedStateMachine's). A Hypothesis
    whose machine has no `_rules_strategy` keeps its own drawing: the same programs' kind, only slower."""
    if hasattr(machine, "_rules_strategy"):
        machine._rules_strategy = Steps(machine, order)
