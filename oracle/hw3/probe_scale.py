"""The probes of what only the pool may limit (the create_free and fork items): many live sequences, many
forks sharing a block, and two live engines that must not see each other's state."""

from typing import Any

from oracle.hw3.probe_checks import CheckedPast, NotChecked, ProbeFailed, check_all_free, checked_past, created, engine, expect
from oracle.hw3.probe_target import ProbeTarget
from oracle.hw3.spec import UNMAPPED


def spread_id(i: int) -> int:
    """Distinct non-negative int32 ids: distinct high halves (40503 is odd) over the whole non-negative range (a
    negative id is the fuzz item's business); low halves shared by runs of 256 ids, so an id kept in a short or
    a char collides."""
    return ((i * 40503) & 0x7FFF) << 16 | i >> 8


def many_sequences(r: ProbeTarget) -> str:
    """5000 one-block sequences with ids spread over the non-negative int range live at once, then each freed."""
    count = 5000
    on = engine(r, count)
    if (total := r.counts(on).total) != count:
        raise NotChecked(f"llm_init counted {total} blocks in a {count}-block pool (item llm_init)", "llm_init")
    created_ = r.calls("create_sequence", on, [(spread_id(i), 1) for i in range(count)], stop="null")
    if created_[-1] is None:
        i, counts = len(created_) - 1, r.counts(on)
        if counts.free < 1 and (free := counts.ref_count.count(0)) >= 1:  # by its own count, no block is free
            said = (f"create_sequence(engine, {spread_id(i)}, 1) returned NULL with {i} sequences live: free_local_blocks "
                    f"is {counts.free}, while ref_count shows {free} blocks free")
            r.set_free(on, free)  # the count ref_count gives: a create refused then is create's refusal
            if r.call("create_sequence", on, spread_id(i), 1) is not None:
                raise NotChecked(f"{said}; with free_local_blocks set to {free} it succeeds (item free_count)", "free_count")
        raise ProbeFailed(f"create_sequence(engine, {spread_id(i)}, 1) returned NULL with {i} sequences live and "
                          f"{r.counts(on).free} free blocks, expected a sequence: no live sequence has that id, and the "
                          "spec limits sequences only by the pool")
    counts = r.counts(on, count)  # the list's order is the tail_insertion item's business
    if (n := counts.length or 0) != count:
        raise ProbeFailed(f"the active list holds {'more than ' if n > count else ''}{min(n, count)} sequences, expected {count}")
    if (wrong := next((b for b, refs in enumerate(counts.ref_count) if refs != 1), None)) is not None:  # 5000 live
        raise CheckedPast(f"ref_count[{wrong}] is {counts.ref_count[wrong]} with {count} one-block sequences live in a "
                          f"{count}-block pool, expected 1: which block a create takes is first fit's (item first_fit)", "first_fit")
    if counts.free != 0:  # every block taken: only the count is off, Constraint 5's
        raise CheckedPast(f"free_local_blocks is {counts.free} with {count} one-block sequences in a {count}-block pool, "
                          "expected 0 (item free_count)", "free_count")
    freed = r.calls("free_sequence", on, [(spread_id(i),) for i in range(count)], stop="nonzero")
    if (returned := freed[-1]) != 0:
        said = f"free_sequence(engine, {spread_id(len(freed) - 1)}) returned {returned} with {count - len(freed) + 1} sequences live, expected 0"
        if returned != -1:  # not a failure: free's return convention, Task 2's
            raise CheckedPast(f"{said} (item create_free)", "create_free")
        raise ProbeFailed(said)
    check_all_free(r.counts(on), "freeing all 5000 sequences")
    return "5000 sequences with ids spread up to INT_MAX live at once, then all freed"


