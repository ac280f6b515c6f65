"""The prefix family's rubric checks: one directed program per rule of the lab (oracle/prefix/programs.py),
and the state machine against the model (fuzz).

A directed item fails on the first difference of its own rule (oracle/prefix/rules.py). Every other
difference goes to the item of its rule through the rules' table, settled once every item has run
(oracle/grading/settlement.py): that item, if it passed, fails with it; if the rubric does not grade that
item, the difference is the reader's. A free order another rule's (the model reads on in the
implementation's order) is left to its item and the program goes on. Any other difference stops the
program: the item passes with a note naming that step and the item whose rule it is, or, when none of its
own steps had run yet, is not run (it checked nothing of its own rule, so it earns nothing); a crash in a
step it does not judge, which no rule's item owns, fails the item once it has checked something.
"""

from contextlib import closing
from pathlib import Path
from typing import Any, Mapping

from oracle.grading.grader import Check, Excuse, NotApplicable, NotRun, Outcome, Seen
from oracle.grading.python_family import Submission as PrefixSubmission, fuzz_check
from oracle.difference import CRASH, Difference
from oracle.finding import Finding
from oracle.prefix.calls import listing
from oracle.prefix.programs import BY_ITEM, program_for
from oracle.program import Program
from oracle.prefix.replay import Found, Replay
from oracle.prefix.picture import state_tables
from oracle.prefix.rules import RULES, rule_of
from oracle.scene import Watch



def _adapter(sub: PrefixSubmission) -> Any:
    return sub.adapters()()


def not_applicable(item: str, program: Program, adapter: Any) -> str | None:
    """Why the item's rule is not the system's (its policy) or its calls are not the shape's, or None."""
    missing = program.ops - {"start", "admit", "free", "lookup"} - adapter.supports  # replay admits for a look-up
    if missing:
        return f"the {adapter.shape} shape has no {', '.join(sorted(missing))}"
    policy = adapter.policy
    reasons = {
        "null_block": None if policy.null_block else "its policy has no null block",
        "hit_cap": None if policy.hit_cap else "its policy has no hit cap",
        "reverse_order_free": None if policy.release_order == "reverse" else "its policy frees in forward order",
        "eviction": None if policy.evict_on_reuse else "its policy leaves index entries when a block is reused",
    }
    if item in ("free_queue", "reverse_order_free", "eviction") and not policy.exact:
        return "checked under the universal invariants only (@any): no exact order or index"
    if not policy.caching and item not in ("free_queue", "atomic_allocation"):
        return "its policy has no prefix cache"
    return reasons.get(item)


def finding(program: Program, found: Found, item: str) -> Finding | None:
    """The first difference a step found (or its failure, a judged step's own), and the rule it breaks; None
    when the step found nothing."""
    first = found.differences[0] if found.differences else None
    rule = rule_of(first, found.op) if first is not None else None
    if first is not None and (rule == item or not found.failure):
        return Finding(program.name, found.number, found.call, first, rule or "fuzz")
    if found.failure:
        return Finding(program.name, found.number, found.call, Difference(CRASH, "", None, found.failure),
                       item if found.judge else "fuzz")
    return None


def _details(replay: Replay) -> str:
    """The calls the pool received, in its own terms (oracle/prefix/calls.py), the last one marked."""
    calls = "\n".join(listing(replay.impl, replay.made, len(replay.made)))
    return f"The calls the pool received (request ids in admission order):\n{calls}"


def directed(item: str) -> Check:
    def run(sub: PrefixSubmission, options: Mapping[str, Any]) -> Outcome:
        adapter = _adapter(sub)
        program = program_for(item, adapter.supports)  # its own, or one without the fork the target lacks
        reason = not_applicable(item, program, adapter)
        if reason:
            adapter.close()
            raise NotApplicable(reason)
        ungraded = {other for other in BY_ITEM
                    if not_applicable(other, program_for(other, adapter.supports), adapter)}
        watch = Watch(state_tables)  # the failing call's state, for the HTML page (oracle/scene.py)
        replay, checked, past = Replay(program, watch.adapter(adapter)), False, ""
        watch.machine = replay
        with closing(replay.steps()) as steps:
            for found in steps:
                broke = finding(program, found, item)
                if broke is None:
                    checked = checked or found.judge
                    continue
                if broke.rule == item:
                    sub.evidence[item] = watch.scene(found.call)
                    return Outcome(False, broke.message, _details(replay))
                why = f"{broke.where}: {broke.problem} (that is item {broke.rule}'s to judge)"
                if broke.rule not in BY_ITEM:  # a crash in a step it does not judge: no rule's item owns it
                    if checked:
                        return Outcome(False, broke.message, _details(replay))
                    raise NotRun(f"checked nothing of its own rule: {why}")
                if found.taken_over:  # another rule's free order: read on in the implementation's, hiding
                    past = past or f"read past {why}"  # nothing (and a free order put back whole in the
                    checked = checked or found.judge  # opposite order may be either rule's: it charges no one)
                    continue
                # the program stops here, and what follows may hide a failure of its own rule: the difference
                # goes to its rule's item, or back to this one where the rubric or the policy grades no such item
                owner = item if broke.rule in ungraded else broke.rule
                stopped = Excuse(frozenset({owner}), Seen(broke.message, _details(replay)), absent_holds=False)
                if checked:
                    return Outcome(True, f"not checked past {why}", excuse=stopped)
                raise NotRun(f"checked nothing of its own rule: {why}", stopped)
        return Outcome(True, past)

    return Check(item, RULES[item], run)


def _rule_of_failure(failure: BaseException) -> str | None:
    """The rule a fuzz failure breaks: its difference's, by the operation of the call the pool received last."""
    difference = getattr(failure, "difference", None)
    made = getattr(failure, "made", None)  # the calls the pool received: the last is the failing one
    call = made[-1][0].op if made else str(getattr(failure, "call", "")).split("(")[0]
    return rule_of(difference, call) if difference is not None else None


CHECKS = {item: directed(item) for item in BY_ITEM}
CHECKS["fuzz"] = fuzz_check("prefix", RULES["fuzz"], _rule_of_failure)
DEFAULT_RUBRIC = Path(__file__).with_name("rubric.toml")
