"""The prefix-family state machine: Hypothesis draws programs of a pool's calls (requests admitted from earlier
prompts, looked up, decoded, forked and freed, pressure that evicts warm blocks, resets); the driver (driver.py)
makes each call on the pool and the model and checks it. The machine is the core's (oracle/table_machine.py),
built from this table of operations; `requests` holds the ids admit accepted (later calls may have freed them).

    from oracle.prefix import load_adapter
    from oracle.prefix.machine import machine_for
    TestLab = machine_for(load_adapter("lab:engine.prefix")).TestCase
"""

from typing import Any, Callable

from hypothesis.stateful import Bundle, consumes, multiple

from oracle.prefix import strategies as st
from oracle.checked import Divergence
from oracle.prefix.driver import Driver
from oracle.table_machine import Operation, table_machine, valid

__all__ = ["Divergence", "machine_for"]

requests = Bundle("requests")


def counted(name: str, act: Callable[..., Any], arguments: dict | None = None, target: Bundle | None = None,
            when: Callable[[Driver], bool] | None = None) -> Operation:
    """An operation of the table, counted under its name each time it is drawn."""

    def counting(driver: Driver, **values: Any) -> Any:
        driver.stats.steps += 1
        driver.stats.rules[name] += 1
        return act(driver, **values)

    return Operation(counting, arguments or {}, target, when)


def supports(operation: str) -> Callable[[Driver], bool]:
    return lambda driver: operation in driver.impl.supports


def result(rid: int | None) -> Any:
    return multiple() if rid is None else rid


def start(factory: Any) -> Operation:
    """A pool of the sizes the adapter's domain (strategies.Domain) declares; a replayed (shrunk) program that
    asks for another is not valid."""
    domain = getattr(factory, "domain", None) or st.Domain()

    def act(driver: Driver, num_blocks: int, block_size: int) -> None:
        valid(domain.holds(num_blocks, block_size))
        driver.start(num_blocks, block_size)

    return counted("start", act, {"num_blocks": domain.pool_strategy(), "block_size": domain.block_size_strategy()})


def prompt(driver: Driver, base: int, cut: str, count: int, tail: list[int]) -> list[int]:
    """An earlier prompt cut at a block boundary (or one token either side, or whole), then `tail`."""
    size = driver.model.block_size
    head = driver.prompts[base % len(driver.prompts)] if driver.prompts else []
    keep = {"blocks": count * size, "blocks_minus_one": count * size - 1, "blocks_plus_one": count * size + 1,
            "whole": len(head), "none": 0}[cut]
    return head[: max(keep, 0)] + tail or [0]


def admit(driver: Driver, tokens: list[int]) -> int | None:
    valid(bool(tokens))  # the strategies never make an empty prompt; a shrunk replay that does is not valid
    return driver.admit(tokens)


def filling_pool(driver: Driver, base: int, slack: int) -> Any:
    """A prompt that needs every free block exactly (slack 0), one token less, or one block too many."""
    length = max(1, len(driver.model.free) * driver.model.block_size - slack)
    head = driver.prompts[base % len(driver.prompts)] if driver.prompts else []
    return result(admit(driver, (head + [1] * length)[:length]))


def cached_prefix(driver: Driver, rid: int, count: int) -> Any:
    """A prompt equal to the first full blocks of a live request: the hit cap makes its last block a duplicate
    of a cached one."""
    request = driver.model.requests.get(rid)
    full = len(request.tokens) // driver.model.block_size if request else 0
    return result(admit(driver, request.tokens[: min(count, full) * driver.model.block_size]) if full else None)


def lookup_live(driver: Driver, rid: int, tail: list[int]) -> None:
    """Look up what a live (or freed) request holds, and more."""
    request = driver.model.requests.get(rid)
    driver.lookup(list(request.tokens if request else driver.prompts[rid % len(driver.prompts)]) + tail or [0])


def pressure(driver: Driver, count: int) -> None:
    """A request of tokens no other request has (so it hits nothing) takes `count` blocks from the head of the
    free list (0: all of them), evicting the warm blocks there, and is freed at once."""
    blocks = len(driver.model.free) if count == 0 else min(count, len(driver.model.free))
    rid = admit(driver, [100 + driver.next_rid] * max(1, blocks * driver.model.block_size))
    if rid is not None:
        driver.free(rid)


