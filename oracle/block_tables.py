"""Block tables compared by their shape, for a family whose implementations name blocks with ids of their own
(oracle/blockspace): an implementation's ids are never compared with the model's, only matched to them. Two table
positions hold one block in the implementation exactly when they hold one in the model, every id is a block of
its device, on each device the free blocks and the blocks live tables hold add up to all of them, and a block's
ref count (where an implementation shows one) is the number of live tables holding it.

The model's side is each live sequence's (device, table) in its own ids; the implementation's, each sequence's
table as observed (checked to be as long as the model's before) and each device's free count."""

from typing import Mapping

from oracle.difference import Difference

SHARING, FREE_BLOCKS, REF_COUNTS = "sharing", "free blocks", "ref counts"  # the aspects (a family words them and
# maps them to its rules)
ModelTables = Mapping[int, tuple[str, list[int]]]  # sequence -> (its device, its table in the model's ids)


def sharing(model: ModelTables, tables: Mapping[int, list], totals: Mapping[str, int]) -> Difference | None:
    """The first position whose block is not a block of its device, or shares (or not) where the model's does."""
    mine: dict[tuple[str, int], tuple] = {}
    theirs: dict[tuple[str, object], tuple] = {}
    for i, (device, table) in model.items():
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


def free_blocks(model: ModelTables, tables: Mapping[int, list], free: Mapping[str, int],
                totals: Mapping[str, int]) -> Difference | None:
    """Conservation on each device: free + held by live tables = all (nothing leaks, nothing is free twice)."""
    for device, got in free.items():
        held = len({b for i, (where, _) in model.items() if where == device for b in tables[i]})
        if got != totals[device] - held:
            return Difference(FREE_BLOCKS, f"{device} free blocks", f"{totals[device] - held} "
                              f"({totals[device]} - {held} held by live tables)", got)
    return None


def ref_counts(model: ModelTables, refs: list[tuple[int, int, int]]) -> Difference | None:
    """Each (sequence, position, count) read from the implementation: the count of live tables holding the block."""
    for i, position, count in refs:
        device, table = model[i]
        want = sum(1 for where, other in model.values() if where == device and table[position] in other)
        if count != want:
            return Difference(REF_COUNTS, f"seq {i} block_table[{position}]", f"{want} (the live tables holding it)",
                              count)
    return None
