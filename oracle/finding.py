"""Where a replay of a call program first broke a rule, for every family: the program, the 1-based step, the
call (its text), the Difference and the rule it breaks. Its message is made last:

    PROGRAM: step N CALL: DIFFERENCE [rule: RULE]

(the difference's aspect left out where the program is named after it: `no false hit: step 8 lookup(...): hit 0
...`, not `no false hit: ...: no false hit: hit 0 ...`).
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
    followed: bool = False  # another rule's difference the program went on past (the model took the
    # implementation's answer) to its end, so nothing was left unchecked after it
    past: tuple["Finding", ...] = ()  # the differences of other rules the program went on past before this one
    made: tuple = ()  # the calls the implementation received up to it, and what each returned (oracle/checked.py)

    @property
    def where(self) -> str:
        return f"{self.program}: step {self.step} {self.call}"

    @property
    def problem(self) -> str:
        """The difference in words, its aspect said once: left out where the program is named after it."""
        said = str(self.difference)
        return said.removeprefix(f"{self.difference.aspect}: ") if self.program == self.difference.aspect else said

    @property
    def message(self) -> str:
        return f"{self.where}: {self.problem} [rule: {self.rule}]"