def many_forks(r: ProbeTarget) -> str:
    """A sequence and 300 forks share its block, past any small counter."""
    forks = 300
    on, past = engine(r, 4), []  # a wild slot is create_free's bug, the fork item's to see past
    block = (r.sequence(created(r, on, 0, 1, past)).block_table[0] or (UNMAPPED,))[0]
    forked = r.calls("fork_sequence", on, [(0, i) for i in range(1, forks + 1)], stop="null")
    if forked[-1] is None:
        i = len(forked)
        raise ProbeFailed(f"fork_sequence(engine, 0, {i}) returned NULL with {i - 1} forks of sequence 0 live, expected a sequence")
    if (shared := r.counts(on).ref_count[block]) != forks + 1:
        raise ProbeFailed(f"ref_count[{block}] is {shared} after 300 forks of the one-block sequence that maps it, "
                          f"expected {forks + 1}")
    # the count is checked: freeing them all is the create_free item's rule (and the list the forks built, fork's)
    freed = r.calls("free_sequence", on, [(i,) for i in range(forks + 1)], stop="nonzero")
    if (returned := freed[-1]) != 0:
        i = len(freed) - 1
        said = f"free_sequence(engine, {i}) returned {returned} with {forks + 1 - i} sequences sharing a block, expected 0"
        raise CheckedPast(f"{said} (item create_free)" if returned != -1 else f"{said} (item fork)",
                          "create_free" if returned != -1 else "fork")
    counts = r.counts(on)
    if (held := next((b for b, refs in enumerate(counts.ref_count) if refs), None)) is not None:
        raise CheckedPast(f"ref_count[{held}] is {counts.ref_count[held]} after freeing a sequence and its 300 forks, "
                          "each free returning 0, expected 0 (item create_free)", "create_free")
    check_all_free(counts, "freeing a sequence and its 300 forks")
    checked_past(past)
    return "a one-block sequence and 300 forks share its block (ref_count 301), then all freed"


def _snapshot(r: ProbeTarget, on: Any) -> tuple:
    counts = r.counts(on, 100)
    return counts.free, counts.length, counts.ref_count


def _check_unchanged(r: ProbeTarget, on: Any, before: tuple, name: str, calls: str) -> None:
    (free, sequences, counts), now = before, _snapshot(r, on)
    if now[:2] != (free, sequences):
        raise ProbeFailed(f"{calls} on the other engine changed engine {name}: free_local_blocks {free} -> {now[0]}, "
                          f"active sequences {sequences} -> {now[1]}")
    for block, (was, count) in enumerate(zip(counts, now[2])):
        if was != count:
            raise ProbeFailed(f"{calls} on the other engine changed engine {name}: ref_count[{block}] {was} -> {count}")


def two_engines(r: ProbeTarget) -> str:
    """Each engine's state is its own (Task 1: llm_init allocates an LLMEngine and its own ref_count array).
    What one engine's calls return, and that they leave the other exactly as it was, is checked; a wrong
    block count (another item's bug) does not fail it."""
    a, b = engine(r, 10), engine(r, 6)
    expect(r.call("create_sequence", a, 1, 20), True, "create_sequence(a, 1, 20)", "a is the first of two live engines", "create_free")
    expect(r.call("create_sequence", b, 1, 5), True, "create_sequence(b, 1, 5)", "sequence 1 exists only in the other engine, a")
    expect(r.call("create_sequence", b, 2, 5), True, "create_sequence(b, 2, 5)", "1 sequence is live in b", "create_free")
    before = _snapshot(r, b)
    expect(r.call("append_kv", a, 1, 7), True, "append_kv(a, 1, 7)", "sequence 1 lives in a, with room in its block",
           "append_cow")
    expect(r.call("free_sequence", a, 1), True, "free_sequence(a, 1)", "sequence 1 lives in a", "create_free")
    expect(r.call("create_sequence", a, 3, 5), True, "create_sequence(a, 3, 5)", "a has free blocks and no sequence 3",
           "create_free")
    expect(r.call("free_sequence", a, 2), False, "free_sequence(a, 2)", "sequence 2 lives in engine b, not a")
    expect(r.call("append_kv", a, 2, 8), False, "append_kv(a, 2, 8)", "sequence 2 lives in engine b, not a")
    _check_unchanged(r, b, before, "b", "append_kv, free_sequence and create_sequence")
    before = _snapshot(r, a)
    expect(r.call("append_kv", b, 2, 9), True, "append_kv(b, 2, 9)", "sequence 2 lives in b, with room in its block",
           "append_cow")
    expect(r.call("free_sequence", b, 1), True, "free_sequence(b, 1)", "sequence 1 lives in b", "create_free")
    expect(r.call("free_sequence", b, 3), False, "free_sequence(b, 3)", "sequence 3 lives in engine a, not b")
    _check_unchanged(r, a, before, "a", "append_kv and free_sequence")
    # an id just found in one engine, looked up in the other next (a lookup cache not kept per engine)
    expect(r.call("append_kv", b, 2, 10), True, "append_kv(b, 2, 10)", "sequence 2 lives in b, with room in its block",
           "append_cow")
    expect(r.call("append_kv", a, 2, 11), False, "append_kv(a, 2, 11) right after append_kv(b, 2, 10)",
           "sequence 2 lives in engine b, not a")
    expect(r.call("create_sequence", a, 2, 5), True, "create_sequence(a, 2, 5)",
           "a has free blocks and no sequence 2 (that one lives in engine b)")
    return "two live engines with the same sequence ids kept their sequences, blocks and counts apart"
