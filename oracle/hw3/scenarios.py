"""A fixed battery of call programs that between them reach every API and every path of the spec.

Random programs find divergences; these make sure, for memcheck and for the grader, that each path ran at
least once: every refusal, every OOM, copy-on-write, block and L2 boundaries up to the 4096-record cap,
destroy with shared blocks still mapped, and a NULL engine everywhere. Expected values come from the model.
"""

from oracle.hw3.machine import Call
from oracle.hw3.model import Model
from oracle.hw3.spec import BLOCK_SIZE, INT32_MAX, INT32_MIN, KV_PER_BLOCK, L2_PT_SIZE, MAX_KV
from oracle.hw3.steps import append, create, destroy, fork, free, init
from oracle.program import Step

L2_SPAN = KV_PER_BLOCK * L2_PT_SIZE  # 256 records: what one L2 table maps


def _append(seq_id: int, kv_data: int, count: int = 1) -> list[Step]:
    return [append(seq_id, kv_data + i) for i in range(count)]


BATTERY: dict[str, list[Step]] = {
    "init_destroy_empty": [init(10), destroy()],
    "init_refused": [
        Step("llm_init", (0,)),
        Step("llm_init", (BLOCK_SIZE - 1,)),
        Step("llm_init", (100 * BLOCK_SIZE,), null=True),
        create(0, 1),
        destroy(),
    ],
    "odd_pool_sizes": [
        init(1, 36),  # 100 bytes: one block and a tail no block covers
        create(0, KV_PER_BLOCK),
        *_append(0, 1),  # needs a second block: there is none
        destroy(),
        init(5, 63),
        create(0, 5 * KV_PER_BLOCK - 1),
        *_append(0, 7, 2),
        destroy(),
    ],
    "create_free_first_fit": [
        init(20),
        create(0, 1),
        create(1, KV_PER_BLOCK),
        create(2, KV_PER_BLOCK + 1),
        free(1),
        create(3, 3 * KV_PER_BLOCK),  # reuses block 1 first, then the lowest free ones
        *_append(3, 100, 3),
        free(0),
        free(2),
        create(4, 2),  # its records are stale data and magic numbers: create writes nothing
        free(3),
        free(4),
        destroy(),
    ],
    "fork_and_cow": [
        init(12),
        create(0, KV_PER_BLOCK + 4),
        *_append(0, 10, 2),
        fork(0, 1),
        *_append(1, 20),  # block 1 is shared: copy-on-write
        *_append(0, 30),  # block 1 is 0's alone again: no copy
        fork(1, 2),
        fork(2, 3),
        free(1),
        *_append(2, 40, KV_PER_BLOCK),  # CoW, then a new block at the boundary
        *_append(3, 50),
        free(0),
        free(2),
        free(3),
        destroy(),
    ],
    "append_to_the_cap": [
        init(300, 4),
        create(0, L2_SPAN - 2),
        *_append(0, 1000, 4),  # into a second L2 table
        create(1, MAX_KV - 3),
        *_append(1, 5000, 4),  # three reach the 4096-record cap, the fourth is refused
        fork(1, 2),
        *_append(2, 1),  # refused at the cap, even though a block is shared
        free(1),
        destroy(),
    ],
    "oom_on_create": [
        init(10),
        create(0, 10 * KV_PER_BLOCK),  # exactly the pool
        create(1, 1),
        free(0),
        create(1, 10 * KV_PER_BLOCK + 1),  # one block too many
        create(1, MAX_KV + 1),  # more than 256 blocks
        create(1, 9 * KV_PER_BLOCK + 1),
        destroy(),
    ],
    "oom_on_append": [
        init(4),
        create(0, 4 * KV_PER_BLOCK),
        *_append(0, 1),  # the L2 table has room, the pool has not
        destroy(),
        init(L2_PT_SIZE),
        create(0, L2_SPAN),
        *_append(0, 2),  # would need a new L2 table and a block: must allocate neither
        free(0),
        create(0, L2_SPAN - 1),
        *_append(0, 3, 2),
        destroy(),
    ],
    "oom_on_cow": [
        init(2),
        create(0, 8),
        fork(0, 1),
        create(2, KV_PER_BLOCK),
        *_append(1, 1),  # copy-on-write with no free block
        *_append(0, 2),
        free(2),
        *_append(1, 3),
        *_append(0, 4),
        destroy(),
    ],
    "failing_calls": [
        init(8),
        create(0, 0),
        create(0, -1),
        create(0, INT32_MIN),
        create(0, INT32_MAX),
        create(INT32_MAX, 3),
        create(INT32_MAX, 3),  # duplicate id
        create(INT32_MIN, 17),
        fork(7, 8),  # unknown parent
        fork(INT32_MAX, INT32_MIN),  # the child's id is taken
        fork(INT32_MAX, INT32_MAX),
        *_append(9, 1),  # unknown id
        free(9),
        free(INT32_MAX),
        free(INT32_MAX),  # already freed
        *_append(INT32_MAX, 1),
        fork(INT32_MIN, -1),
        *_append(-1, INT32_MIN),
        destroy(),
    ],
    "destroy_with_shared_blocks": [
        init(40),
        create(0, 2 * L2_SPAN + 5),  # three L2 tables
        fork(0, 1),
        fork(1, 2),
        *_append(1, 7, 3),
        create(3, 20),
        fork(3, 4),
        destroy(),
    ],
    "null_engine": [
        Step("create_sequence", (0, 1), null=True),
        Step("fork_sequence", (0, 1), null=True),
        Step("append_kv", (0, 1), null=True),
        Step("free_sequence", (0,), null=True),
        Step("llm_destroy", (), null=True),
        init(4),
        create(0, 5),
        Step("create_sequence", (1, 1), null=True),
        Step("fork_sequence", (0, 1), null=True),
        Step("append_kv", (0, 1), null=True),
        Step("free_sequence", (0,), null=True),
        Step("llm_destroy", (), null=True),
        destroy(),
        create(0, 1),  # after llm_destroy the engine is gone: NULL
        Step("llm_destroy", ()),
    ],
    "reinit": [
        init(3),
        create(0, 20),
        *_append(0, 5),
        destroy(),
        init(6, 1),
        create(0, 40),
        fork(0, 1),
        destroy(),
    ],
}


def scenario_calls(name: str) -> tuple[list[Call], Model]:
    """The battery program `name` as calls with their expected returns, and the model after the last one.

    As in the machine, a call made while there is no engine (before llm_init, after a refused one or after
    llm_destroy) passes NULL.
    """
    model, calls, engine = Model(), [], False
    for step in BATTERY[name]:
        null = step.null
        if step.op == "llm_init":
            outcome = model.llm_init(step.args[0], null)
            engine = bool(outcome.returned)
        else:
            null = null or not engine
            outcome = getattr(model, step.op)(null, *step.args)
            if step.op == "llm_destroy" and not null:
                engine = False
        calls.append(Call(step.op, step.args, null, outcome.returned))
    return calls, model
