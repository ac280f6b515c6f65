"""Engines with a create that refuses of its own accord, for tests/test_refusal_rule.py: each a namespace of the six calls
(graded submissions run in a child process, so the variant lives in a file: `tests.refusal_bugs:NAME`)."""

from types import SimpleNamespace
from typing import Any

from engine import llm_memory as base

API = ("llm_init", "create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy")


def variant(**calls: Any) -> SimpleNamespace:
    """The engine's six calls, some replaced."""
    return SimpleNamespace(**{name: getattr(base, name) for name in API} | calls)


def _refuses_long(engine, seq_id, initial_kv_len):
    """A create of more than 8 blocks (128 records) refused, whatever is free: a cap of its own, not the spec's."""
    if initial_kv_len > 128:
        return None
    return base.create_sequence(engine, seq_id, initial_kv_len)


refuses_long_creates = variant(create_sequence=_refuses_long)


def _planting(broken: Any) -> SimpleNamespace:
    """`broken`'s calls, with one create refused of its own accord: the first create of 4096 records while no create
    has been granted in this process (create_sequence_cap's, on a fresh engine), as review 10's refusal_planted."""
    granted: list[bool] = []

    def create_sequence(engine, seq_id, initial_kv_len):
        if engine is not None and not granted and initial_kv_len == 4096:
            return None
        got = broken.create_sequence(engine, seq_id, initial_kv_len)
        if got is not None:
            granted.append(True)
        return got

    return variant(**({name: getattr(broken, name) for name in API} | {"create_sequence": create_sequence}))


def _free_count_not_incremented(engine, seq_id):
    """tests/broken/free_count_not_incremented.patch's bug as an edit after the engine's free (graded in its child
    process, this file needs nothing but ours): the blocks a free releases are not counted back as free."""
    count = None if engine is None else engine.free_local_blocks
    status = base.free_sequence(engine, seq_id)
    if status == 0:
        engine.free_local_blocks = count  # BUG: free_local_blocks += 1 missing for each block whose ref_count reaches 0
    return status


# the free count's bug (a free gives back no block to the count), and one create of create_free's programs refused alone
free_count_with_a_planted_refusal = _planting(variant(free_sequence=_free_count_not_incremented))
