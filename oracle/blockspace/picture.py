"""The blockspace state as tables for the page of a failure (drawn by the core: oracle/tables.py, scene.py): each
live sequence's block table (the implementation's ids named by the model's block at the same place), the tokens
each block holds (the implementation's: as the driver's worker wrote them), the ref counts, the free counts."""

from typing import Any

from oracle.tables import Cell, State, Table

shown = lambda tokens: "nothing" if tokens is None else str(list(tokens))  # noqa: E731


def _tables(seqs: dict, tables: dict, kv: Any, refs: Any, free: list, named: Any = lambda d, b: b) -> State:
    rows = {i: f"seq {i} ({seqs[i].device})" for i in tables}
    return (Table("Block tables", {rows[i]: tuple(named(seqs[i].device, b) for b in t) for i, t in tables.items()},
                  "each live sequence's blocks on its device, in the model's block ids (hover: the implementation's)"),
            Table("Block contents", {rows[i]: tuple(kv(seqs[i].device, b) for b in t) for i, t in tables.items()},
                  "the tokens whose KV each block holds (the implementation's: as written for the calls that passed)"),
            Table("Free blocks", {"gpu": (free[0],), "cpu": (free[1],)})) + (() if refs is None else (
            Table("Ref counts", {rows[i]: tuple(refs(i, p) for p in range(len(t))) for i, t in tables.items()}),))


def state_tables(machine: Any, _: Any = None) -> tuple[State, State | None]:  # observes through the driver
    driver, model = machine.driver, machine.driver.model
    live = {i: model.seqs[i].table for i in driver._live()}
    expected = _tables(model.seqs, live, lambda d, b: shown(model.kv[d].get(b)), lambda i, p: model.ref_count(
        model.seqs[i].device, live[i][p]), [len(model.free["gpu"]), len(model.free["cpu"])])
    try:
        tables, free, refs = driver._observe()
    except AssertionError:  # unreadable: the expected side alone
        return expected, None
    mine, counts = {}, {(i, p): c for i, p, c in refs}
    for i, table in tables.items():
        for m, b in zip(live[i], table):
            mine.setdefault((model.seqs[i].device, b), m)
    kv = driver.worker.blocks  # (the worker: oracle/kv_worker.py)
    return expected, _tables(model.seqs, tables, lambda d, b: lambda: shown(kv[d].get(b)), (
        lambda i, p: counts.get((i, p), "—")) if counts else None, free,
        lambda d, b: Cell(mine.get((d, b), "?"), f"the implementation's {d} block {b}"))
