"""The probes of what only the pool may limit (the create_free and fork items): many live sequences, many
forks sharing a block, and two live engines that must not see each other's state."""

from typing import Any

from oracle.hw3.probe_checks import NotChecked, ProbeFailed, check_all_free, created, engine, expect
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
        i = len(created_) - 1
        raise ProbeFailed(f"create_sequence(engine, {spread_id(i)}, 1) returned NULL with {i} sequences live and "
                          f"{r.counts(on).free} free blocks, expected a sequence: no live sequence has that id, and the "
                          "spec limits sequences only by the pool")
    counts = r.counts(on, count)  # the list's order is the tail_insertion item's business
    if counts.free != 0:
        said = f"free_local_blocks is {counts.free} with {count} one-block sequences in a {count}-block pool, expected 0"
        if all(refs == 1 for refs in counts.ref_count):  # every block taken: only the count is off, Constraint 5's
            raise NotChecked(f"{said} (item free_count)", "free_count")
        raise ProbeFailed(said)
    if (n := counts.length or 0) != count:
        raise ProbeFailed(f"the active list holds {'more than ' if n > count else ''}{min(n, count)} sequences, expected {count}")
    freed = r.calls("free_sequence", on, [(spread_id(i),) for i in range(count)], stop="nonzero")
    if freed[-1] != 0:
        i = len(freed) - 1
        raise ProbeFailed(f"free_sequence(engine, {spread_id(i)}) returned -1 with {count - i} sequences live, expected 0")
    check_all_free(r.counts(on), "freeing all 5000 sequences")
    return "5000 sequences with ids spread up to INT_MAX live at once, then all freed"


def many_forks(r: ProbeTarget) -> str:
    """A sequence and 300 forks share its block, past any small counter."""
    forks = 300
    on = engine(r, 4)
    block = (r.sequence(created(r, on, 0, 1)).block_table[0] or (UNMAPPED,))[0]
    forked = r.calls("fork_sequence", on, [(0, i) for i in range(1, forks + 1)], stop="null")
    if forked[-1] is None:
        i = len(forked)
        raise ProbeFailed(f"fork_sequence(engine, 0, {i}) returned NULL with {i - 1} forks of sequence 0 live, expected a sequence")
    if (shared := r.counts(on).ref_count[block]) != forks + 1:
        raise ProbeFailed(f"ref_count[{block}] is {shared} after 300 forks of the one-block sequence that maps it, "
                          f"expected {forks + 1}")
    freed = r.calls("free_sequence", on, [(i,) for i in range(forks + 1)], stop="nonzero")
    if freed[-1] != 0:
        i = len(freed) - 1
        raise ProbeFailed(f"free_sequence(engine, {i}) returned -1 with {forks + 1 - i} sequences sharing a block, expected 0")
    check_all_free(r.counts(on), "freeing a sequence and its 300 forks")
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
    expect(r.call("create_sequence", a, 1, 20) is not None, True, "create_sequence(a, 1, 20)", "a is the first of two live engines")
    expect(r.call("create_sequence", b, 1, 5) is not None, True, "create_sequence(b, 1, 5)", "sequence 1 exists only in the other engine, a")
    expect(r.call("create_sequence", b, 2, 5) is not None, True, "create_sequence(b, 2, 5)", "1 sequence is live in b")
    before = _snapshot(r, b)
    expect(r.call("append_kv", a, 1, 7) == 0, True, "append_kv(a, 1, 7)", "sequence 1 lives in a, with room in its block")
    expect(r.call("free_sequence", a, 1) == 0, True, "free_sequence(a, 1)", "sequence 1 lives in a")
    expect(r.call("create_sequence", a, 3, 5) is not None, True, "create_sequence(a, 3, 5)", "a has free blocks and no sequence 3")
    expect(r.call("free_sequence", a, 2) == 0, False, "free_sequence(a, 2)", "sequence 2 lives in engine b, not a")
    expect(r.call("append_kv", a, 2, 8) == 0, False, "append_kv(a, 2, 8)", "sequence 2 lives in engine b, not a")
    _check_unchanged(r, b, before, "b", "append_kv, free_sequence and create_sequence")
    before = _snapshot(r, a)
    expect(r.call("append_kv", b, 2, 9) == 0, True, "append_kv(b, 2, 9)", "sequence 2 lives in b, with room in its block")
    expect(r.call("free_sequence", b, 1) == 0, True, "free_sequence(b, 1)", "sequence 1 lives in b")
    expect(r.call("free_sequence", b, 3) == 0, False, "free_sequence(b, 3)", "sequence 3 lives in engine a, not b")
    _check_unchanged(r, a, before, "a", "append_kv and free_sequence")
    return "two live engines with the same sequence ids kept their sequences, blocks and counts apart"
