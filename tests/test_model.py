"""The oracle's model on its own: if the model is wrong, every comparison against it is wrong too.

Each test states a spec rule in the model's own terms (values and block lists, ref counts as the mappings counted, a
slot -> value memory defaulting to magic numbers) and the boundary events the machine's statistics count.
"""

import ast
import struct
import subprocess
import sys
from collections import Counter
from itertools import chain
from pathlib import Path

from hypothesis import given, settings, strategies as st

from oracle.hw3.model import NOT_NULL, NULL, Model
from oracle.hw3.pool import initial_pool, magic
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, MAX_KV

ROOT = Path(__file__).resolve().parent.parent
OK = False  # the `null_engine` argument: a live engine


def model(blocks: int = 8, extra: int = 0) -> Model:
    m = Model()
    assert m.llm_init(blocks * BLOCK_SIZE + extra).returned is NOT_NULL
    return m


def test_llm_init_total_rounds_down_and_refuses_null_or_small_pools():
    assert model(3, 63).total == 3
    m = Model()
    assert m.llm_init(63).returned is NULL and not m.live
    outcome = m.llm_init(4096, null_pool=True)
    assert outcome.returned is NULL and "init_refused" in outcome.events and m.pool_size is None
    assert "pool_over_256_blocks" in Model().llm_init(257 * BLOCK_SIZE).events


def test_ref_counts_are_derived_from_the_mappings():
    m = model()
    m.create_sequence(OK, 1, 2 * KV_PER_BLOCK)
    m.fork_sequence(OK, 1, 2)
    m.create_sequence(OK, 3, 1)
    assert m.ref_count() == [2, 2, 1, 0, 0, 0, 0, 0] and m.free_blocks() == 5
    m.free_sequence(OK, 1)
    assert m.ref_count() == [1, 1, 1, 0, 0, 0, 0, 0] and m.free_blocks() == 5
    m.free_sequence(OK, 2)
    assert m.ref_count()[:3] == [0, 0, 1] and m.free_blocks() == 7


CALLS = st.lists(st.tuples(st.sampled_from(["create_sequence", "fork_sequence", "append_kv", "free_sequence",
                                              "append_burst", "llm_destroy", "llm_init"]),
                           st.integers(0, 3), st.integers(0, 3), st.sampled_from([1, 15, 16, 17, 40, 300])),
                 max_size=40)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([1, 3, 8, 40]), CALLS)
def test_the_counted_mappings_are_the_mappings_recounted_after_every_call(blocks, calls):
    """`mappings` is counted call by call (a call costs what it changes): after every call it is what counting
    every sequence's blocks again gives, and ref_count, free_blocks and first_free read it as they would the
    recount."""
    m = model(blocks)
    for api, a, b, n in calls:
        if api == "create_sequence":
            m.create_sequence(OK, a, n)
        elif api == "fork_sequence":
            m.fork_sequence(OK, a, b)
        elif api in ("append_kv", "append_burst"):
            for value in range(1 if api == "append_kv" else n):
                m.append_kv(OK, a, value)
        elif api == "free_sequence":
            m.free_sequence(OK, a)
        elif api == "llm_destroy":
            m.llm_destroy(OK)
        else:
            m.llm_init(n * BLOCK_SIZE)
        recount = Counter(chain.from_iterable(seq.blocks for seq in m.sequences.values()))
        assert m.mappings == recount
        assert m.ref_count() == [recount[block] for block in range(m.total)]
        assert m.free_blocks() == m.total - len(recount)
        assert m.first_free(m.total) == [block for block in range(m.total) if block not in recount]


