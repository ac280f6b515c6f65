"""The adapter contract: a user's own pool, driven through a short adapter class its author writes.

    pagedcheck fuzz --family prefix --impl path/to/adapter.py:MyAdapter[@POLICY]

The class (documented with a worked example in oracle/prefix/README.md):

    class MyAdapter:
        block_sizes = (2, 4)                # optional: the block sizes the pool supports (default 2, 3, 4)
        pool_sizes = range(2, 13)           # optional: the pool sizes in blocks (default 1..12, 16, 24)
        supports = {"append", "lookup"}     # optional: which of lookup, append, commit, fork, reset it has
        policy = {"index": "multimap"}      # optional: a policy name, or named choices (policy.CHOICES);
                                            #   none: only what every prefix cache must hold (@any)
        names = {"table": "pool.seqs[{rid}].blocks"}  # optional: the pool's words in messages (NAMES' keys,
                                            #   templates of {rid} and {block}: oracle/prefix/observation.py)
        def __init__(self, num_blocks: int, block_size: int): ...     # a fresh pool
        def admit(self, rid: int, tokens: list[int]) -> bool | tuple[bool, int | None]:
            ...                             # allocate a new request's prompt: accepted, and blocks it reused
        def free(self, rid: int) -> None: ...                          # also for unknown and freed ids
        def observe(self) -> dict: ...      # {"tables": {rid: [block ids]}, and where the pool has them:
                                            #  "free": [ids, next taken first], "ref_counts": {id: n},
                                            #  "hashes": {id: hash}, "indexed": [ids the index points to],
                                            #  "lengths": {rid: the number of tokens the pool counts for it}}
        # and the optional operations it declares:
        def lookup(self, tokens) -> list[int]; def append(self, rid, token) -> bool  # False: no block
        def commit(self, rid) -> None; def fork(self, rid, position) -> int | None; def reset(self) -> bool

Request ids are the machine's (0, 1, ...); the adapter keeps the pool's own request objects for them. A call
that raises is the pool's failure, reported at its step.
"""

from typing import Any

from oracle.prefix.adapters import call
from oracle.prefix.observation import NAMES, ImplementationFailure, Observation
from oracle.prefix.policy import POLICIES, Policy, declared

REQUIRED = ("admit", "free", "observe")
OPTIONAL = ("lookup", "append", "commit", "fork", "reset")


def declared_policy(user: type) -> Policy:
    """The policy the user's class declares: a name, named choices, or (none) the universal invariants."""
    policy = getattr(user, "policy", None)
    if policy is None:
        return declared({}, exact=False)
    if isinstance(policy, str):
        if policy not in POLICIES:
            raise ValueError(f"{user.__name__}.policy: unknown policy {policy!r}; known: {', '.join(sorted(POLICIES))}")
        return POLICIES[policy]
    if isinstance(policy, dict):
        return declared(policy)
    raise ValueError(f"{user.__name__}.policy must be a policy name or a dict of named choices")


def contract_adapter(user: Any, spec: str) -> type:
    """The machine's adapter class for a user's adapter class; ValueError with a one-line reason."""
    if not isinstance(user, type):
        raise ValueError(f"{spec} is not a class (expected path/to/adapter.py:AdapterClass, see oracle/prefix/README.md)")
    missing = [name for name in REQUIRED if not callable(getattr(user, name, None))]
    if missing:
        raise ValueError(f"{user.__name__} has no {', '.join(missing)} (the adapter contract: oracle/prefix/README.md)")
    supports = frozenset(getattr(user, "supports", ()) or ())
    unknown = sorted(supports - set(OPTIONAL))
    if unknown:
        raise ValueError(f"{user.__name__}.supports: unknown operation {unknown[0]!r}; known: {', '.join(OPTIONAL)}")
    absent = sorted(name for name in supports if not callable(getattr(user, name, None)))
    if absent:
        raise ValueError(f"{user.__name__} declares {absent[0]!r} in supports but has no such method")
    return type(f"Contract{user.__name__}", (ContractAdapter,), {
        "default_policy": declared_policy(user), "supports": supports, "shape": user.__name__,
        "block_sizes": getattr(user, "block_sizes", None), "pool_sizes": getattr(user, "pool_sizes", None),
        "written": staticmethod(lambda step: _written(user.__name__, step)), "names": declared_names(user),
    })


