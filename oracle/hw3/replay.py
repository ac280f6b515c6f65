"""Fixed call programs (oracle/program.py; the HW3 items call them scenarios) run through an implementation and
the model together (run.py), and judged for a directed item: a Finding (oracle/finding.py, with what a picture of it
needs) says where a replay first broke a rule the check owns.

A directed check owns some rules (rules.py). After each call every difference is listed; a difference that
was already there before the call is not the call's. The first new difference of an owned rule is the finding.
A new difference of another rule is not: the model takes over the implementation's state (resync.py), so the
next calls are judged by what each of them changes, and the first such difference of the program is handed to
the one judge (oracle/grading/judge.py) as read past (the finding's `past`, or the finding itself, `followed`,
when the program found nothing of its own rule): what follows it in that program may be its consequence. Where
the model cannot take the state over, the differences it leaves are carried, and only new ones count. A crash or hang after a structural difference of another rule
in the same program is read past like it. A create or append that left a block unmapped gets a second
opinion (fresh_pool.py): if its search for a free block failed, the difference is first fit's."""

import dataclasses
from dataclasses import dataclass
from typing import Callable

from oracle import finding
from oracle.difference import Difference
from oracle.hw3.adapters import Adapter
from oracle.hw3.c.stray import named
from oracle.hw3.difference import (
    BLOCK_ID, CALL_ALLOCATIONS, FACTS, KV_COUNT, LEAK, LIST_BROKEN, LIST_IDS, LIST_ORDER, MAPPING, REF_COUNT, RETURN,
    STATE_CHANGE, TABLE_SHAPE,
)
from oracle.hw3.call import Call, shown
from oracle.hw3.model import Model
from oracle.hw3.observation import Observation
from oracle.hw3.resync import TrackedModel
from oracle.hw3.rules import STRAY_WRITE, Effects, fails, rule_of, rules_of
from oracle.hw3.run import Ran, run
from oracle.hw3.spec import L1_PT_SIZE
from oracle.program import Program


@dataclass(kw_only=True)
class Finding(finding.Finding):
    """Where a replay first went wrong, with what its picture and listing show."""

    calls: list[Call]
    model: Model
    output: str = ""  # what the submission printed
    seen: Observation | None = None  # the implementation's state after the call, when it could be read
    modulo: frozenset[str] = frozenset()  # the aspects the comparison was lenient on
    effects: Effects | None = None  # what the call did to the implementation's state, when known


def replay(
    adapter: Adapter,
    scenario: Program,
    modulo: frozenset[str] = frozenset(),
    owns: Callable[[str], bool] | None = None,
    checked: list[Call] | None = None,
    fresh: Callable[[], Adapter] | None = None,
    refuses_alone: Callable[[Call, Callable[[], Adapter]], bool] | None = None,
) -> Finding | None:
    """Runs a scenario through the adapter and the model (run.py), comparing after every call (leniently on the
    aspects in `modulo`); the first difference of a rule `owns` accepts (every rule when None). Given `checked`
    (with `owns`), it reads past differences of other rules (the model re-synchronised; a crash or hang, or a state
    the model cannot take over, ends the program), collects in `checked` the calls it compared that could have
    shown a bug of a rule `owns` accepts, and hands the judge the first difference it read past: as the finding's
    `past`, or as the finding itself (`followed`) when none of an owned rule came. `fresh` opens another adapter on the implementation, for a
    second opinion on a create or append that left a block unmapped (fresh_pool.py); `refuses_alone` says whose
    rule a refusal is where the free count is not read (run.py, refusal_rule.py)."""
    model, found, passed_over = TrackedModel(), [], []

    def finding(ran: Ran, difference: Difference) -> Finding:
        output = _printed(adapter) if ran.printed is None else ran.printed  # up to its step
        if ran.return_only:
            return Finding(scenario.name, ran.number, ran.call, difference, rule_of(difference, ran.call), calls=ran.calls,
                           model=model, output=output, modulo=modulo)
        return Finding(scenario.name, ran.number, ran.call, difference, rule_of(difference, ran.call, ran.effects),
                       calls=ran.calls, model=model, output=output, seen=ran.seen, modulo=modulo,
                       effects=ran.effects)

    def judge(ran: Ran) -> bool:
        if ran.return_only:  # a NULL-engine call after a state that could not be read: its return value alone
            if checked is not None and not ran.found and _speaks_for(ran.call, owns, (RETURN,), ran.walk):
                checked.append(ran.call)
            mine = next((d for d in ran.found if owns is None or owns(rule_of(d, ran.call))), None)
            if mine:
                found.append(finding(ran, mine))
            return mine is not None
        if not _aftermath(ran.call, ran.stopped, passed_over if checked is not None else None):
            mine = next(((d, rule) for d in ran.found for rule in rules_of(d, ran.call, ran.effects)
                         if owns is None or owns(rule)), None)
            if mine:
                found.append(dataclasses.replace(finding(ran, mine[0]), rule=mine[1]))
                return True
        if checked is not None and ran.seen is not None and _speaks_for(ran.call, owns, _compared(ran.found, modulo), ran.walk):
            checked.append(ran.call)
        if ran.found and checked is not None:
            passed_over.append(finding(ran, ran.found[0]))
        return False

    run(scenario, named(adapter, scenario.name), model, modulo, fresh, judge, refuses_alone)  # each step one call
    if found:
        return dataclasses.replace(found[0], past=tuple(passed_over[:1]))
    return dataclasses.replace(passed_over[0], followed=True) if passed_over else None


