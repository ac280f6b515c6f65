"""What the prefix machine (oracle/prefix/machine.py) raises when the pool and the model disagree, and the
small helpers its rules share (counting, validity, preconditions, the pool-making rule of a domain)."""

from functools import wraps
from typing import Any, Callable

from hypothesis.errors import UnsatisfiedAssumption
from hypothesis.stateful import initialize

from oracle.difference import Difference
from oracle.program import Step


class Divergence(AssertionError):
    """The implementation and the model disagree; `difference` is the first difference, `call` the call, `made`
    the calls the pool received up to it (each step and what it returned; oracle/prefix/calls.py writes them in
    the pool's terms through `adapter`)."""

    def __init__(self, call: str, difference: Difference | None, text: str | None = None,
                 made: list[tuple[Step, Any]] | None = None, adapter: Any = None):
        super().__init__(text or difference.render(call))
        self.call, self.difference = call, difference
        self.made, self.adapter = made or [], adapter


def counted(step: Callable) -> Callable:
    @wraps(step)
    def counting(self: Any, **kwargs: Any) -> Any:
        self.stats.steps += 1
        self.stats.rules[step.__name__] += 1
        return step(self, **kwargs)

    return counting


def valid(condition: bool) -> None:
    """A program the strategies never make (a shrunk or hand-written replay) is not valid: Hypothesis drops
    it, the shrinker rejects it. (Not `assume`, which warns when the shrinker replays outside Hypothesis.)"""
    if not condition:
        raise UnsatisfiedAssumption("outside the generated domain")


def supports(operation: str) -> Callable[[Any], bool]:
    return lambda self: operation in self.impl.supports


def start_rule(domain: Any) -> Callable:
    """The machine's first rule: a pool of the sizes `domain` (oracle/prefix/strategies.Domain) declares."""

    @initialize(num_blocks=domain.pool_strategy(), block_size=domain.block_size_strategy())
    @counted
    def start(self: Any, num_blocks: int, block_size: int) -> None:
        self._start(num_blocks, block_size)

    return start
