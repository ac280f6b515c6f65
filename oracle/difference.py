"""One way an implementation's observed state differs from the model's: a structured value whose text is made
last. The aspect says which fact differs (a family's rules map it, with the call that made it, to the rule it
breaks); the location says where, in the implementation's own terms.

Its text is the plain `location: expected E, got G (note)` unless the family that owns the aspect words it
otherwise: each family gives its wordings, keyed by aspect, to `word` when it is imported."""

from dataclasses import dataclass
from typing import Callable

Wording = Callable[["Difference"], str]
CRASH = "crash"  # the call (or reading the state after it) crashed, hung, raised or exited: `got` says how
_WORDINGS: dict[str, Wording] = {CRASH: lambda difference: str(difference.got)}


def word(wordings: dict[str, Wording]) -> None:
    """Registers a family's wordings of its aspects; two families wording one aspect is an error."""
    for aspect, wording in wordings.items():
        had = _WORDINGS.get(aspect)
        if had is not None and had.__module__ != wording.__module__:  # the same module again: it was reloaded
            raise ValueError(f"the aspect {aspect!r} is worded by {had.__module__} and {wording.__module__}")
        _WORDINGS[aspect] = wording


@dataclass(frozen=True, slots=True)
class Difference:
    aspect: str
    location: str  # e.g. "ref_count[3]", "req 2 block_table[1]", "" when the aspect says it all
    expected: object
    got: object
    seq: int | None = None  # the sequence (or request) whose fact differs, if one does
    note: str = ""  # why, in a few words, when the values alone do not say it

    def __str__(self) -> str:
        return _WORDINGS.get(self.aspect, plain)(self)

    def render(self, step: str) -> str:
        """The difference as what `step` (a call, in words) did wrong."""
        return f"{step}: {self}"


def plain(difference: "Difference") -> str:
    text = f"{difference.location or difference.aspect}: expected {difference.expected}, got {difference.got}"
    return f"{text} ({difference.note})" if difference.note else text


def located(difference: "Difference") -> str:
    """`ASPECT: LOCATION: expected E, got G`, the aspect left out when the location already names it (or is
    empty): a family's wording of aspects that do not say where they are."""
    aspect, location = difference.aspect, difference.location
    if not location or location.startswith(aspect) or f"{aspect}[" in location:
        return plain(difference)
    return f"{aspect}: {plain(difference)}"