def test_first_fit_is_the_smallest_unmapped_block_id():
    m = model()
    m.create_sequence(OK, 1, 2 * KV_PER_BLOCK)  # 0, 1
    m.create_sequence(OK, 2, KV_PER_BLOCK)  # 2
    m.create_sequence(OK, 3, KV_PER_BLOCK)  # 3
    m.free_sequence(OK, 1)
    m.free_sequence(OK, 3)
    assert m.first_free(4) == [0, 1, 3, 4]
    m.create_sequence(OK, 4, 3 * KV_PER_BLOCK)
    assert m.sequences[4].blocks == [0, 1, 3]
    m.append_kv(OK, 2, 1)  # block 2 is full: the next record needs a new page
    assert m.sequences[2].blocks == [2, 4]


def test_unwritten_slots_hold_their_own_magic_number():
    m = model()
    m.create_sequence(OK, 1, 20)
    assert m.sequences[1].values == [magic(s) for s in range(20)]
    assert [m.read(s) for s in (0, 17, 8 * KV_PER_BLOCK - 1)] == [magic(0), magic(17), magic(127)]


def test_created_values_come_from_the_mapped_blocks_not_from_slot_zero():
    m = model()
    m.create_sequence(OK, 1, KV_PER_BLOCK)  # block 0
    m.create_sequence(OK, 2, 2)  # block 1
    assert m.sequences[2].values == [magic(16), magic(17)]


def test_append_writes_at_kv_count_in_the_mapped_block():
    m = model(48)
    m.create_sequence(OK, 9, 3 * KV_PER_BLOCK)
    m.create_sequence(OK, 1, 613)
    m.append_kv(OK, 1, 42)
    assert m.sequences[1].blocks[38] == 41 and m.read(41 * KV_PER_BLOCK + 5) == 42
    assert m.memory == {41 * KV_PER_BLOCK + 5: 42}


def test_cow_copies_all_16_slots_of_the_old_block_magic_included():
    m = model()
    m.create_sequence(OK, 1, 3)
    m.append_kv(OK, 1, 100)  # slot 3 of block 0
    m.fork_sequence(OK, 1, 2)
    outcome = m.append_kv(OK, 2, 200)
    assert outcome == type(outcome)(0, ("cow_copy",))
    assert m.sequences[2].blocks == [1] and m.sequences[1].blocks == [0]
    expected = [magic(0), magic(1), magic(2), 100, 200] + [magic(s) for s in range(5, 16)]
    assert [m.read(KV_PER_BLOCK + i) for i in range(16)] == expected  # block 1 holds block 0's magic, not its own
    assert m.sequences[1].values == [magic(0), magic(1), magic(2), 100]


def test_stale_data_of_a_freed_sequence_is_visible_to_the_next_owner():
    """create writes nothing, so a reused block still holds what its last owner appended."""
    m = model()
    m.create_sequence(OK, 1, 1)
    m.append_kv(OK, 1, 42)
    m.free_sequence(OK, 1)
    m.create_sequence(OK, 2, 2)
    assert m.sequences[2].values == [magic(0), 42]


def test_pool_image_is_the_magic_pool_with_the_written_slots_little_endian():
    m = model(3, 5)
    assert m.pool_image() == initial_pool(3 * BLOCK_SIZE + 5)
    m.create_sequence(OK, 1, 1)
    m.append_kv(OK, 1, -2)
    m.fork_sequence(OK, 1, 2)
    m.append_kv(OK, 2, 0x01020304)
    image = bytearray(initial_pool(3 * BLOCK_SIZE + 5))
    image[BLOCK_SIZE : 2 * BLOCK_SIZE] = image[:BLOCK_SIZE]
    struct.pack_into("<i", image, 4, -2)
    struct.pack_into("<i", image, BLOCK_SIZE + 4, -2)
    struct.pack_into("<i", image, BLOCK_SIZE + 8, 0x01020304)
    assert m.pool_image() == bytes(image) and len(image) == 3 * BLOCK_SIZE + 5
    assert m.pool_image() == bytes(image)  # stable when asked twice


