"""What the prefix driver (oracle/prefix/driver.py) raises when the pool and the model disagree: the core's
Divergence (oracle/checked.py), with the calls that led there."""

from typing import Any

from oracle import checked
from oracle.difference import Difference
from oracle.program import Step


class Divergence(checked.Divergence):
    """The implementation and the model disagree: `difference` (a crash: CRASH), made by `call` (of the operation
    `op`), which breaks `rule` ("": no rule's); `made` the calls the pool received up to it (each step and what
    it returned; oracle/prefix/calls.py writes them in the pool's terms through `adapter`)."""

    def __init__(self, call: str, op: str, difference: Difference, rule: str,
                 made: list[tuple[Step, Any]] | None = None, adapter: Any = None):
        super().__init__(call, op, difference, rule)
        self.made, self.adapter = made or [], adapter
