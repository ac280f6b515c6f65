"""A difference between the implementation and the model, as a value; its text is made last."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Difference:
    aspect: str  # which rule: "block_table", "free order", "no false hit", "conservation", ...
    location: str  # where: "block_table[1]", "block 3", "" when the aspect says it all
    expected: object
    got: object

    def render(self, step: str) -> str:
        if not self.location or self.location.startswith(self.aspect) or f"{self.aspect}[" in self.location:
            where = self.location or self.aspect
        else:
            where = f"{self.aspect}: {self.location}"
        return f"{step}: {where}: expected {self.expected}, got {self.got}"
