"""HW3's state as tables, for the page of a failure (drawn by the core: oracle/tables.py, oracle/page_html.py):
the engine's counters, the active list, the ref_count array, each sequence's L1/L2 block table and the pool,
block by block, each slot's provenance as its kind.

Provenance: a slot nothing wrote since llm_init holds its magic number ("magic"); the model knows which slots
an append wrote ("append") and which a copy-on-write copied ("cow"), by replaying the calls. On the
implementation's side a slot that holds the value the model expects takes the model's kind, and any other
value is "wrong" (its own magic number: "magic"). `state_tables` draws both sides; `picture` makes the failing
step the checks recorded (a Finding or a machine Divergence, with the model and the implementation's observation)
a Scene (oracle/scene.py) with the calls listed and the model's state before the call: nothing is run again but
the model.
"""

from typing import Any

from oracle.hw3.call import Call, shown
from oracle.hw3.difference import CALL_ALLOCATIONS, LEAK
from oracle.hw3.exact import expected_table
from oracle.hw3.model import Model
from oracle.hw3.observation import WILD, Observation
from oracle.hw3.pool import GUARD, magic, magic_slot
from oracle.hw3.rules import fails
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, KV_SIZE, L2_PT_SIZE, UNMAPPED
from oracle.scene import Scene, Sides
from oracle.tables import Cell, Kind, State, Table

MAGIC, APPEND = Kind("magic", "untouched magic", "muted", "·"), Kind("append", "written by append", "blue")
COW, WRONG = Kind("cow", "copied by CoW", "orange", "b3"), Kind("wrong", "wrongly changed", "red", "9")
ROW = 16  # ref counts a row
_LENIENT = {"block_ids": "physical block ids up to a renaming", "list_order": "the active list as a set of ids"}


def _slot(pool: bytes | None, slot: int) -> int | None:
    """The int32 in a slot of a pool; None past its end."""
    if pool is None or (slot + 1) * KV_SIZE > len(pool):
        return None
    return int.from_bytes(pool[slot * KV_SIZE:(slot + 1) * KV_SIZE], "little", signed=True)


