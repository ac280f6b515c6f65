"""Adapters: how the machine drives one API shape of the family, and reads its state back in block ids.

Every adapter has these methods (the machine needs nothing else), and `shape`, `policy` and `supports`
(the optional operations it can do: "lookup", "append", "commit", "fork", "copy", "reset"); a shape the
grader serves also has `shows`, the Observation fields besides tables that every observe() of it gives: a
served child that answers one of them null sent a reply the grader cannot read (what a pool shows is the
shape's, fixed in the grader's own process, never the child's choice call by call):

    start(num_blocks, block_size) -> None          # a fresh pool
    admit(rid, tokens) -> (accepted, hits | None)  # allocate a new request's prompt; hits: blocks it reused
    lookup(tokens) -> list[int]                    # the blocks a request with these tokens would reuse
    append(rid, token) -> bool                     # one decode token; False: no block for it
    commit(rid) -> None                            # the forward pass ran over every slotted token
    fork(rid, position) -> int | None              # copy-on-write of a table entry; None: refused
    copy(src, dst, mismatched) -> bool             # copy one request's blocks' KV into another's; True: refused
    free(rid) -> None                              # also for unknown and freed ids
    reset() -> bool                                # forget the prefix cache
    observe() -> Observation
    close() -> None

A call that raises raises ImplementationFailure.

Optional, for messages in the pool's own terms: `names` (its words for what a difference names, templates of
{rid} and {block}: oracle/prefix/observation.py's NAMES), given again in each Observation, and `written(step)`
(the lines of Python that make a Step's calls on the pool: oracle/prefix/calls.py).
"""

from typing import Any, Callable

from oracle import target

from oracle.prefix.observation import ImplementationFailure


def call(what: str, function: Callable, *args: Any) -> Any:
    try:
        return function(*args)
    except Exception as exc:  # the implementation's bug, reported as a failing step
        raise ImplementationFailure(f"{what} raised {type(exc).__name__}: {exc}") from exc


def load_target(spec: str) -> Any:
    """The module or object `pkg.module[:attr]` names; ValueError with a one-line reason."""
    if not spec.partition(":")[0]:
        raise ValueError("no module named after the shape (expected SHAPE:pkg.module[:attr])")
    return target.load_target(spec)


def require(target: Any, spec: str, names: list[str]) -> None:
    missing = [n for n in names if getattr(target, n, None) is None]
    if missing:
        raise ValueError(f"{spec} does not define {', '.join(missing)}")


def blocks_of(value: Any) -> list[Any]:
    """An index value as blocks: one block, or (a multimap) a dict or list of blocks."""
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, (list, tuple, set)):
        return list(value)
    return [value]
