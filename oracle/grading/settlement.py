"""One settlement, for every family: what an item read past, settled once every item has run.

An item whose programs met another rule's failure, and read past it or stopped there, leaves that failure to
the items of that rule: it names them in an Excuse, with what it saw (Seen). A failure must cost some item,
once. Once every item has run, `settle` decides, for each excuse:

- a named item that passed, when the excuse is `sure` the failure is that item's rule's, takes it (charged:
  the difference is its rule's, whichever item's programs showed it), once, however many items read past it;
- the excuse holds when no named item graded here passed (each failed, was not run, or took the failure);
- a named item the rubric leaves out: with `absent_holds` that is the course's choice not to grade its rule
  (the excuse holds); without, the failure goes back to the item that read past it (it stopped there, so what
  it could not check may hide a failure of its own rule);
- ANY_OTHER (the owner cannot be named): the excuse holds when some other item failed, not counting the
  `catch_all` items (a check of every rule at once fails for any bug, so its failure says nothing of this one);
- a `stopped` excuse (the item could not check its own rule past that failure) holds as any other: what the
  item could not check is checked by the fuzz item, whose failure charges the item of the rule it breaks (a plant
  that stops a program cannot hide the bug behind it from the fuzz). Weighing a stopped excuse by the items'
  points was tried and cost an honest bug the items it only stopped (blockspace's table_one_block_early: 65 -> 35);
- an item that names itself, or an excuse that does not hold: the item fails with what it saw.
An item that failed of its own may name the items of the rule its failure breaks too (a catch-all's failure): an
owner that passed takes it, once, and the item's own failure stands; not where items of another rule that may have
made it (`unless`) failed, worth at least the owner's points, and then the excuse holds for its reader too (the
failure is paid). A directed item that read past another rule's difference names that rule's item the same way.
An excuse `aside` is a failure an item met on the way that stopped nothing of its own (a memory error the grader
counted while the item's programs ran, which a family leaves to its memory item): it is settled as any named one, but never said to be why its reader was not
run.

Verdicts come from these values only; the words (Seen.said_by_reader, Seen.said_by_owner) are made last.
"""

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

ANY_OTHER = "*"  # an excuse owner: some other item, not a catch-all one
PASSED = "passed"
ANOTHER_RULE = " (another rule's bug, but no item failed for it here)"


@dataclass(frozen=True)
class Seen:
    """What an item saw of a failure it leaves to other items: the failure's words and the calls that led there."""

    message: str
    details: str = ""
    elsewhere: bool = True  # the reader judged it another rule's: said so when the reader must take it itself
    student: str = ""  # what a student reads of it (standing alone, markdown); "": the words above, plainly

    def said_by_reader(self) -> str:
        return self.message + (ANOTHER_RULE if self.elsewhere else "")

    def said_by_owner(self, reader: str) -> str:
        return f"{self.message} (found by item {reader}'s programs, not this item's)"


@dataclass(frozen=True)
class Excuse:
    """A failure an item read past, and the items it leaves it to (`owners`; ANY_OTHER: some other item's)."""

    owners: frozenset[str]
    failure: Seen
    absent_holds: bool = True  # an owner the rubric leaves out is the course's choice (False: the reader's)
    sure: bool = True  # the failure is surely the owners' rule's: an owner that passed takes it. False: it may
    # be the reader's own (a crash in the very call a probe is about): an owner that passed leaves it to the reader
    stopped: bool = False  # the reader checked nothing of its own rule past the failure: what follows is unknown
    unless: frozenset[str] = frozenset()  # items whose bug may have made the failure too: an owner that passed is
    # not charged when these, failed, are worth at least its points (a catch-all's failure either rule may make)
    aside: bool = False  # met on the way, it stopped nothing of the reader's: never the reason it was not run

    @property
    def named(self) -> bool:
        """Whether it names its owners outright, so that an owner that passed can take the failure."""
        return self.sure and ANY_OTHER not in self.owners


def strict(owners: Iterable[str], failure: Seen) -> Excuse:
    """An excuse that holds only when every owner is graded here and did not pass (what the item saw may be
    its own rule's failure)."""
    return Excuse(frozenset(owners), failure, absent_holds=False, sure=False)


def joined(first: Excuse, then: Excuse | None) -> Excuse:
    """One excuse for the failures of two (the first one's is what the item says when it must)."""
    if then is None:
        return first
    return Excuse(first.owners | then.owners, first.failure, first.absent_holds and then.absent_holds,
                  first.sure and then.sure, first.stopped or then.stopped)


@dataclass(frozen=True)
class Verdict:
    """How settling changed one item: it now fails with `failure`, its own (reader None) or charged to it by
    the item `reader` whose programs found it."""

    failure: Seen
    reader: str | None = None

    @property
    def message(self) -> str:
        return self.failure.said_by_reader() if self.reader is None else self.failure.said_by_owner(self.reader)


def settle(status: Mapping[str, str], excuses: Mapping[str, Sequence[Excuse]],
           catch_all: Iterable[str] = (), points: Mapping[str, float] | None = None) -> dict[str, Verdict]:
    """The items whose verdict settling changes, each now failed: `status` is every graded item's status as
    it ran (in rubric order), `excuses` each excused item's excuses, in the order it met their failures (a failed
    item's: the items its failure is charged to as well); `points` each item's (an `unless` weighs them)."""
    spared, worth = frozenset(catch_all), points or {}
    charged: dict[str, Verdict] = {}
    for item in status:
        for excuse in excuses.get(item, ()):
            if excuse.named and item not in excuse.owners:
                for owner in sorted(excuse.owners):
                    if status.get(owner) == PASSED and not _explained(excuse, owner, status, worth):
                        charged.setdefault(owner, Verdict(excuse.failure, item))
    settled = {item: "failed" if item in charged else state for item, state in status.items()}

    verdicts = dict(charged)
    for item in status:
        if item in charged or status[item] == "failed":
            continue  # a failed item's own failure stands
        broken = next((e for e in excuses.get(item, ()) if not _holds(item, e, settled, spared, worth)), None)
        if broken is not None:
            verdicts[item] = Verdict(broken.failure)
            continue
    return verdicts


def _holds(item: str, excuse: Excuse, status: Mapping[str, str], spared: frozenset[str],
           points: Mapping[str, float]) -> bool:
    if item in excuse.owners:
        return False  # it names itself
    if ANY_OTHER in excuse.owners:
        others = [o for o in status if o != item and o not in spared]
        if not others:
            return False  # there is no other item to pay
    else:
        others = [o for o in excuse.owners if o in status]
    if not excuse.absent_holds and any(o not in status for o in excuse.owners - {ANY_OTHER}):
        return False  # an owner it names is not graded here: the failure is this item's
    if ANY_OTHER in excuse.owners:
        return any(status[o] != PASSED for o in others)
    # each failure it read past costs its own item: one that passed, not charged as the `unless` items explain it
    return all(status[o] != PASSED or _explained(excuse, o, status, points) for o in others)


def _explained(excuse: Excuse, owner: str, status: Mapping[str, str], points: Mapping[str, float]) -> bool:
    """Whether items of `unless` that did not pass, worth at least the owner's points, may have made the failure."""
    others = [o for o in excuse.unless if o in status and status[o] != PASSED]
    return bool(others) and sum(points.get(o, 0) for o in others) >= points.get(owner, 0)
