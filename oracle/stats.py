"""Run statistics every family's machine fills in: steps, examples, rules fired, boundary events reached."""

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class RunStats:
    """What the generated programs did. Shrinking replays count apart (`shrink_replays`): `examples` never
    exceeds the target, and steps, rules and events are those of the generated programs alone."""

    examples: int = 0  # programs generated and run
    steps: int = 0
    shrink_replays: int = 0  # replays of shrunk variants of the failing program
    rules: Counter = field(default_factory=Counter)
    events: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        return {
            "examples": self.examples,
            "steps": self.steps,
            "shrink_replays": self.shrink_replays,
            "rules": dict(sorted(self.rules.items())),
            "events": dict(sorted(self.events.items())),
        }
