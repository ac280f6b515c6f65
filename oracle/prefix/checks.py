"""The prefix family's rubric checks: one directed program per rule of the lab (oracle/prefix/programs.py),
and the state machine against the model (fuzz).

A directed item is judged by the one judge of every family (oracle/grading/judge.py) on the lab's facts: its
program's `*` steps exercise its rule, each difference breaks the rule of the rules' table (oracle/prefix/rules.py,
by the program's step: `in_program_terms`), a free, release or touch order is read past and the program goes on
(the model reads on in the implementation's order), and an item never reads past a difference its own rule may
have made (MAY_MAKE). A crash in a step it does not judge breaks no item's rule ("fuzz"). An item whose rule the
target's policy or shape lacks is not applicable (`not_applicable`); a difference of such an item's rule that
stops another item's program is that item's own.
"""

from dataclasses import replace
from pathlib import Path
from typing import Any, Generator

from oracle import checked
from oracle.grading.grader import NotApplicable
from oracle.grading.judge import Judge, Replayed, directed
from oracle.grading.python_family import Submission, fuzz_check
from oracle.difference import CRASH
from oracle.finding import Finding
from oracle.prefix.calls import listing, tokens_text
from oracle.prefix.driver import Driver
from oracle.prefix.programs import BY_ITEM, program_for
from oracle.program import Program, Step
from oracle.prefix.picture import state_tables
from oracle.prefix.rules import MAY_MAKE, RULES, rule_of
from oracle.scene import Watch

LOOKUP_RID = 1000  # a look-up on a shape without one admits a request numbered from here, and frees it
SHOWN_ORDER = ("free order", "release order")  # the fuzz's, read in the queue the pool shows: it charges no one


def alone(adapter: Any) -> None:
    """Ends a served pool's process (none in this process: nothing to end): its next call starts a fresh one, so
    every directed program runs on the first pool its process makes, whatever ran before it
    (tests/hostile_review6/fresh_pool_correct.py)."""
    end = getattr(adapter, "end_process", None)
    if end is not None:
        end()


def describe(step: Step, rid: int, lookup: bool = True) -> str:
    """A program's step in words (`rid`: the id the next admission gets)."""
    if step.op == "start":
        blocks, block_size = step.args
        return f"KVCacheManager(block_size={block_size}, num_blocks={blocks})"
    if step.op == "lookup" and not lookup:
        return f"admit(req {LOOKUP_RID + rid}, tokens {tokens_text(step.args)}) and free it (a look-up)"
    if step.op == "admit":
        return f"admit(req {rid}, tokens {tokens_text(step.args)})"
    if step.op == "lookup":
        return f"get_computed_blocks(tokens {tokens_text(step.args)})"
    if step.op == "fork":
        return f"fork_block(req {step.args[0]} block_table[{step.args[1]}])"
    if step.op == "append":
        return f"append(req {step.args[0]}, token {step.args[1]})"
    return f"free(req {step.args[0]})"


def _lookup(driver: Driver, *tokens: int) -> None:
    """A look-up; on a shape without one, the tokens admitted as a request of their own, then freed."""
    if "lookup" in driver.impl.supports:
        return driver.lookup(list(tokens))
    rid = LOOKUP_RID + driver.next_rid
    if driver.admit(list(tokens), rid=rid) is not None:
        driver.free(rid)


# each operation of a program: what it makes the driver do
OPERATIONS = {"start": Driver.start, "admit": lambda driver, *tokens: driver.admit(list(tokens)), "lookup": _lookup,
              "free": Driver.free, "fork": Driver.fork, "append": Driver.append}


def not_applicable(item: str, program: Program, adapter: Any) -> str | None:
    """Why the item's rule is not the system's (its policy) or its calls are not the shape's, or None."""
    missing = program.ops - {"start", "admit", "free", "lookup"} - adapter.supports  # a look-up is admitted
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


def in_program_terms(program: Program, found: Finding, item: str, lookup: bool) -> Finding:
    """A finding of the core's replay in the program's words (`describe`), and the rule it breaks by the program's
    step (a look-up made as an admission is an admission's, its free too); a crash breaks no rule's: it is the
    item's when the step is judged, else "fuzz"."""
    step = program.steps[found.step - 1]
    op = "admit" if step.op == "lookup" and not lookup else step.op
    rid = sum(earlier.op == "admit" for earlier in program.steps[:found.step - 1])  # the next admission's id
    rule = (item if step.judge else "fuzz") if found.difference.aspect == CRASH else \
        rule_of(found.difference, op) or "fuzz"
    return replace(found, call=describe(step, rid, lookup), rule=rule, past=())


def _details(adapter: Any, made: tuple) -> str:
    """The calls the pool received, in its own terms (oracle/prefix/calls.py), the last one marked."""
    calls = "\n".join(listing(adapter, list(made), len(made)))
    return f"The calls the pool received (request ids in admission order):\n{calls}"


# the shared judge (oracle/grading/judge.py) with the lab's facts: a program's `*` steps judge its rule; the model takes
# over the pool's order past a free, release or touch order (taken_order.py) and the program goes on checking
JUDGE = Judge(lambda _, step: step.judge, frozenset(BY_ITEM), MAY_MAKE, goes_on=True)


def replays(item: str, sub: Submission) -> Generator[Replayed, None, None]:
    """The item's program replayed on a pool in a fresh process, for the judge; NotApplicable where the pool's
    policy or shape has no such rule."""
    adapter = sub.adapters()()
    program = program_for(item, adapter.supports)  # its own, or one without the fork the target lacks
    reason = not_applicable(item, program, adapter)
    if reason:
        adapter.close()
        raise NotApplicable(reason)
    ungraded = frozenset(other for other in BY_ITEM
                         if not_applicable(other, program_for(other, adapter.supports), adapter))
    watch = Watch(state_tables)  # the failing call's state, for the HTML page (oracle/scene.py)
    alone(adapter)  # its program starts in a fresh process
    driver = Driver(watch.adapter(adapter), follow=False, by_takes=True)  # a free's order: by its own takes
    watch.machine = driver
    lookup = "lookup" in adapter.supports

    def seen(broke: Finding) -> None:  # its own rule's failing call, pictured
        sub.evidence[item] = watch.scene(broke.call)

    try:
        found = checked.replay(program, driver, OPERATIONS, [], item, close=False)
        # the calls listed through the adapter itself: a listing is no call whose state the picture shows
        yield Replayed(program, found, lambda finding: _details(adapter, finding.made),
                       lambda finding: in_program_terms(program, finding, item, lookup), ungraded, seen)
    finally:
        driver.impl.close()


def _aspect(failure: BaseException) -> str:
    return getattr(getattr(failure, "difference", None), "aspect", "")


CHECKS = {item: directed(item, RULES[item], JUDGE, replays) for item in BY_ITEM}
# the rule: the divergence's (driver.py); its item fails too where it passed, but for a free or release order (the fuzz
# reads the order of the queue the pool shows, by one shape: either of two rules may make it, it charges no one; a
# directed item's reading past one, named by the program's own takes (taken_order.py), charges its rule's item). A
# touch order (a call's hits on free blocks explain the blocks it took and the queue shown after it, which before the
# call was the model's) charges touch's item, unless free_queue's, whose bug may make one too, failed
CHECKS["fuzz"] = fuzz_check("prefix", RULES["fuzz"], sure=lambda failure: _aspect(failure) not in SHOWN_ORDER,
                            also=lambda failure: MAY_MAKE.get(_aspect(failure), frozenset()))
DEFAULT_RUBRIC = Path(__file__).with_name("rubric.toml")
