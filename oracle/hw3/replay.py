"""Fixed call programs (oracle/program.py; the HW3 items call them scenarios) replayed through an implementation
and the model together, compared after every call; a Finding (oracle/finding.py, with what a picture of it
needs) says where a replay first broke a rule the check owns.

A directed check owns some rules (rules.py). After each call every difference is listed; a difference that
was already there before the call is not the call's. The first new difference of an owned rule fails the
check. A new difference of another rule does not: the model takes over the implementation's state
(resync.py), so the next calls are judged by what each of them changes, and the check says in one line what
it could not check and which item owns it. Where the model cannot take the state over, the differences it
leaves are carried, and only new ones count. A crash or hang after a structural difference of another rule
in the same program is read past like it. A create or append that left a block unmapped gets a second
opinion (fresh_pool.py): if its search for a free block failed, the difference is first fit's."""

import copy
import dataclasses
import struct
from dataclasses import dataclass
from typing import Callable

from oracle.hw3.adapters import Adapter
from oracle.hw3.compare import differences, state_changes
from oracle import finding
from oracle.difference import Difference
from oracle.hw3.steps import append, call_on, create, destroy, fork, free, init, null  # noqa: F401  (importable from here)
from oracle.program import Program, Step
from oracle.hw3.fresh_pool import refused_for_want_of_blocks, search_failed
from oracle.hw3.difference import (
    BLOCK_ID, CALL_ALLOCATIONS, FACTS, KV_COUNT, LEAK, LIST_BROKEN, LIST_IDS, LIST_ORDER, MAPPING, REF_COUNT, RETURN,
    STATE_CHANGE, TABLE_SHAPE, crash,
)
from oracle.hw3.machine import POINTER_CALLS, Call
from oracle.hw3.model import Model
from oracle.hw3.observation import UNREAD, WILD, EngineState, ImplementationFailure, Observation
from oracle.hw3.resync import ModelLost, TrackedModel, resync
from oracle.hw3.unread import filled
from oracle.hw3.rules import STRAY_WRITE, WALKS, Effects, fails, rule_of
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, KV_SIZE, L1_PT_SIZE, L2_PT_SIZE, UNMAPPED


Scenario = Program  # what the HW3 items call a call program


@dataclass(kw_only=True)
class Finding(finding.Finding):
    """Where a replay first went wrong, with what its picture and listing show."""

    calls: list[Call]
    model: Model
    output: str = ""  # what the submission printed
    seen: Observation | None = None  # the implementation's state after the call, when it could be read
    modulo: frozenset[str] = frozenset()  # the aspects the comparison was lenient on
    effects: Effects | None = None  # what the call did to the implementation's state, when known


@dataclass
class Reading:
    """What replays of a directed item met besides its own rule's differences."""

    passed_over: list[Finding] = dataclasses.field(default_factory=list)  # other rules' differences, read past
    checked: list[Call] = dataclasses.field(default_factory=list)  # calls that could have shown its rule's bug
    cut: list[Finding] = dataclasses.field(default_factory=list)  # what stopped a replay before its last call


def shown(api: str, value: bool | int) -> str:
    if api in POINTER_CALLS:
        return POINTER_CALLS[api] if value else "NULL"
    return str(value)


