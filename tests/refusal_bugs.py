"""The engine with a create that refuses of its own accord, for tests/test_refusal_rule.py: a namespace of the six calls
(graded submissions run in a child process, so the variant lives in a file: `tests.refusal_bugs:NAME`)."""

from engine import llm_memory as base
from tests.broken.probe_bugs import variant


def _refuses_long(engine, seq_id, initial_kv_len):
    """A create of more than 8 blocks (128 records) refused, whatever is free: a cap of its own, not the spec's."""
    if initial_kv_len > 128:
        return None
    return base.create_sequence(engine, seq_id, initial_kv_len)


refuses_long_creates = variant(create_sequence=_refuses_long)
