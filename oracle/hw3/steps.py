"""The six HW3 calls as steps of a call program (oracle/program.py), for the fixed programs of the grader's
items and the memcheck battery."""

import dataclasses
from typing import Any

from oracle.hw3.spec import BLOCK_SIZE
from oracle.program import Step


def init(blocks: int, extra: int = 0, null_pool: bool = False) -> Step:
    return Step("llm_init", (blocks * BLOCK_SIZE + extra,), null_pool)


def create(seq_id: int, initial_kv_len: int) -> Step:
    return Step("create_sequence", (seq_id, initial_kv_len))


def fork(parent_seq_id: int, new_seq_id: int) -> Step:
    return Step("fork_sequence", (parent_seq_id, new_seq_id))


def append(seq_id: int, kv_data: int) -> Step:
    return Step("append_kv", (seq_id, kv_data))


def free(seq_id: int) -> Step:
    return Step("free_sequence", (seq_id,))


def destroy() -> Step:
    return Step("llm_destroy", ())


def null(step: Step) -> Step:
    return dataclasses.replace(step, null=True)


def call_on(adapter: Any, step: Step, engine: object) -> tuple[object, object]:
    """Makes one call on an adapter: the engine handle afterwards, and what the call returned."""
    if step.op == "llm_init":
        returned = adapter.llm_init(step.args[0], step.null)
        return returned, returned
    returned = getattr(adapter, step.op)(None if step.null else engine, *step.args)
    return (None if step.op == "llm_destroy" and not step.null else engine), returned
