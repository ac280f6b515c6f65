"""The prefix family's no-op machine for tests/bench/fuzz_speed.py: the same rules and strategies and the
same model (rules build prompts from it), with no implementation called and nothing observed or compared."""

from oracle.prefix.driver import Driver
from oracle.prefix.machine import OPERATIONS, start
from oracle.prefix.observation import Observation
from oracle.prefix.policy import LAB
from oracle.stats import RunStats
from oracle.table_machine import table_machine

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


class NoOpDriver(Driver):
    def observe(self):
        return _EMPTY

    def _check(self, rid=None, hits=frozenset(), held=frozenset(), before=None, own=(), released=0):
        return _EMPTY

    def diverge(self, difference):
        pass  # nothing is compared


def noop_machine(stats: RunStats) -> type:
    machine_for = table_machine("NoOpPrefixMachine", start, OPERATIONS, lambda impl, stats, _: NoOpDriver(impl, stats))
    return machine_for(NoAdapter, stats)
