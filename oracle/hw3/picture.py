"""A picture of the failing step: what the model expected and what the implementation showed right after
the failing call, in the same terms on both sides, and where each pool slot's value came from.

The pool's slots are classified by provenance: a slot nothing wrote since llm_init holds its magic number
("magic"); the model knows which slots an append wrote ("append") and which a copy-on-write copied
("cow"), by replaying the calls. On the implementation's side a slot that holds the value the model
expects takes the model's class, and any other value is "wrong". The HTML lives in picture_html.py.
"""

import struct
from dataclasses import dataclass, field

from oracle.hw3.exact import expected_table
from oracle.hw3.call import Call
from oracle.hw3.machine import Divergence
from oracle.hw3.model import Model
from oracle.hw3.observation import Observation
from oracle.hw3.pool import GUARD, magic, magic_slot
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, KV_SIZE

MAGIC, APPEND, COW, WRONG = "magic", "append", "cow", "wrong"
CLASS_WORDS = {MAGIC: "untouched magic", APPEND: "written by append", COW: "copied by CoW", WRONG: "wrongly changed"}

Table = tuple[tuple[int, ...] | None, ...]  # L1 slots: None for a NULL L2 pointer, else the L2 entries


@dataclass(frozen=True)
class Side:
    """One side of the picture (the model's or the implementation's), in the implementation's terms."""

    engine: bool  # a live engine
    total: int = 0
    free: int = 0
    ref_count: tuple[int, ...] = ()
    active: tuple[int, ...] = ()  # seq ids, head->next first
    list_error: str | None = None
    kv_count: dict[int, int] = field(default_factory=dict)  # seq_id -> kv_count (the first node with that id)
    tables: dict[int, Table] = field(default_factory=dict)  # seq_id -> block table
    pool: bytes | None = None
    guards_intact: bool = True
    heap: str | None = None  # the implementation's heap accounting, in words, where an adapter counts it
    read: bool = True  # False: the engine's objects were not read (a Python submission's: only its pool is its own)

    def slot(self, slot: int) -> int | None:
        """The int32 in a slot of the pool; None past its end."""
        if self.pool is None or (slot + 1) * KV_SIZE > len(self.pool):
            return None
        return struct.unpack_from("<i", self.pool, slot * KV_SIZE)[0]


@dataclass(frozen=True)
class Picture:
    """The failing step of one failed item, both sides of it, and the pool's provenance."""

    calls: tuple[Call, ...]
    step: int  # 1-based index of the failing call in `calls`
    problem: str  # what differs, one line
    rule: str  # the spec rule the difference breaks
    line: int  # the fuzz program's rule line that made the failing call (0: not a fuzz program)
    lenient: frozenset[str]  # aspects the item compared leniently (compare.ASPECTS); the picture is exact
    expected: Side
    actual: Side | None  # None: the implementation's state could not be read (it crashed, say)
    blocks: int  # whole blocks in the pool
    provenance: dict[int, str]  # slot -> APPEND or COW, for the slots the model wrote since llm_init
    written_now: frozenset[int]  # slots the failing call wrote, in the model

    def expected_class(self, slot: int) -> str:
        return self.provenance.get(slot, MAGIC)

    def actual_class(self, slot: int) -> str:
        """The model's class where the implementation holds the expected value; MAGIC where it left the
        slot untouched and should not have; else WRONG."""
        if self.actual is None or self.actual.slot(slot) == self.expected.slot(slot):
            return self.expected_class(slot)
        return MAGIC if self.actual.slot(slot) == magic(slot) else WRONG

    def slot_differs(self, slot: int) -> bool:
        """Whether the implementation's pool holds another value there (not compared when it has no pool)."""
        return self.actual is not None and self.actual.pool is not None and self.actual.slot(slot) != self.expected.slot(slot)

    def block_differs(self, block: int) -> bool:
        return any(self.slot_differs(s) for s in range(block * KV_PER_BLOCK, (block + 1) * KV_PER_BLOCK))

    def tail_differs(self) -> bool:
        """Whether the bytes past the last whole block, or a guard zone, differ."""
        if self.actual is None or self.actual.pool is None or self.expected.pool is None:
            return False
        tail = self.blocks * BLOCK_SIZE
        return self.actual.pool[tail:] != self.expected.pool[tail:] or not self.actual.guards_intact


