"""Run statistics every family's machine fills in: steps, examples, rules fired, boundary events reached."""

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class RunStats:
    examples: int = 0
    steps: int = 0
    rules: Counter = field(default_factory=Counter)
    events: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        return {
            "examples": self.examples,
            "steps": self.steps,
            "rules": dict(sorted(self.rules.items())),
            "events": dict(sorted(self.events.items())),
        }