def short(value: int, slot: int, blocks: int) -> str:
    """A slot's value in a few characters: "·" for its own magic number, "b7" for block 7's (a copy of the same
    slot of block 7; "b7.3" for its slot 3), else the number, shortened ("2.1G")."""
    source = magic_slot(value)
    if source == slot:
        return "·"
    if source < blocks * KV_PER_BLOCK:
        block, offset = divmod(source, KV_PER_BLOCK)
        return f"b{block}" if offset == slot % KV_PER_BLOCK else f"b{block}.{offset}"
    for limit, suffix in ((10**9, "G"), (10**6, "M"), (10**5, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}{suffix}" if abs(value) < 10 * limit else f"{value // limit}{suffix}"
    return str(value)


def _pool(pool: bytes, expected: bytes, provenance: dict[int, str], blocks: int, mine: bool) -> Table:
    """The pool block by block; `mine`: the implementation's side, its kinds judged against `expected`."""
    rows = {}
    for block in range(blocks):
        cells = []
        for slot in range(block * KV_PER_BLOCK, (block + 1) * KV_PER_BLOCK):
            value, wanted = _slot(pool, slot), _slot(expected, slot)
            kind = provenance.get(slot, MAGIC.name)
            if mine and value != wanted:
                kind = MAGIC.name if value == magic(slot) else WRONG.name
            words = next(k.words for k in (MAGIC, APPEND, COW, WRONG) if k.name == kind)
            title = f"block {block} slot {slot % KV_PER_BLOCK} (byte {slot * KV_SIZE}): {value} ({words})"
            cells.append(Cell(value, title + (f"; expected {wanted}" if value != wanted else ""), kind,
                              short(value, slot, blocks)))
        rows[f"block {block}"] = tuple(cells)
    return Table("Pool", rows, "each block's 16 slots; · a slot's own magic number, b3 the same slot's of block 3 "
                 "(copied), b3.5 slot 5's of block 3; long numbers shortened (hover: the value)",
                 kinds=(MAGIC, APPEND, COW, WRONG))


def _span(start: int, stop: int) -> str:
    return f"{start}" if stop - start == 1 else f"{start}–{stop - 1}"


def _l1_row(entries: tuple | None, i: int) -> tuple:
    if entries is None:
        return ("NULL",)
    if entries == WILD:
        return ("a wild pointer (unreadable)",)
    return tuple(Cell(v, f"block_table[{i}][{j}]: logical block {i * L2_PT_SIZE + j}",
                      shown="·" if v == UNMAPPED else None) for j, v in enumerate(entries))


def _objects(live: bool, total: int, free: int, refs: tuple, active: tuple, counts: dict, tables: dict,
             list_error: str | None = None) -> State:
    """The engine's counters, the active list, ref_count and each sequence's table."""
    engine = {"engine": ("live",), "total_local_blocks": (total,), "free_local_blocks": (free,)} if live else {
        "engine": ("NULL (no engine)",)}
    listed = {"head→next": tuple(f"seq {seq_id}" for seq_id in active)} if live else {}
    if list_error:
        listed["list broken"] = (list_error,)
    ref_rows = {_span(start, min(start + ROW, len(refs))): tuple(Cell(v, f"ref_count[{start + k}]") for k, v in
                                                                    enumerate(refs[start:start + ROW]))
                for start in range(0, len(refs), ROW)}
    seqs = tuple(Table(f"Block table of seq {seq_id}", {"kv_count": (counts.get(seq_id),)} | {
        f"L1[{i}]": _l1_row(entries, i) for i, entries in enumerate(table)},
        "L1 rows × L2 columns; · is -1 (unmapped)") for seq_id, table in tables.items())
    return (Table("Engine", engine), Table("Active list", listed, "head→next first"),
            Table("ref_count", ref_rows, "16 blocks a row")) + seqs


def expected_state(model: Model, provenance: dict[int, str]) -> State:
    """The model's state as tables."""
    seqs = model.sequences if model.live else {}
    objects = _objects(model.live, model.total, model.free_count() if model.live else 0,
                       tuple(model.ref_count()) if model.live else (), tuple(seqs),
                       {seq_id: len(seq.values) for seq_id, seq in seqs.items()},
                       {seq_id: expected_table(seq.blocks, seq.wild, seq.bare) for seq_id, seq in seqs.items()})
    if model.pool_size is None:
        return objects + (Table("Pool", {}, "no pool (llm_init was given NULL)"),)
    image = model.pool_image()
    return objects + (_pool(image, image, provenance, model.pool_size // BLOCK_SIZE, False),)


def actual_state(seen: Observation, model: Model, provenance: dict[int, str], heap_judged: bool) -> State:
    """The implementation's state as tables: only its pool where its objects were not read (a Python submission's),
    its pool's edges where it overwrote them, and its heap where the heap is what the item judged."""
    engine, objects = seen.engine, ()
    if engine is None and seen.state_read:
        objects = _objects(False, 0, 0, (), (), {}, {})
    elif engine is not None and seen.state_read:
        counts, tables = {}, {}
        for sequence in engine.sequences:
            counts.setdefault(sequence.seq_id, sequence.kv_count)
            tables.setdefault(sequence.seq_id, sequence.block_table)
        objects = _objects(True, engine.total_local_blocks, engine.free_local_blocks, tuple(engine.ref_count),
                           tuple(s.seq_id for s in engine.sequences), counts, tables, engine.list_error)
    if heap_judged and seen.heap is not None:  # a row the model's side lacks: marked
        heap = (f"{seen.heap.call_allocations} allocation(s) in the call; {seen.heap.live_blocks} block(s), "
                f"{seen.heap.live_bytes} bytes live",)
        objects = (Table("Engine", (objects[0].rows if objects else {}) | {"heap": heap}),) + objects[1:]
    blocks = (model.pool_size or 0) // BLOCK_SIZE
    if seen.pool is None or model.pool_size is None:
        return objects + ((Table("Pool", {}),) if seen.pool is None and model.pool_size is None else ())
    return objects + (_pool(seen.pool, model.pool_image(), provenance, blocks, True),)


def _edges(model: Model, seen: Observation | None) -> tuple[Table, Table] | None:
    """The guard zones either side of the pool and the bytes past its last block, where the implementation
    overwrote them: a table on each side."""
    if seen is None or seen.pool is None or model.pool_size is None:
        return None
    tail = (model.pool_size // BLOCK_SIZE) * BLOCK_SIZE
    guards = all(g == GUARD[:len(g)] for g in (seen.guard_before, seen.guard_after))
    rows = {} if guards else {"guard zones": (("intact",), ("overwritten",))}
    if seen.pool[tail:] != model.pool_image()[tail:]:
        rows["bytes past the last block"] = (("as llm_init left them",), ("overwritten",))
    if not rows:
        return None
    return (Table("Pool edges", {k: v[0] for k, v in rows.items()}),
            Table("Pool edges", {k: v[1] for k, v in rows.items()}))


class _Traced(Model):
    """The model, recording the slots each call writes, in order."""

    writes: list[int]

    def write(self, slot: int, value: int) -> None:
        super().write(slot, value)
        self.writes.append(slot)


def _replayed(calls: list[Call]) -> tuple[Model, dict[int, str]]:
    """The calls replayed on a fresh model: the model after them, and which slots appends wrote and CoW copied
    since the last llm_init (an append's record is its call's last write; the writes before it are the copy)."""
    model, provenance = _Traced(), {}
    for call in calls:
        model.writes = []
        if call.api == "llm_init":
            model.llm_init(call.args[0], call.null)
            provenance.clear()
            continue
        getattr(model, call.api)(call.null, *call.args)
        for at, slot in enumerate(model.writes):
            provenance[slot] = APPEND.name if at == len(model.writes) - 1 else COW.name
    return model, provenance


def state_tables(model: Model, seen: Observation | None, provenance: dict[int, str],
                 heap_judged: bool = False) -> Sides:
    """The state as tables, the model's (expected) beside the implementation's as observed (actual; None: it
    could not be read): the implementation's heap drawn where the heap is what was judged (a row the model's side
    lacks), a sequence one side lacks as an empty table there, the pool's edges where they were overwritten."""
    expected = expected_state(model, provenance)
    actual = None if seen is None else actual_state(seen, model, provenance, heap_judged)
    if actual is not None and seen is not None and seen.state_read:
        expected, actual = _padded(expected, actual), _padded(actual, expected)
    edges = _edges(model, seen)
    if edges is not None and actual is not None:
        expected, actual = expected + edges[:1], actual + edges[1:]
    return expected, actual


def picture(evidence: Any) -> Scene | None:
    """The failing step the hw3 checks or machine recorded (a Finding or a machine Divergence) as a Scene; None
    for anything else. The state before the call is the model's alone (the calls replayed), drawn where that
    replay reaches the state the checks expected."""
    from oracle.hw3.checks import Finding, finding_from
    from oracle.hw3.machine import Divergence

    if isinstance(evidence, Divergence):
        evidence = finding_from(evidence)
    if not isinstance(evidence, Finding):
        return None
    made = list(evidence.calls[:evidence.step])
    model, seen = evidence.model, evidence.seen
    try:
        replayed, provenance = _replayed(made)
    except Exception:  # noqa: BLE001  (a call the model cannot replay: no provenance, no state before; no verdict)
        replayed, provenance = None, {}
    heap_judged = evidence.difference.aspect in (CALL_ALLOCATIONS, LEAK)
    before: Sides | None = None
    if replayed is not None and expected_state(replayed, provenance) == expected_state(model, provenance):
        before = (expected_state(*_replayed(made[:-1])), None)
    notes = []
    if evidence.modulo:
        notes.append(f"This item compared {' and '.join(_LENIENT[a] for a in sorted(evidence.modulo))}; the picture "
                     "compares everything exactly, so it can show differences the item did not count.")
    if seen is not None and not seen.state_read:
        notes.append("Your engine's objects are not read (a Python submission is graded on what its calls return "
                     "and on the pool): the engine, the list, ref_count and the tables show the expected state only; "
                     "the pool shows yours.")
    if seen is not None and seen.heap is not None and not heap_judged:
        notes.append(f"The implementation's heap after the call: {seen.heap.call_allocations} allocation(s) in the "
                     f"call; {seen.heap.live_blocks} block(s), {seen.heap.live_bytes} bytes live.")
    broken = ("the implementation's pool could not be read",) if seen is not None and seen.pool is None and \
        model.pool_size is not None else ()
    listed = tuple((str(call), _said(call)) for call in evidence.calls)
    return Scene(str(made[-1]) if made else "", evidence.program_step or 0,
                 state_tables(model, seen, provenance, heap_judged), before, evidence.rule, listed, evidence.step,
                 tuple(notes), broken)


def _padded(state: State, other: State) -> State:
    """`state` with an empty table for each sequence only `other` has: its rows are then marked as missing."""
    names = {table.name for table in state}
    return state + tuple(Table(t.name, {}, t.note) for t in other
                         if t.name.startswith("Block table") and t.name not in names)


def _said(call: Call) -> str:
    expected = shown(call.api, call.expected)
    if not call.judged:
        return f"{expected} returned (not judged: the model had lost the state)"
    return f"{expected} expected ({'fails' if fails(call.api, call.expected) else 'succeeds'})"