def replay(
    adapter: Adapter,
    scenario: Program,
    modulo: frozenset[str] = frozenset(),
    owns: Callable[[str], bool] | None = None,
    reading: "Reading | None" = None,
    fresh: Callable[[], Adapter] | None = None,
) -> Finding | None:
    """Runs a scenario through the adapter and the model, comparing after every call (leniently on the
    aspects in `modulo`); the first difference of a rule `owns` accepts (every rule when None). What else it
    met goes into `reading`: differences of other rules (read past, the model re-synchronised), the calls it
    checked for a rule `owns` accepts, and whether another rule's crash or hang (or a state the model cannot
    take over) stopped it before its last call. `fresh` opens another adapter on the implementation, for a
    second opinion on a create or append that left a block unmapped (fresh_pool.py)."""
    model, engine, calls = TrackedModel(), None, []
    before: Observation | None = None
    carried: set[str] = set()  # differences the model could not take over
    blind = False  # the model lost the counts and then a state it could not take over: it judges NULL-engine calls only
    unreadable = False  # a call returned, but its state could not be read: NULL-engine calls' returns judged only
    unread = False  # the engine's objects are not read (a Python submission's, unread.py): its calls' returns say
    made: list[Step] = []  # what they did; the calls since the last llm_init that did something, in the model
    for number, step in enumerate(scenario.steps, 1):
        was = copy.deepcopy(model) if unread else None  # the model before the call: what a failing call leaves
        null_engine = step.null if step.op == "llm_init" else step.null or engine is None
        mapped = model.mapped()
        walked = model.sequences.get(step.args[0]) if step.op in WALKS and not null_engine else None
        walk = walked is not None and len({i // L2_PT_SIZE for i, block in enumerate(walked.blocks) if block != UNMAPPED}) > 1
        # a free or fork of blocks in 2 L1 slots or more: one that skips a slot can show
        try:
            if step.op == "llm_init":
                blind, unreadable, expected = False, False, model.llm_init(step.args[0], step.null)
            elif (blind or unreadable) and not null_engine:
                raise ModelLost("the model could not take over the state the last call left")
            else:
                expected = getattr(model, step.op)(null_engine, *step.args)
        except ModelLost:
            if (model.lost or unreadable) and engine is not None and reading is not None and reading.passed_over:
                engine, made, seen = _unjudged(adapter, step, engine, calls, observe=not unreadable)
                seen = filled(seen, model)
                if seen is not None:  # the model takes over what it left, or carries what it cannot
                    blind = resync(model, seen) is not None
                    carried = {str(d) for d in differences(model, seen, False, modulo=modulo)} if blind else set()
                    before = seen
                    continue
                if made and unreadable:
                    continue
            if reading is not None and reading.passed_over:
                reading.cut.append(reading.passed_over[-1])
            return None
        call = Call(step.op, step.args, null_engine, expected.returned)
        calls.append(call)
        made = [step] if step.op == "llm_init" else made + ([step] if not null_engine and not fails(step.op, expected.returned) else [])
        found: list[Difference] = []
        seen, failed, returned_normally = None, False, False
        try:
            engine, returned = call_on(adapter, step, engine)
            returned_normally = True
            got = returned is not None if step.op in POINTER_CALLS else returned
            if got != expected.returned:
                found.append(Difference(RETURN, "return value", shown(step.op, expected.returned), shown(step.op, got)))
            failed = fails(step.op, expected.returned) and got == expected.returned  # Constraint 2 binds a failing call
            if unreadable:  # a NULL-engine call: its return value alone can be judged
                if reading is not None and not found and _speaks_for(call, owns, (RETURN,), walk):
                    reading.checked.append(call)
                mine = next((d for d in found if owns is None or owns(rule_of(d, call))), None)
                if mine:
                    return Finding(scenario.name, number, call, mine, rule_of(mine, call), calls=list(calls), model=model,
                                   output=_printed(adapter), modulo=modulo)
                continue
            observed = adapter.observe(engine)
            unread, seen = observed.engine is UNREAD, filled(observed, model)
            if not found:  # a wrong return value is the call's rule; the state it leaves follows from it
                found += [d for d in differences(model, seen, failed, modulo=modulo) if str(d) not in carried]
            if failed and not found and before is not None and step.op != "llm_init":
                found += state_changes(before, seen)
        except ImplementationFailure as failure:
            found.append(crash(failure))
        effects = _effects(call, before, seen, frozenset(model.mapped() - mapped), (was, model) if unread else None)
        if effects is not None and any(d.aspect != LIST_ORDER for d in found):
            effects = dataclasses.replace(effects, reordered_only=False)
        if (effects is not None and fresh is not None and step.op in ("create_sequence", "append_kv")
                and step.args[0] in model.sequences
                and search_failed(fresh, found, scenario.steps[:number], len(model.sequences[step.args[0]].values),
                                  "cow_copy" in expected.events, len(effects.picked or ()), len(effects.taken))):
            effects = dataclasses.replace(effects, search_failed=True)
        if (effects is not None and fresh is not None and was is not None and effects.picked and found
                and found[0].aspect == RETURN and fails(step.op, got)
                and refused_for_want_of_blocks(fresh, made)):  # its free count unread
            effects = dataclasses.replace(effects, short=True)
        finding = lambda d, rule=None: Finding(  # noqa: E731
            scenario.name, number, call, d, rule or rule_of(d, call, effects), calls=list(calls), model=model,
            output=_printed(adapter), seen=seen, modulo=modulo, effects=effects)
        if not _aftermath(call, seen is None and not returned_normally, scenario.name, reading):
            mine = next((d for d in found if owns is None or owns(rule_of(d, call, effects))), None)
            if mine:
                return finding(mine)
        if reading is not None and seen is not None and _speaks_for(call, owns, _compared(found, modulo), walk):
            reading.checked.append(call)
        if not found:
            before = seen
            continue
        if reading is not None:
            reading.passed_over.append(finding(found[0]))
        if seen is None and returned_normally and reading is not None:  # its state cannot be read (another rule's
            unreadable, before = True, None  # bug): the model follows no further, NULL-engine calls are still judged
            continue
        if seen is None:  # it crashed: nothing further can be checked
            if reading is not None:
                reading.cut.append(reading.passed_over[-1])
            return None
        if was is not None and (found[0].aspect == RETURN or step.op == "append_kv"):  # an engine whose objects are
            unreadable, before = True, None  # not read: what it holds after a call that returned otherwise than the
            continue  # model's, or an append the pool shows astray, nothing says; the model follows no further
        if resync(model, seen) is None:
            carried = set()
        carried |= {str(d) for d in differences(model, seen, failed, modulo=modulo)}
        before = seen
    return None


# The differences that can leave memory a later call trips on: a table, a mapping, a count of references or
# records, the list's links. A wrong order, free count, block choice or pool byte cannot make a call crash.
_STRUCTURAL = frozenset({TABLE_SHAPE, MAPPING, REF_COUNT, KV_COUNT, LIST_BROKEN, LIST_IDS})


def _aftermath(call: Call, stopped: bool, program: str, reading: "Reading | None") -> bool:
    """Whether a call that crashed or hung (`stopped`) may be showing another rule's bug: the first difference
    read past in this program was a structural one (a fork that shared its parent's L2 table, which llm_destroy
    then frees twice). A NULL-engine call reads no state: its crash is its own."""
    if not stopped or call.null or reading is None:
        return False
    first = next((f for f in reading.passed_over if f.program == program), None)
    return first is not None and first.difference.aspect in _STRUCTURAL


def _unjudged(adapter: Adapter, step: Step, engine: object, calls: list[Call],
              observe: bool = True) -> tuple[object, bool, Observation | None]:
    """A call whose outcome depends on state the model has lost (a negative ref count, or a state that cannot be
    read, after another rule's bug): made, not judged, and listed. The engine handle, whether the call (and
    the observation) returned, and the state it left (None when it did not, or `observe` is False)."""
    try:
        engine, returned = call_on(adapter, step, engine)
        seen = adapter.observe(engine) if observe else None
    except ImplementationFailure:
        return engine, False, None
    got = returned is not None if step.op in POINTER_CALLS else returned
    calls.append(Call(step.op, step.args, False, got, judged=False))
    return engine, True, seen


def _effects(call: Call, before: Observation | None, seen: Observation | None, picked: frozenset[int],
             unread: tuple[Model | None, Model] | None = None) -> Effects | None:
    """What a call changed between two observations of the implementation (None when either is unknown), and
    `picked`, the blocks the model's call newly mapped. `unread`: the model before and after the call, when the
    engine's objects are not read (unread.py): where its append's record landed is then read from the pool."""
    if before is None or seen is None or before.engine is None or seen.engine is None:
        return None
    tables = {state.seq_id: state.block_table for state in before.engine.sequences}
    moved = frozenset(state.seq_id for state in seen.engine.sequences if tables.get(state.seq_id) != state.block_table)
    old, new = before.engine.ref_count, seen.engine.ref_count
    taken = frozenset(block for block in range(min(len(old), len(new))) if old[block] == 0 and new[block] > 0)
    skipped = _skipped(call, tables, before.engine, seen.engine) if not call.null and call.api in WALKS else frozenset()
    elsewhere = unread is not None and wrote_elsewhere(call, *unread, before, seen)
    return Effects(moved, taken, before.pool != seen.pool, picked, skipped=skipped, stray=stray_write(call, before, seen),
                   elsewhere=elsewhere)


def wrote_elsewhere(call: Call, was: Model | None, model: Model, before: Observation, seen: Observation) -> bool:
    """Whether an append wrote its record, at its offset, into another block than the one the model's append put
    it in (`model`, after the call) and the one its logical block mapped before the call (`was`: an append
    that wrote a shared block in place is Task 4's): a block of its choosing, first fit's, made by this append
    or by the create or fork that mapped it."""
    if call.api != "append_kv" or call.null or before.pool is None or seen.pool is None or len(before.pool) != len(seen.pool):
        return False
    seq = model.sequences.get(call.args[0])
    if seq is None or not seq.values:
        return False
    logical, offset = divmod(len(seq.values) - 1, KV_PER_BLOCK)
    old = was.sequences.get(call.args[0]) if was is not None else None
    mine = {seq.blocks[logical]} | ({old.blocks[logical]} if old is not None and logical < len(old.blocks) else set())
    record = struct.pack("<i", call.args[1])
    at = lambda block: (block * KV_PER_BLOCK + offset) * KV_SIZE  # noqa: E731
    written = [block for block in range(len(seen.pool) // BLOCK_SIZE)
               if seen.pool[at(block) : at(block) + KV_SIZE] == record != before.pool[at(block) : at(block) + KV_SIZE]]
    return bool(written) and not mine & set(written)


def stray_write(call: Call, before: Observation | None, seen: Observation | None) -> bool:
    """Whether an append wrote its record where its own table and kv_count put it, and other slots of that
    block too, which it did not copy there (a block it mapped fresh, or held already): slots written before
    their records arrive. Only when it wrote no other block (a second write elsewhere cannot relabel a
    Task 4 bug). False for any other call, or when either state is unknown."""
    if (call.api != "append_kv" or call.null or before is None or seen is None or before.engine is None
            or seen.engine is None):
        return False
    seq_id, value = call.args
    old = next((state for state in before.engine.sequences if state.seq_id == seq_id), None)
    new = next((state for state in seen.engine.sequences if state.seq_id == seq_id), None)
    if old is None or new is None or before.pool is None or seen.pool is None or len(before.pool) != len(seen.pool):
        return False
    logical, offset = divmod(old.kv_count, KV_PER_BLOCK)
    block, was = (_entry(state.block_table, logical) for state in (new, old))
    start = block * BLOCK_SIZE
    if block < 0 or start + BLOCK_SIZE > len(seen.pool) or was not in (UNMAPPED, block):
        return False  # no block, or a copy-on-write: the copy is Task 4's
    record = start + offset * KV_SIZE
    if seen.pool[record : record + KV_SIZE] != struct.pack("<i", value):
        return False
    if seen.pool[:start] != before.pool[:start] or seen.pool[start + BLOCK_SIZE :] != before.pool[start + BLOCK_SIZE :]:
        return False  # it wrote another block too: which write is astray, and which the append's, is Task 4's to say
    return (seen.pool[start:record] != before.pool[start:record]
            or seen.pool[record + KV_SIZE : start + BLOCK_SIZE] != before.pool[record + KV_SIZE : start + BLOCK_SIZE])


def _entry(table: tuple, logical: int) -> int:
    """The block a block table maps for a logical block; UNMAPPED when none (a NULL or wild L2 table)."""
    l1, l2 = divmod(logical, L2_PT_SIZE)
    row = table[l1] if l1 < len(table) else None
    return row[l2] if row is not None and row != WILD and l2 < len(row) else UNMAPPED


def _skipped(call: Call, tables: dict[int, tuple], before: EngineState, after: EngineState) -> frozenset[int]:
    """The L1 slots of the sequence a free (or the parent a fork) walks that the call left untouched while it
    handled every block of the others: a free that dropped no reference of a slot's blocks, a fork whose child
    has no table where the parent has one. Empty when the call handled no slot, or part of one, or left only
    the sequence's last block (a walk bounded by the records, not the L1 loop's doing)."""
    table = tables.get(call.args[0])
    if table is None:
        return frozenset()
    walked, skipped = set(), set()
    if call.api == "free_sequence":
        old, new = before.ref_count, after.ref_count
        for l1, l2 in enumerate(table):
            blocks = [block for block in (l2 if l2 and l2 != WILD else ()) if 0 <= block < min(len(old), len(new))]
            dropped = {new[block] < old[block] for block in blocks}
            if dropped == {True}:
                walked.add(l1)
            elif dropped == {False}:
                skipped.add(l1)
            elif dropped:
                return frozenset()
    else:
        child = next((state.block_table for state in after.sequences if state.seq_id == call.args[1]), None)
        if child is None:
            return frozenset()
        for l1, (l2, copy) in enumerate(zip(table, child)):
            if l2 is not None and l2 != WILD and any(block != UNMAPPED for block in l2):
                (walked if copy is not None else skipped).add(l1)
    left = [block for l1 in sorted(skipped) for block in table[l1] if block != UNMAPPED]
    last = next((block for l2 in reversed(table) if l2 and l2 != WILD for block in reversed(l2) if block != UNMAPPED), None)
    return frozenset() if not walked or left == [last] else frozenset(skipped)


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
