"""One judge of a directed item, for every family: what the item says of its program's replay (oracle/checked.py's
Finding: the difference that stopped it, and those it read past), and which items each difference is left to
(Excuse, settled once every item has run: oracle/grading/settlement.py). A family supplies only its facts
(`Judge`): its items, which steps exercise an item's rule, the items whose bug may make an aspect too, and
whether a program the model followed past another rule's difference goes on checking; and, per replay, the
finding in its own terms and the calls listed as its reader knows them.

- Nothing found: the item passes.
- Its own rule's difference, or one its rule may have made (`may_make`), fails it, even one met after other
  rules' differences were read past (a planted difference cannot hide it); those it read past still cost their
  items.
- Each other rule's difference read past is left to that rule's item: where the program goes on (`goes_on`),
  as any excuse (the item checked what followed; its bug may have been made by `may_make`'s items); where it
  does not, as a stopped excuse (what the program did after it is not what it was written to check).
- A difference of a rule no item owns (a crash in a step the item does not judge) fails the item once it has
  checked something of its own rule, else it is not run.
- Any other difference stops the program: a stopped excuse naming its rule's item (the item itself where that
  item is `ungraded`: not applicable, so the reader takes it back), and the item passes when it had checked
  something of its own rule (a judged step before it, or an earlier program run whole), else is not run.

`directed` is the item's check: the family replays the item's programs one by one (`Replayed`), and the first
with a difference decides; where the program goes on (`goes_on`), one read past to its end does not, and the next
program runs (their reads are all left to their items).

A family whose rules are not named as its items says which item enforces a rule (`owner`; ANY_OTHER: none
does); one whose replay knows whether it compared something its item's rule decides says so (`Replayed.checked`),
else a judged step before the finding (`judges`) counts; one with its own words for a finding gives them
(`Replayed.student`, `Replayed.failed`: the item's own failure with what its reader needs, a repro file).
"""

from contextlib import closing
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Generator, Iterable, Mapping

from oracle.finding import Finding
from oracle.grading.grader import ANY_OTHER, Check, Excuse, NotRun, Outcome, Seen
from oracle.program import Program, Step


@dataclass(frozen=True)
class Judge:
    """A family's facts for judging its directed items."""

    judges: Callable[[str, Step], bool]  # (item, step) -> whether the step exercises the item's rule
    items: frozenset[str] | None = None  # the items whose rules a difference may break (None: any rule's)
    may_make: Mapping[str, frozenset[str]] = field(default_factory=dict)  # aspect -> the items whose bug may make
    # it too, besides its rule's: an item of these never reads past it, and its excuse is not charged where they failed
    goes_on: bool = False  # a difference read past leaves the program checking the rest of its own rule
    owner: Callable[[str], str] | None = None  # rule -> the item that enforces it (ANY_OTHER: none); None: its name
    failed_reads_cost: bool = True  # an item that fails of its own leaves what it read past to their items (False: the
    # family has no table of what its bug may make, and its own bug may have made them: its failure pays for them)

    def __call__(self, item: str, program: Program, found: Finding | None, details: Callable[[Finding], str], *,
                 checked: bool = False, ungraded: Iterable[str] = (), words: Callable[[Finding], Finding] | None = None,
                 seen: Callable[[Finding], None] | None = None, read: tuple[Excuse, ...] = (),
                 replayed: "Replayed | None" = None) -> Outcome:
        """The item's verdict on one program's replay (NotRun: it checked nothing of its own rule). `details`: the
        calls that led to a finding, as the item's reader lists them; `checked`: an earlier program of the item ran
        whole; `ungraded`: the items the rubric or the target's policy does not grade; `words`: a finding in the
        family's terms (the call, the rule by the program's step); `seen`: told of its own rule's failure; `read`:
        what earlier programs read past; `replayed`: the family's other facts of this replay (Replayed)."""
        if found is None:
            return Outcome(True)
        words = words or (lambda finding: finding)
        student = replayed.student if replayed is not None else None
        fact = replayed.checked if replayed is not None else None  # the family's own: it compared its rule's
        past = [words(f) for f in ([found, *found.past] if found.followed else found.past)]
        read = (*read, *(self._read_past(f, details, student) for f in past))
        if found.followed:
            # where it goes on, `directed` says whether any of the item's programs checked its rule
            if self.goes_on or checked or fact or self._checked(item, program, past[0]):
                return Outcome(True, f"read past {self._why(past[0])}" + ("" if self.goes_on else
                                                                          ", then nothing of its own rule"), excuse=read)
            raise NotRun(f"checked nothing of its own rule: {self._why(past[0])}", read)
        broke = words(found)
        if self.owns(item, broke):
            if seen is not None:
                seen(broke)
            left = (read or None) if self.failed_reads_cost else None
            if replayed is not None and replayed.failed is not None:
                return replace(replayed.failed(broke), excuse=left)
            return Outcome(False, broke.message, details(broke), excuse=left)
        stop = past[0] if past and not self.goes_on else broke  # where it stopped checking its own rule
        checked = checked or bool(fact) or (fact is None and self._checked(item, program, stop))
        if self.items is not None and broke.rule not in self.items:  # no item's rule: its own failure, once checked
            if checked:
                return Outcome(False, broke.message, details(broke), excuse=read or None)
            raise NotRun(f"checked nothing of its own rule: {self._why(broke)}")
        # what followed may hide a failure of its own rule: an owner the rubric leaves out sends the failure back
        # to this item (absent_holds=False), as does an owner the target's policy or shape does not grade
        owner = item if broke.rule in set(ungraded) else self._owner(broke.rule)
        stopped = Excuse(frozenset({owner}), _seen(broke, details, student), absent_holds=False, stopped=True)
        if checked:
            return Outcome(True, f"not checked past {self._why(stop)}", excuse=(*read, stopped))
        raise NotRun(f"checked nothing of its own rule: {self._why(stop)}", (*read, stopped))

    def owns(self, item: str, finding: Finding) -> bool:
        """Whether a difference is the item's own to fail on: its rule's, or one its rule's bug may have made."""
        return self._owner(finding.rule) == item or item in self.may_make.get(finding.difference.aspect, ())

    def _owner(self, rule: str) -> str:
        return rule if self.owner is None else self.owner(rule)

    def _read_past(self, finding: Finding, details: Callable[[Finding], str],
                   student: Callable[[Finding], str] | None) -> Excuse:
        """Another rule's difference the model read past, left to that rule's item."""
        seen, owners = _seen(finding, details, student), frozenset({self._owner(finding.rule)})
        if self.goes_on:
            return Excuse(owners, seen, unless=self.may_make.get(finding.difference.aspect, frozenset()))
        return Excuse(owners, seen, absent_holds=False, stopped=True)

    def _checked(self, item: str, program: Program, finding: Finding) -> bool:
        """Whether a step that exercises the item's rule ran before the finding's."""
        return any(self.judges(item, step) for step in program.steps[:finding.step - 1])

    def _why(self, finding: Finding) -> str:
        owner = self._owner(finding.rule)
        whose = f"rule {finding.rule}" if owner == ANY_OTHER else f"item {owner}"
        return f"{finding.where}: {finding.problem} (that is {whose}'s to judge)"


