"""The prefix family's no-op machine for tests/bench/fuzz_speed.py: the same rules and strategies and the
same model (rules build prompts from it), with no implementation called and nothing observed or compared."""

from oracle.prefix.machine import PrefixMachine
from oracle.prefix.observation import Observation
from oracle.prefix.policy import LAB
from oracle.stats import RunStats

_EMPTY = Observation(tables={}, free=())


class NoAdapter:
    policy, supports = LAB, frozenset({"lookup", "append", "commit", "fork", "reset"})

    def admit(self, rid, tokens):
        return True, None

    def append(self, rid, token):
        return True

    def lookup(self, tokens):
        return []

    def reset(self):
        return True

    def close(self):
        pass

    start = commit = fork = free = lambda self, *args: None


class NoOpPrefixMachine(PrefixMachine):
    def _observe(self, call):
        return _EMPTY

    def _check(self, call, rid=None, hits=frozenset(), held=frozenset(), before=None, own=()):
        return _EMPTY

    def _returned(self, call, what, expected, got):
        pass

    def _diverge(self, call, difference, text=None):
        pass  # nothing is compared


def noop_machine(stats: RunStats) -> type:
    return type("NoOpPrefixMachine", (NoOpPrefixMachine,), {"adapter_factory": staticmethod(NoAdapter), "stats": stats})
