"""The built-in Python engine (correct), slowed down."""

from engine import llm_memory
from tests.slowed import slowed_calls

globals().update(slowed_calls(llm_memory))
