"""Block tables compared by their shape, for a family whose implementations name blocks with ids of their own (a
block manager whose tables it reads): an implementation's ids are never compared with the model's, only matched to
them. After each call, in this order: every live table holds ceil(tokens / block_size) blocks; two table positions
hold one block in the implementation exactly when they hold one in the model, and every id is a block of its device;
on each device the free blocks and the blocks live tables hold add up to all of them; and a block's ref count (where
an implementation shows one) is the number of live tables holding it. And for the calls that write or move blocks: a
block just written is held by its writer alone (copy-on-write), and a move between devices returns pairs that take
each moved block once to a distinct free block of the other device, and maps every moved table by them.

The model's side is each live sequence's device, table (in the model's ids) and token count; the implementation's,
each live sequence's table as observed, each device's free count and the ref counts it shows."""

from typing import Mapping, NamedTuple

from oracle.difference import Difference

# the aspects (a family words them and maps them to its rules)
TABLE_SIZE, SHARING, FREE_BLOCKS, REF_COUNTS = "table size", "sharing", "free blocks", "ref counts"
SHARED_WRITE, MOVE = "shared write", "swap mapping"


class Held(NamedTuple):
    """A live sequence in the model."""

    device: str
    table: list[int]
    tokens: int


Model = Mapping[int, Held]  # sequence -> what it holds in the model
Tables = Mapping[int, list]  # sequence -> its table as the implementation shows it


def difference(model: Model, tables: Tables, free: Mapping[str, int], refs: list[tuple[int, int, int]],
               totals: Mapping[str, int], block_size: int) -> Difference | None:
    """The first way the implementation's tables, free counts and ref counts (sequence, position, count) are not
    the model's; None when they are."""
    return sizes(model, tables, block_size) or sharing(model, tables, totals) or \
        free_blocks(model, tables, free, totals) or ref_counts(model, refs)


def sizes(model: Model, tables: Tables, block_size: int) -> Difference | None:
    for i, held in model.items():
        if len(tables[i]) != len(held.table):
            return Difference(TABLE_SIZE, f"seq {i} ({held.tokens} tokens)", f"{len(held.table)} blocks "
                              f"(ceil({held.tokens} / {block_size}))", len(tables[i]))
    return None


def sharing(model: Model, tables: Tables, totals: Mapping[str, int]) -> Difference | None:
    """The first position whose block is not a block of its device, or shares (or not) where the model's does."""
    mine: dict[tuple[str, int], tuple] = {}
    theirs: dict[tuple[str, object], tuple] = {}
    for i, (device, table, _) in model.items():
        for position, (m, b) in enumerate(zip(table, tables[i])):
            where, total = f"seq {i} block_table[{position}]", totals[device]
            if type(b) is not int or not 0 <= b < total:
                return Difference(SHARING, where, f"a {device} block id in 0..{total - 1}", b)
            had = mine.setdefault((device, m), (b, i, position))
            other = theirs.setdefault((device, b), (m, i, position))
            if had[0] != b:
                return Difference(SHARING, where, f"block {had[0]}, shared with seq {had[1]} block_table[{had[2]}]", b)
            if other[0] != m:
                return Difference(SHARING, where, f"a block of its own, not seq {other[1]} block_table[{other[2]}]'s",
                                  b)
    return None


def free_blocks(model: Model, tables: Tables, free: Mapping[str, int], totals: Mapping[str, int]) -> Difference | None:
    """Conservation on each device: free + held by live tables = all (nothing leaks, nothing is free twice)."""
    for device, got in free.items():
        held = len({b for i, (where, _, _) in model.items() if where == device for b in tables[i]})
        if got != totals[device] - held:
            return Difference(FREE_BLOCKS, f"{device} free blocks", f"{totals[device] - held} "
                              f"({totals[device]} - {held} held by live tables)", got)
    return None


def ref_counts(model: Model, refs: list[tuple[int, int, int]]) -> Difference | None:
    """Each (sequence, position, count) read from the implementation: the count of live tables holding the block."""
    for i, position, count in refs:
        device, table, _ = model[i]
        want = sum(1 for where, other, _ in model.values() if where == device and table[position] in other)
        if count != want:
            return Difference(REF_COUNTS, f"seq {i} block_table[{position}]", f"{want} (the live tables holding it)",
                              count)
    return None


def shared_write(model: Model, tables: Tables, i: int) -> Difference | None:
    """Sequence i just wrote into its last block: no other live table on its device holds that block."""
    device, table = model[i].device, tables[i]
    holders = [j for j, held in model.items() if j != i and held.device == device and table[-1:]
               and table[-1] in tables[j]]
    if holders:
        return Difference(SHARED_WRITE, f"seq {i} block_table[{len(table) - 1}]", "a block it holds alone (ref "
                          "count 1)", f"{device} block {table[-1]}, held by seq {holders[0]} too")
    return None


def moved(call: str, pairs: list[tuple[int, int]], blocks: list[int], taken: set[int], src: str, dst: str,
          before: Mapping[int, list[int]], parts: Mapping[int, dict[int, int]], tables: Tables) -> Difference | None:
    """A move from `src` to `dst` (`call` returned `pairs`): each of `blocks` once (a block listed twice moves twice),
    to distinct blocks of `dst` not `taken`; then each moved table (`before`) mapped by its own `parts` of the pairs."""
    news = {new for _, new in pairs}
    if sorted(old for old, _ in pairs) != sorted(blocks) or len(news) != len(pairs) or taken & news:
        return Difference(MOVE, f"{call}'s return", f"each of {src} blocks {sorted(blocks)} once, to distinct free "
                          f"{dst} blocks", pairs)
    wrong = [i for i in before if tables[i] != [parts[i].get(b) for b in before[i]]]
    return wrong and Difference(MOVE, f"seq {wrong[0]}'s block table", f"{before[wrong[0]]} mapped by the returned "
                                "pairs", tables[wrong[0]]) or None
