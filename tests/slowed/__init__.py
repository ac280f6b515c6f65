"""Slowed-down implementations, for the tests that a grade does not depend on the machine's speed: every
call but append_kv sleeps PAUSE seconds first (append bursts make thousands of calls)."""

import time
from types import ModuleType
from typing import Any, Callable

PAUSE = 0.002
CALLS = ("llm_init", "create_sequence", "fork_sequence", "free_sequence", "llm_destroy")


def slowed_calls(module: ModuleType) -> dict[str, Callable[..., Any]]:
    """The six calls of `module`, all but append_kv slowed down."""

    def slowed(call: Callable[..., Any]) -> Callable[..., Any]:
        def call_slowly(*args: Any) -> Any:
            time.sleep(PAUSE)
            return call(*args)

        return call_slowly

    return {"append_kv": module.append_kv, **{name: slowed(getattr(module, name)) for name in CALLS}}
