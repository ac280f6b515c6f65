"""A fixed battery of call programs that between them reach every API and every path of the spec.

Random programs find divergences; these make sure, for memcheck and for the grader, that each path ran at
least once: every refusal, every OOM, copy-on-write, block and L2 boundaries up to the 4096-record cap,
destroy with shared blocks still mapped, and a NULL engine everywhere. Expected values come from the model.
"""

from oracle.hw3.machine import Call
from oracle.hw3.model import Model
from oracle.hw3.spec import BLOCK_SIZE, INT32_MAX, INT32_MIN, KV_PER_BLOCK, L2_PT_SIZE, MAX_KV

Step = tuple[str, tuple[int, ...], bool]  # (api, args, null): null is a NULL engine, or for llm_init a NULL pool

L2_SPAN = KV_PER_BLOCK * L2_PT_SIZE  # 256 records: what one L2 table maps


def _init(blocks: int, extra: int = 0) -> Step:
    return ("llm_init", (blocks * BLOCK_SIZE + extra,), False)


def _create(seq_id: int, length: int) -> Step:
    return ("create_sequence", (seq_id, length), False)


def _fork(parent: int, child: int) -> Step:
    return ("fork_sequence", (parent, child), False)


def _append(seq_id: int, kv_data: int, count: int = 1) -> list[Step]:
    return [("append_kv", (seq_id, kv_data + i), False) for i in range(count)]


def _free(seq_id: int) -> Step:
    return ("free_sequence", (seq_id,), False)


DESTROY: Step = ("llm_destroy", (), False)

BATTERY: dict[str, list[Step]] = {
    "init_destroy_empty": [_init(10), DESTROY],
    "init_refused": [
        ("llm_init", (0,), False),
        ("llm_init", (BLOCK_SIZE - 1,), False),
        ("llm_init", (100 * BLOCK_SIZE,), True),
        _create(0, 1),
        DESTROY,
    ],
    "odd_pool_sizes": [
        _init(1, 36),  # 100 bytes: one block and a tail no block covers
        _create(0, KV_PER_BLOCK),
        *_append(0, 1),  # needs a second block: there is none
        DESTROY,
        _init(5, 63),
        _create(0, 5 * KV_PER_BLOCK - 1),
        *_append(0, 7, 2),
        DESTROY,
    ],
    "create_free_first_fit": [
        _init(20),
        _create(0, 1),
        _create(1, KV_PER_BLOCK),
        _create(2, KV_PER_BLOCK + 1),
        _free(1),
        _create(3, 3 * KV_PER_BLOCK),  # reuses block 1 first, then the lowest free ones
        *_append(3, 100, 3),
        _free(0),
        _free(2),
        _create(4, 2),  # its records are stale data and magic numbers: create writes nothing
        _free(3),
        _free(4),
        DESTROY,
    ],
    "fork_and_cow": [
        _init(12),
        _create(0, KV_PER_BLOCK + 4),
        *_append(0, 10, 2),
        _fork(0, 1),
        *_append(1, 20),  # block 1 is shared: copy-on-write
        *_append(0, 30),  # block 1 is 0's alone again: no copy
        _fork(1, 2),
        _fork(2, 3),
        _free(1),
        *_append(2, 40, KV_PER_BLOCK),  # CoW, then a new block at the boundary
        *_append(3, 50),
        _free(0),
        _free(2),
        _free(3),
        DESTROY,
    ],
    "append_to_the_cap": [
        _init(300, 4),
        _create(0, L2_SPAN - 2),
        *_append(0, 1000, 4),  # into a second L2 table
        _create(1, MAX_KV - 3),
        *_append(1, 5000, 4),  # three reach the 4096-record cap, the fourth is refused
        _fork(1, 2),
        *_append(2, 1),  # refused at the cap, even though a block is shared
        _free(1),
        DESTROY,
    ],
    "oom_on_create": [
        _init(10),
        _create(0, 10 * KV_PER_BLOCK),  # exactly the pool
        _create(1, 1),
        _free(0),
        _create(1, 10 * KV_PER_BLOCK + 1),  # one block too many
        _create(1, MAX_KV + 1),  # more than 256 blocks
        _create(1, 9 * KV_PER_BLOCK + 1),
        DESTROY,
    ],
    "oom_on_append": [
        _init(4),
        _create(0, 4 * KV_PER_BLOCK),
        *_append(0, 1),  # the L2 table has room, the pool has not
        DESTROY,
        _init(L2_PT_SIZE),
        _create(0, L2_SPAN),
        *_append(0, 2),  # would need a new L2 table and a block: must allocate neither
        _free(0),
        _create(0, L2_SPAN - 1),
        *_append(0, 3, 2),
        DESTROY,
    ],
    "oom_on_cow": [
        _init(2),
        _create(0, 8),
        _fork(0, 1),
        _create(2, KV_PER_BLOCK),
        *_append(1, 1),  # copy-on-write with no free block
        *_append(0, 2),
        _free(2),
        *_append(1, 3),
        *_append(0, 4),
        DESTROY,
    ],
    "failing_calls": [
        _init(8),
        _create(0, 0),
        _create(0, -1),
        _create(0, INT32_MIN),
        _create(0, INT32_MAX),
        _create(INT32_MAX, 3),
        _create(INT32_MAX, 3),  # duplicate id
        _create(INT32_MIN, 17),
        _fork(7, 8),  # unknown parent
        _fork(INT32_MAX, INT32_MIN),  # the child's id is taken
        _fork(INT32_MAX, INT32_MAX),
        *_append(9, 1),  # unknown id
        _free(9),
        _free(INT32_MAX),
        _free(INT32_MAX),  # already freed
        *_append(INT32_MAX, 1),
        _fork(INT32_MIN, -1),
        *_append(-1, INT32_MIN),
        DESTROY,
    ],
    "destroy_with_shared_blocks": [
        _init(40),
        _create(0, 2 * L2_SPAN + 5),  # three L2 tables
        _fork(0, 1),
        _fork(1, 2),
        *_append(1, 7, 3),
        _create(3, 20),
        _fork(3, 4),
        DESTROY,
    ],
    "null_engine": [
        ("create_sequence", (0, 1), True),
        ("fork_sequence", (0, 1), True),
        ("append_kv", (0, 1), True),
        ("free_sequence", (0,), True),
        ("llm_destroy", (), True),
        _init(4),
        _create(0, 5),
        ("create_sequence", (1, 1), True),
        ("fork_sequence", (0, 1), True),
        ("append_kv", (0, 1), True),
        ("free_sequence", (0,), True),
        ("llm_destroy", (), True),
        DESTROY,
        _create(0, 1),  # after llm_destroy the engine is gone: NULL
        ("llm_destroy", (), False),
    ],
    "reinit": [
        _init(3),
        _create(0, 20),
        *_append(0, 5),
        DESTROY,
        _init(6, 1),
        _create(0, 40),
        _fork(0, 1),
        DESTROY,
    ],
}


def scenario_calls(name: str) -> tuple[list[Call], Model]:
    """The battery program `name` as calls with their expected returns, and the model after the last one.

    As in the machine, a call made while there is no engine (before llm_init, after a refused one or after
    llm_destroy) passes NULL.
    """
    model, calls, engine = Model(), [], False
    for api, args, null in BATTERY[name]:
        if api == "llm_init":
            outcome = model.llm_init(args[0], null)
            engine = bool(outcome.returned)
        else:
            null = null or not engine
            outcome = getattr(model, api)(null, *args)
            if api == "llm_destroy" and not null:
                engine = False
        calls.append(Call(api, args, null, outcome.returned))
    return calls, model