# The differences that can leave memory a later call trips on: a table, a mapping, a count of references or
# records, the list's links. A wrong order, free count, block choice or pool byte cannot make a call crash.
_STRUCTURAL = frozenset({TABLE_SHAPE, MAPPING, REF_COUNT, KV_COUNT, LIST_BROKEN, LIST_IDS})


def _aftermath(call: Call, stopped: bool, passed_over: "list[Finding] | None") -> bool:
    """Whether a call that crashed or hung (`stopped`) may be showing another rule's bug: the first difference
    read past in this program (`passed_over`; None: nothing is read past) was a structural one (a fork that shared
    its parent's L2 table, which llm_destroy then frees twice). A NULL-engine call reads no state: its crash is its
    own."""
    if not stopped or call.null or not passed_over:
        return False
    return passed_over[0].difference.aspect in _STRUCTURAL


def _compared(found: list[Difference], modulo: frozenset[str]) -> tuple[str, ...]:
    """The aspects a call's comparison judged: the return value alone when it was wrong, else every fact but
    those compared leniently."""
    if any(d.aspect == RETURN for d in found):
        return (RETURN,)
    lenient = {BLOCK_ID} if "block_ids" in modulo else set()
    lenient |= {LIST_ORDER} if "list_order" in modulo else set()
    return tuple(aspect for aspect in FACTS if aspect not in lenient)


_A_SKIPPED_SLOT = Effects(frozenset(), frozenset(), skipped=frozenset({L1_PT_SIZE - 1}))


def _speaks_for(call: Call, owns: Callable[[str], bool] | None, compared: tuple[str, ...], walk: bool = False) -> bool:
    """Whether a difference in one of the `compared` aspects, right after `call`, would break a rule `owns`
    accepts (a table lookup: rule_of on each aspect, for the call's own sequence and another one; `walk`: the
    call walks a table of two L1 slots or more, so it could also skip one)."""
    if owns is None:
        return True
    others = (None, (call.args[0] if call.args else 0) + 1)
    if call.api != "llm_destroy":
        compared = tuple(aspect for aspect in compared if aspect != LEAK)
    if not fails(call.api, call.expected):
        compared = tuple(aspect for aspect in compared if aspect not in (CALL_ALLOCATIONS, STATE_CHANGE))
    walks = (None, _A_SKIPPED_SLOT) if walk else (None,)  # a free or fork of 2 L1 slots can show an L1 loop's bug
    walks += (STRAY_WRITE,) if call.api == "append_kv" else ()  # an append can write slots it must not
    return any(owns(rule_of(Difference(aspect, "", None, None, seq=seq), call, effects))
               for aspect in compared for seq in others for effects in walks)


def _printed(adapter: Adapter) -> str:
    return getattr(adapter, "output", "")


def listing(calls: list[Call], failed_at: int) -> str:
    lines = []
    for number, call in enumerate(calls, 1):
        mark = "   <-- differs here" if number == failed_at else ""
        said = "expected" if call.judged else "(what it returned: not judged, the model having lost the state)"
        lines.append(f"{number:>3}  {call} -> {shown(call.api, call.expected)} {said}{mark}")
    return "\n".join(lines)