def _seen(finding: Finding, details: Callable[[Finding], str], student: Callable[[Finding], str] | None) -> Seen:
    return Seen(finding.message, details(finding), student=student(finding) if student is not None else "")


@dataclass(frozen=True)
class Replayed:
    """One program of an item replayed, as its family hands it to the judge (`Judge.__call__`'s arguments)."""

    program: Program
    found: Finding | None  # the difference that stopped it, or its first read past (followed); None: it ran whole
    details: Callable[[Finding], str]  # the calls that led to a finding, as the item's reader lists them
    words: Callable[[Finding], Finding] | None = None  # a finding in the family's terms
    ungraded: frozenset[str] = frozenset()  # the items the target's policy or shape does not grade
    seen: Callable[[Finding], None] | None = None  # told of the item's own rule's failure
    checked: bool | None = None  # it compared a call that could show a bug of the item's rule (the family's replay
    # knows; None: judged by the program's steps before the finding, `Judge.judges`)
    student: Callable[[Finding], str] | None = None  # what a student reads of a finding ("": its message plainly)
    failed: Callable[[Finding], Outcome] | None = None  # the item's own failure as its reader needs it (a repro)


Replays = Callable[[str, Any], Generator[Replayed, None, None]]  # (item, submission) -> its programs replayed


def directed(item: str, rule: str, judge: Judge, replays: Replays) -> Check:
    """The item's check: its programs replayed in turn by the family (`replays`, which may raise NotApplicable or
    NotRun before the first, and is closed once the item is judged), the first with a difference judged."""

    def run(sub: Any, options: Mapping[str, Any]) -> Outcome:
        checked, read, first = False, (), None
        with closing(replays(item, sub)) as each:
            for replayed in each:
                if replayed.found is None:
                    checked = checked or replayed.checked is not False
                    continue
                outcome = judge(item, replayed.program, replayed.found, replayed.details, checked=checked,
                                ungraded=replayed.ungraded, words=replayed.words, seen=replayed.seen, read=read,
                                replayed=replayed)
                if not (judge.goes_on and replayed.found.followed):
                    return outcome
                # read past to its end: the next program runs, and the verdict's note is the first one read past
                checked, read = checked or replayed.checked is not False, outcome.excuse
                first = first or outcome
        if first is not None and not checked:
            raise NotRun(f"checked nothing of its own rule: {first.message.removeprefix('read past ')}", read)
        return Outcome(True) if first is None else replace(first, excuse=read)

    return Check(item, rule, run)