def picture_of(evidence: object) -> Picture | None:
    """The picture of a failure the hw3 checks or machine recorded (a checks.Finding or a machine.Divergence);
    None for anything else."""
    from oracle.hw3.checks import Finding, finding_from

    if isinstance(evidence, Divergence):
        evidence = finding_from(evidence)
    if not isinstance(evidence, Finding):
        return None
    provenance, written_now = _provenance(evidence.calls)
    model = evidence.model
    return Picture(
        calls=tuple(evidence.calls),
        step=evidence.step,
        problem=evidence.problem,
        rule=evidence.rule,
        line=evidence.program_step or 0,
        lenient=evidence.modulo,
        expected=expected_side(model),
        actual=None if evidence.seen is None else actual_side(evidence.seen),
        blocks=(model.pool_size or 0) // BLOCK_SIZE,
        provenance=provenance,
        written_now=written_now,
    )


def expected_side(model: Model) -> Side:
    if not model.live:
        return Side(engine=False, pool=None if model.pool_size is None else model.pool_image())
    return Side(
        engine=True,
        total=model.total,
        free=model.free_count(),
        ref_count=tuple(model.ref_count()),
        active=tuple(model.sequences),
        kv_count={seq_id: len(seq.values) for seq_id, seq in model.sequences.items()},
        tables={seq_id: expected_table(seq.blocks, seq.wild, seq.bare) for seq_id, seq in model.sequences.items()},
        pool=None if model.pool_size is None else model.pool_image(),
    )


def actual_side(seen: Observation) -> Side:
    guards = all(g == GUARD[: len(g)] for g in (seen.guard_before, seen.guard_after))
    heap = None
    if seen.heap is not None:
        heap = (f"{seen.heap.call_allocations} allocation(s) in the call; {seen.heap.live_blocks} block(s), "
                f"{seen.heap.live_bytes} bytes live")
    engine = seen.engine
    if engine is None or not seen.state_read:
        return Side(engine=engine is not None, pool=seen.pool, guards_intact=guards, heap=heap, read=seen.state_read)
    kv_count: dict[int, int] = {}
    tables: dict[int, Table] = {}
    for state in engine.sequences:
        kv_count.setdefault(state.seq_id, state.kv_count)
        tables.setdefault(state.seq_id, state.block_table)
    return Side(
        engine=True,
        total=engine.total_local_blocks,
        free=engine.free_local_blocks,
        ref_count=tuple(engine.ref_count),
        active=tuple(s.seq_id for s in engine.sequences),
        list_error=engine.list_error,
        kv_count=kv_count,
        tables=tables,
        pool=seen.pool,
        guards_intact=guards,
        heap=heap,
    )


class _TracingModel(Model):
    """The model, remembering which writes each call made, in order."""

    def write(self, slot: int, value: int) -> None:
        super().write(slot, value)
        self.writes.append(slot)


def _provenance(calls: list[Call]) -> tuple[dict[int, str], frozenset[int]]:
    """Replays the calls on a fresh model: which slots appends wrote and CoW copied since the last llm_init
    (an append's own record is its call's last write; the writes before it are the copy), and the slots
    the last call wrote."""
    model = _TracingModel()
    provenance: dict[int, str] = {}
    writes: list[int] = []
    for call in calls:
        model.writes = writes = []
        if call.api == "llm_init":
            model.llm_init(call.args[0], call.null)
            provenance.clear()
            continue
        getattr(model, call.api)(call.null, *call.args)
        for at, slot in enumerate(writes):
            provenance[slot] = APPEND if at == len(writes) - 1 else COW
    return provenance, frozenset(writes)


def magic_source(value: int, blocks: int) -> int | None:
    """The slot whose magic number `value` is, when it is one of this pool's; else None."""
    slot = magic_slot(value)
    return slot if slot < blocks * KV_PER_BLOCK else None
