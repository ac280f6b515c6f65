"""Broken: llm_destroy cleans up but returns -1 instead of 0."""

from engine import llm_memory as base
from engine.llm_memory import append_kv, create_sequence, fork_sequence, free_sequence, llm_init  # noqa: F401


def llm_destroy(engine):
    base.llm_destroy(engine)
    return -1  # BUG: should return 0 (and -1 only for a NULL engine)
