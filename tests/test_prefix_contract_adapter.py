"""oracle/prefix/adapters/contract.py's ContractAdapter on plain classes, without processes: what it takes from a
user's adapter class (names, the calls it forwards) and what it refuses of its replies, each in one line."""

import pytest

from oracle.prefix.adapters.contract import contract_adapter
from oracle.prefix.observation import ImplementationFailure, Observation


class Pool:
    """A user's adapter of the contract whose replies a test sets: every optional operation, recorded calls."""

    supports = ("lookup", "append", "commit", "fork", "reset")
    seen: dict = {"tables": {0: [1, 2]}, "free": [3], "indexed": [2, 1], "ref_counts": {1: 1, 2: 1}}
    admitted: object = (True, 1)
    looked_up: object = [1]

    def __init__(self, num_blocks: int, block_size: int):
        self.calls = [("start", num_blocks, block_size)]

    def admit(self, rid, tokens):
        self.calls.append(("admit", rid, tokens))
        return self.admitted

    def lookup(self, tokens):
        return self.looked_up

    def append(self, rid, token):
        self.calls.append(("append", rid, token))
        return 1

    def commit(self, rid):
        self.calls.append(("commit", rid))

    def fork(self, rid, position):
        return 7

    def free(self, rid):
        self.calls.append(("free", rid))

    def reset(self):
        return 0

    def observe(self):
        return self.seen

    def close(self):
        self.calls.append(("close",))


def _adapter(user: type = Pool):
    adapter = contract_adapter(user, "pool.py:Pool")(user, "pool.py:Pool")
    adapter.start(4, 2)
    return adapter


def test_the_adapter_forwards_every_call_and_reads_its_replies() -> None:
    adapter = _adapter()
    assert adapter.admit(0, [1, 2, 3]) == (True, 1)
    assert adapter.lookup([1, 2]) == [1]
    assert adapter.append(0, 4) is True and adapter.reset() is False and adapter.fork(0, 1) == 7
    adapter.commit(0)
    adapter.free(0)
    seen = adapter.observe()
    assert seen.tables == {0: (1, 2)} and seen.free == (3,) and seen.indexed == (1, 2) and seen.ref_counts == {1: 1, 2: 1}
    calls = adapter.pool.calls
    adapter.close()
    assert calls == [("start", 4, 2), ("admit", 0, [1, 2, 3]), ("append", 0, 4), ("commit", 0), ("free", 0), ("close",)]
    assert adapter.pool is None


def test_an_observation_the_user_built_is_taken_as_it_is() -> None:
    made = Observation(tables={0: (1,)}, free=None, indexed=None)
    adapter = _adapter(type("Built", (Pool,), {"seen": made}))
    assert adapter.observe() is made


@pytest.mark.parametrize("attributes, call, message", [
    ({"admitted": "yes"}, lambda a: a.admit(0, [1]), "admit returned 'yes', not accepted (a bool) or (accepted, hits)"),
    ({"admitted": (True, True)}, lambda a: a.admit(0, [1]), "admit returned (True, True)"),
    ({"looked_up": 5}, lambda a: a.lookup([1]), "observe(): lookup's result is not a list of block ids"),
    ({"looked_up": [1, "2"]}, lambda a: a.lookup([1]), "observe(): lookup's result holds something other than block ids"),
    ({"seen": [1]}, lambda a: a.observe(), "observe() returned no 'tables' dict"),
    ({"seen": {"tables": {0: [True]}}}, lambda a: a.observe(), "observe(): tables[0] holds something other than block ids"),
    ({"seen": {"tables": {}, "free": 3}}, lambda a: a.observe(), "observe(): free is not a list of block ids"),
], ids=["admit-not-bool", "hits-a-bool", "lookup-not-a-list", "lookup-not-ids", "no-tables", "table-of-bools",
        "free-not-a-list"])
def test_a_reply_outside_the_contract_is_the_pools_failure(attributes: dict, call, message: str) -> None:
    adapter = _adapter(type("Odd", (Pool,), attributes))
    with pytest.raises(ImplementationFailure, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        call(adapter)


@pytest.mark.parametrize("names, message", [
    (["seq"], "Named.names must be a dict of"),
    ({"nothing": "x"}, "Named.names['nothing']: expected one of"),
    ({"table": 3}, "Named.names['table']: expected one of"),
    ({"table": "seq{rid"}, "Named.names['table']: expected one of"),
])
def test_names_outside_the_contract_are_refused_in_one_line(names, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        contract_adapter(type("Named", (Pool,), {"names": names}), "pool.py:Named")
