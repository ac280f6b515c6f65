"""The prefix family's state as tables, for the HTML page of a failure (the core draws it: oracle/tables.py,
oracle/scene.py): each live request's block table, the free queue in order, and every block's ref count, hash,
place in the index and the token prefix its KV was computed for (the model's; on the implementation's side,
what the calls and its own tables say it computed, never read from it: read once the machine has derived it)."""

from typing import Any, Callable

from oracle.prefix.observation import Observation
from oracle.prefix.calls import tokens_text
from oracle.tables import Cell, State, Table

UNREAD = "unreadable"


def _kv(prefix: tuple | None) -> str:
    return "—" if prefix is None else tokens_text(prefix)


def _tables(tables: dict, free: Any, refs: dict | None, hashes: dict | None, indexed: Any, kv: Callable,
            blocks: int) -> State:
    def shown(block: int) -> tuple:
        hashed = UNREAD if hashes is None else "—" if block not in hashes else Cell(
            "hashed", f"hash {str(hashes[block])[:120]}")
        index = UNREAD if indexed is None else f"×{list(indexed).count(block)}" if block in indexed else "—"
        return UNREAD if refs is None else refs.get(block, 0), hashed, index, kv(block)

    return (Table("Block tables", {f"req {rid}": tuple(table) for rid, table in sorted(tables.items())},
                  "each live request's blocks, in table order"),
            Table("Free queue", {} if free is None else {"free": tuple(free)}, "head first: the next block taken "
                  "is the leftmost" + (" (the implementation's could not be read)" if free is None else "")),
            Table("Blocks", {f"block {b}": shown(b) for b in range(blocks)}, "ref count, hash, entries of the "
                  "hash index pointing to it, and the tokens whose KV it holds",
                  ("ref count", "hash", "index", "KV of tokens")))


def state_tables(machine: Any, seen: Observation | None = None) -> tuple[State, State | None]:
    """The model of a machine's driver or a program's (expected) and the implementation it drives (actual, as
    `seen`, or observed now), as tables."""
    driver = getattr(machine, "driver", machine)
    model, tracker = driver.model, driver.content
    expected = _tables({rid: r.table for rid, r in model.requests.items()}, model.free,
                       {b: model.ref_count(b) for b in range(model.num_blocks)},
                       {b: list(key) for b, key in model.block_hash.items()}, model.indexed(),
                       lambda b: _kv(model.content.get(b)), model.num_blocks)
    try:
        seen = seen or driver.impl.observe()
    except Exception:  # noqa: BLE001  (the implementation's state cannot be read: the expected side alone)
        return expected, None
    return expected, _tables(seen.tables, seen.free, seen.ref_counts, seen.hashes, seen.indexed,
                             lambda b: lambda: _kv(tracker.content.get(b)), model.num_blocks)