def evict_then_hit(driver: Driver, rid: int) -> None:
    """A warm block evicted just before a request hits past it: a prompt equal to a live request's first block
    (under the hit cap, a duplicate entry for it) is freed, pressure evicts it, then the live request's prompt is
    looked up (or admitted, where there is no look-up) again. The request needs two full blocks (a head to evict,
    a block past it): a drawn one too short stands for another live one that has them, else for one admitted
    from its prompt for the while."""
    model = driver.model
    size, request, own = model.block_size, model.requests.get(rid), None
    if request is None or len(request.tokens) < 2 * size:
        long = [r for r in model.requests.values() if len(r.tokens) >= 2 * size]
        own = None if long else admit(driver, ((request.tokens if request else []) + [1] * 2 * size)[: 2 * size])
        request = long[rid % len(long)] if long else model.requests.get(own)
    if request is None:
        return
    duplicate = admit(driver, request.tokens[:size])
    if duplicate is not None:
        driver.free(duplicate)
    pressure(driver, 0)
    if "lookup" in driver.impl.supports:
        driver.lookup(list(request.tokens) + [0])
    else:
        again = admit(driver, list(request.tokens) + [0])
        if again is not None:
            driver.free(again)
    if own is not None:
        driver.free(own)


def live(driver: Driver, rid: int) -> bool:
    request = driver.model.requests.get(rid)
    return request is not None and request.covered == len(request.tokens)


def fork(driver: Driver, rid: int, position: int) -> None:
    """Copy-on-write of a table entry, a shared one when the request has any; on a shape with copy_blocks and
    no fork (Mini-YAIE), a copy between two live requests' blocks instead: to the `position`-th live request,
    cyclically, every fourth position with one destination more (which must be refused)."""
    model = driver.model
    if "fork" not in driver.impl.supports:
        live_ids = sorted(model.requests)
        if rid in model.requests:
            driver.copy(rid, live_ids[position % len(live_ids)], position % 4 == 3)
        return
    sharing = [r for r, req in model.requests.items() if any(model.ref_count(b) > 1 for b in req.table)]
    if rid not in sharing and sharing:
        rid = sharing[rid % len(sharing)]  # the drawn request shares nothing: one that does
    request = model.requests.get(rid)
    if request is None or not request.table:
        return
    shared = [i for i, b in enumerate(request.table) if model.ref_count(b) > 1]
    driver.fork(rid, shared[position % len(shared)] if shared else position % len(request.table))


def free_unknown(driver: Driver, rid: int) -> None:
    """Misuse: free an id that was never admitted, or was freed already (a double free)."""
    if rid not in driver.model.requests:
        driver.stats.events["double_free" if rid < driver.next_rid else "unknown_free"] += 1
        driver.free(rid)


OPERATIONS = {
    "admit": counted("admit", lambda d, base, cut, count, tail: result(admit(d, prompt(d, base, cut, count, tail))),
                     {"base": st.earlier, "cut": st.cuts, "count": st.block_counts, "tail": st.tails}, requests),
    "admit_filling_pool": counted("admit_filling_pool", filling_pool, {"base": st.earlier, "slack": st.fill_slack},
                                  requests),
    "admit_cached_prefix": counted("admit_cached_prefix", cached_prefix,
                                   {"rid": requests, "count": st.prefix_blocks}, requests),
    "lookup_live": counted("lookup_live", lookup_live, {"rid": requests, "tail": st.tails}, when=supports("lookup")),
    "evict": counted("evict", pressure, {"count": st.evictions}),
    "evict_then_hit": counted("evict_then_hit", evict_then_hit, {"rid": requests}),
    "lookup": counted("lookup", lambda d, base, cut, count, tail: d.lookup(prompt(d, base, cut, count, tail)),
                      {"base": st.earlier, "cut": st.cuts, "count": st.block_counts, "tail": st.tails},
                      when=supports("lookup")),
    "append": counted("append", lambda d, rid, token: d.append(rid, token) if live(d, rid) else None,
                      {"rid": requests, "token": st.tokens}, when=supports("append")),
    "commit": counted("commit", lambda d, rid: d.commit(rid) if live(d, rid) else None, {"rid": requests},
                      when=supports("commit")),
    "fork": counted("fork", fork, {"rid": requests, "position": st.positions},
                    when=lambda d: bool({"fork", "copy"} & d.impl.supports)),
    "free": counted("free", lambda d, rid: d.free(rid), {"rid": consumes(requests)}),
    "free_unknown": counted("free_unknown", free_unknown, {"rid": st.positions}),
    "reset": counted("reset", lambda d, now: d.reset() if now else None, {"now": st.rarely}, when=supports("reset")),
}

# a machine class bound to an implementation; `stats` collects what its runs fire and reach. The factory's
# `domain` (load_adapter sets it from the adapter class) says which pools to make
machine_for = table_machine("PrefixMachine", start, OPERATIONS, lambda impl, stats, factory: Driver(impl, stats))
