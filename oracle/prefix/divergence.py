"""What the prefix driver (oracle/prefix/driver.py) raises when the pool and the model disagree."""

from typing import Any

from oracle.difference import Difference
from oracle.program import Step


class Divergence(AssertionError):
    """The implementation and the model disagree; `difference` is the first difference (a crash: CRASH), `call`
    the call, `made` the calls the pool received up to it (each step and what it returned; oracle/prefix/calls.py
    writes them in the pool's terms through `adapter`)."""

    def __init__(self, call: str, difference: Difference, made: list[tuple[Step, Any]] | None = None,
                 adapter: Any = None):
        super().__init__(difference.render(call))
        self.call, self.difference = call, difference
        self.made, self.adapter = made or [], adapter
