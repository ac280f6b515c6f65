"""The universal checks (`@any`, or an adapter that declares no policy): what every prefix cache must hold,
whatever its design.

Under a policy that is not exact, which blocks hit, which blocks are taken and where freed ones go are the
pool's own business: the model follows the pool (it takes the pool's answer and, after every call, its tables
and free list) and checks only conservation, ref counts equal to the live tables, table lengths, no false hit,
the hit cap (where the policy has one), that hits are whole blocks, and that a refusal is atomic and
justified (a pool refuses only when its free blocks are too few for what the call needs).
"""

from oracle.difference import Difference
from oracle.prefix.model import PrefixModel, Request
from oracle.prefix.observation import Observation


def hit_bound(model: PrefixModel, num_tokens: int, hits: int) -> Difference | None:
    """At most the full blocks of the prompt hit, and under a hit cap one token is always left to compute."""
    size = model.block_size
    cap = (num_tokens - 1) // size if model.policy.hit_cap else num_tokens // size
    if hits <= cap:
        return None
    if model.policy.hit_cap:
        return Difference("hit cap", "", f"at most (num_tokens - 1) // block_size = {cap} hits", hits)
    return Difference("extra hits", "", f"at most the prompt's {cap} full blocks", hits)


def refusal(model: PrefixModel, before: Observation, blocks_needed: int, what: str) -> Difference | None:
    """A refusal is justified only when the free blocks (where the pool shows them) are fewer than needed."""
    if before.free is None or len(before.free) < blocks_needed:
        return None
    return Difference("return value", "", f"accepted ({len(before.free)} free blocks, {what} needs at most "
                                          f"{blocks_needed})", "refused")


def admit(model: PrefixModel, rid: int, tokens: list[int], accepted: bool, hits: int | None,
          before: Observation) -> Difference | None:
    """The pool's answer to an admission, checked; the model takes the request when the pool did."""
    problem = hit_bound(model, len(tokens), hits) if hits is not None else None
    if problem or not accepted:
        return problem or refusal(model, before, -(-len(tokens) // model.block_size), "the prompt")
    model.requests[rid] = Request(list(tokens), covered=len(tokens), hits=hits or 0, published=hits or 0,
                                  computed=(hits or 0) * model.block_size)
    return None


def append(model: PrefixModel, rid: int, token: int, got: bool, before: Observation) -> Difference | None:
    """The pool's answer to a decode token: a refusal needs a new block and no free one."""
    request = model.requests[rid]
    request.tokens.append(token)
    if got:
        request.covered = len(request.tokens)
        return None
    if len(before.tables.get(rid, ())) * model.block_size >= len(request.tokens):
        return Difference("return value", "", "accepted (its last block has room)", "refused")
    return refusal(model, before, 1, "the token")


def adopt(model: PrefixModel, seen: Observation) -> None:
    """After a checked call, the model holds what the pool holds: its tables and (where shown) free list."""
    for rid, request in model.requests.items():
        request.table = list(seen.tables.get(rid, request.table))
    if seen.free is not None:
        model.free = list(seen.free)


def fork(model: PrefixModel, rid: int, position: int, got: int | None, before: Observation) -> Difference | None:
    """The pool's copy-on-write: a refusal needs a shared block and no free one."""
    was = before.tables[rid][position]
    if got is not None:
        model.requests[rid].table[position] = got
        return None
    if sum(table.count(was) for table in before.tables.values()) <= 1:
        return Difference("return value", "", "the block itself (held once: nothing to copy)", "refused")
    return refusal(model, before, 1, "the copy")