def declared_names(user: type) -> dict[str, str]:
    """The pool's words the user's class declares (`names`), each a template of {rid} and {block}; ValueError."""
    names = getattr(user, "names", None) or {}
    if not isinstance(names, dict):
        raise ValueError(f"{user.__name__}.names must be a dict of {', '.join(NAMES)} to templates")
    for key, template in names.items():
        try:
            if key not in NAMES or not isinstance(template, str):
                raise KeyError(key)
            template.format(rid=0, block=0)
        except (KeyError, IndexError, ValueError):
            raise ValueError(f"{user.__name__}.names[{key!r}]: expected one of {', '.join(NAMES)}, naming "
                             f"{{rid}} or {{block}}, not {template!r}") from None
    return dict(names)


def _written(name: str, step: Any) -> list[str]:
    """The call made on the user's adapter for `step`, an oracle.program.Step (oracle/prefix/calls.py)."""
    if step.op == "start":
        blocks, block_size = step.args
        return [f"pool = {name}(num_blocks={blocks}, block_size={block_size})"]
    return [f"pool.{step.op}({', '.join(repr(list(a)) if isinstance(a, tuple) else repr(a) for a in step.args)})"]


def _blocks(value: Any, what: str) -> tuple[int, ...]:
    try:
        blocks = tuple(value)
    except TypeError:
        raise ImplementationFailure(f"observe(): {what} is not a list of block ids") from None
    if not all(isinstance(b, int) and not isinstance(b, bool) for b in blocks):
        raise ImplementationFailure(f"observe(): {what} holds something other than block ids")
    return blocks


class ContractAdapter:
    shape = "contract"
    default_policy: Policy
    supports: frozenset = frozenset()
    names: dict[str, str] = {}

    def __init__(self, target: type, spec: str, policy: Policy | None = None):
        self.user, self.spec = target, spec
        self.policy = policy or self.default_policy
        self.pool: Any = None

    def start(self, num_blocks: int, block_size: int) -> None:
        self.pool = call(f"{self.user.__name__}()", self.user, num_blocks, block_size)

    def admit(self, rid: int, tokens: list[int]) -> tuple[bool, int | None]:
        got = call("admit", self.pool.admit, rid, list(tokens))
        accepted, hits = got if isinstance(got, tuple) and len(got) == 2 else (got, None)
        if not isinstance(accepted, bool) or not (hits is None or isinstance(hits, int) and not isinstance(hits, bool)):
            raise ImplementationFailure(f"admit returned {got!r}, not accepted (a bool) or (accepted, hits)")
        return accepted, hits

    def lookup(self, tokens: list[int]) -> list[int]:
        return list(_blocks(call("lookup", self.pool.lookup, list(tokens)), "lookup's result"))

    def append(self, rid: int, token: int) -> bool:
        return bool(call("append", self.pool.append, rid, token))

    def commit(self, rid: int) -> None:
        call("commit", self.pool.commit, rid)

    def fork(self, rid: int, position: int) -> int | None:
        return call("fork", self.pool.fork, rid, position)

    def free(self, rid: int) -> None:
        call("free", self.pool.free, rid)

    def reset(self) -> bool:
        return bool(call("reset", self.pool.reset))

    def observe(self) -> Observation:
        seen = call("observe", self.pool.observe)
        if isinstance(seen, Observation):
            return seen
        if not isinstance(seen, dict) or not isinstance(seen.get("tables"), dict):
            raise ImplementationFailure("observe() returned no 'tables' dict (the adapter contract: oracle/prefix/README.md)")
        optional = {name: seen.get(name) for name in ("ref_counts", "hashes", "lengths")}
        return Observation(
            tables={rid: _blocks(table, f"tables[{rid}]") for rid, table in seen["tables"].items()},
            free=None if seen.get("free") is None else _blocks(seen["free"], "free"),
            indexed=None if seen.get("indexed") is None else tuple(sorted(_blocks(seen["indexed"], "indexed"))),
            **{name: dict(value) if value is not None else None for name, value in optional.items()},
            names=self.names,
        )

    def close(self) -> None:
        close = getattr(self.pool, "close", None)
        if callable(close):
            close()
        self.pool = None
