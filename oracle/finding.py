"""Where a replay of a call program first broke a rule, for every family: the program, the 1-based step, the
call (its text), the Difference and the rule it breaks. Its message is made last:

    PROGRAM: step N CALL: DIFFERENCE [rule: RULE]
"""

from dataclasses import dataclass

from oracle.difference import Difference


@dataclass
class Finding:
    program: str  # the program's name
    step: int  # 1-based
    call: object  # the call; str() is its text
    difference: Difference
    rule: str
    program_step: int | None = None  # the line of the printed program that made the call (a fuzz run's), for its
    # picture; the message numbers calls, as the call list and the repro do

    @property
    def where(self) -> str:
        return f"{self.program}: step {self.step} {self.call}"

    @property
    def problem(self) -> str:
        return str(self.difference)

    @property
    def message(self) -> str:
        return f"{self.where}: {self.problem} [rule: {self.rule}]"