def test_failing_calls_change_nothing_in_the_model():
    m = model(1)
    m.create_sequence(OK, 1, 1)
    m.fork_sequence(OK, 1, 2)
    before = ({k: (list(s.values), list(s.blocks)) for k, s in m.sequences.items()}, dict(m.memory))
    for outcome in (
        m.append_kv(OK, 2, 5),
        m.create_sequence(OK, 3, 1),
        m.create_sequence(OK, 1, 1),
        m.fork_sequence(OK, 9, 4),
        m.free_sequence(OK, 9),
    ):
        assert outcome.returned in (-1, NULL)
    assert ({k: (s.values, s.blocks) for k, s in m.sequences.items()}, m.memory) == before


def test_events_name_the_boundary_each_call_reached():
    m = model(16)
    assert m.create_sequence(OK, 1, 0).events == ("bad_length", "invalid_call")
    assert m.create_sequence(OK, 1, MAX_KV + 1).events == ("cap_refusal",)
    assert m.create_sequence(OK, 1, 17 * KV_PER_BLOCK).events == ("oom_refusal", "oom_on_create")
    assert m.create_sequence(OK, 1, 256).events == ("sequence_created", "l2_allocated", "pool_exhausted")
    assert m.create_sequence(OK, 1, 1).events == ("duplicate_id", "invalid_call")
    assert m.append_kv(OK, 1, 0).events == ("oom_refusal", "oom_on_append", "oom_needing_l2")
    assert m.fork_sequence(OK, 1, 2).events == ("sequence_forked", "l2_allocated")
    assert m.fork_sequence(OK, 7, 3).events == ("unknown_id", "invalid_call")
    assert m.append_kv(OK, 9, 0).events == ("unknown_id", "invalid_call")
    assert m.append_kv(True, 1, 0).events == ("null_engine", "invalid_call")
    assert m.free_sequence(OK, 2).events == ("sequence_freed",)
    m.free_sequence(OK, 1)
    m.create_sequence(OK, 1, 14 * KV_PER_BLOCK + 1)  # 15 blocks, one free
    m.fork_sequence(OK, 1, 2)
    m.fork_sequence(OK, 1, 3)
    assert m.append_kv(OK, 1, 0).events == ("cow_copy",)  # takes the last free block
    assert m.append_kv(OK, 2, 0).events == ("oom_refusal", "oom_on_cow")  # block 14 still shared by 2 and 3


def test_events_new_block_l2_allocated_and_the_cap():
    m = model(300)
    m.create_sequence(OK, 1, KV_PER_BLOCK)
    assert m.append_kv(OK, 1, 0).events == ("new_block",)
    m.create_sequence(OK, 2, 256)
    assert m.append_kv(OK, 2, 0).events == ("l2_allocated",)
    m.create_sequence(OK, 3, MAX_KV - 1)
    assert m.append_kv(OK, 3, 0).events == ("reached_cap",)
    assert m.append_kv(OK, 3, 0) == type(m.append_kv(OK, 3, 0))(-1, ("cap_refusal",))


def test_destroy_ends_the_engine_and_a_null_engine_is_refused():
    m = model()
    m.create_sequence(OK, 1, 1)
    assert m.llm_destroy(OK).returned == 0 and not m.live and not m.sequences
    assert m.llm_destroy(OK).returned == -1
    assert m.create_sequence(OK, 1, 1).returned is NULL


def test_oracle_never_imports_engine():
    """The model must be independent of the implementation it judges: no `import engine...` anywhere in oracle/."""
    offenders = []
    for path in sorted((ROOT / "oracle").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] == "engine"]
    assert offenders == []


def test_importing_the_oracle_loads_no_engine_module():
    """The same, at run time: importing the whole oracle (model, machine, CLI) pulls in no `engine` module."""
    code = (
        "import sys, oracle.cli, oracle.hw3.machine, oracle.hw3.model\n"
        "print([m for m in sys.modules if m == 'engine' or m.startswith('engine.')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"
