"""The state right after the failing call, drawn as HTML: expected (the model) beside actual (the
implementation), row by row, with every differing cell marked `diff`.

Sections: the engine's counters, the active list, the ref_count array, each sequence's L1/L2 block table
and the pool (an overview of every block, then block by block, slot by slot). What did not change is
collapsed, so a 300-block pool or a 4096-record sequence stays readable: runs of blocks that are the same on
both sides (and that the failing call did not write), L1 slots that are NULL on both sides, ref_count rows
that agree, and sequences that are the same on both sides (a closed <details>). Every text goes through
html.escape: a submission's names and values never become markup.
"""

import dataclasses

from oracle.hw3.observation import WILD
from oracle.hw3.picture import APPEND, CLASS_WORDS, COW, MAGIC, WRONG, Picture, Side, magic_source
from oracle.hw3.spec import KV_PER_BLOCK, KV_SIZE, L1_PT_SIZE, L2_PT_SIZE, UNMAPPED
from oracle.tables import e, runs

ROW = 16  # cells per row in every grid: one L2 table, one block's slots, 16 ref counts
SHOW_ALL_BLOCKS = 16  # pools up to this many blocks are drawn whole
OVERVIEW_COLUMNS = 32


def _span(start: int, stop: int) -> str:
    return f"{start}" if stop - start == 1 else f"{start}–{stop - 1}"


def _sides(picture: Picture) -> list[Side]:
    return [picture.expected] if picture.actual is None else [picture.expected, picture.actual]


def _head(picture: Picture, label: str = "", width: int = ROW) -> str:
    cols = [f'<th class="side" colspan="{width}">Expected (the model)</th>']
    if picture.actual is not None:
        cols.append(f'<th class="gap"></th><th class="side" colspan="{width}">Actual (the implementation)</th>')
    return f"<thead><tr><th>{e(label)}</th>{''.join(cols)}</tr></thead>"


def _collapsed_row(picture: Picture, text: str) -> str:
    width = 1 + ROW + (ROW + 1 if picture.actual is not None else 0)
    return f'<tr class="collapsed"><td colspan="{width}">{e(text)}</td></tr>'


def _cell(text: object, classes: str, title: str = "") -> str:
    tip = f' title="{e(title)}"' if title else ""
    return f'<td class="c {classes}"{tip}>{e(text)}</td>'


def _paired_row(label: str, cells: list[list[str]]) -> str:
    return f'<tr><th class="row">{e(label)}</th>{"<td class=gap></td>".join("".join(c) for c in cells)}</tr>'


# ---- counters and the active list ---------------------------------------------------------------------


def counters(picture: Picture) -> str:
    sides = _sides(picture)
    rows = [("engine", [("live" if s.engine else "NULL (no engine)") for s in sides])]
    if any(s.engine for s in sides):
        rows += [("total_local_blocks", [s.total if s.engine else "" for s in sides]),
                 ("free_local_blocks", [s.free if s.engine else "" for s in sides])]
    if picture.actual is not None and picture.actual.heap is not None:
        rows.append(("heap", ["—", picture.actual.heap]))
    if picture.actual is not None and not picture.actual.guards_intact:
        rows.append(("guard zones", ["intact", "overwritten"]))
    body = []
    for name, values in rows:
        differs = len(values) == 2 and (picture.problem.startswith("heap") if name == "heap" else values[0] != values[1])
        cells = "".join(f'<td class="v{" diff" if differs else ""}">{e(v)}</td>' for v in values)
        body.append(f'<tr><th class="row">{e(name)}</th>{cells}</tr>')
    head = "<th>Expected (the model)</th>" + ("<th>Actual (the implementation)</th>" if picture.actual else "")
    return f'<table class="counters"><thead><tr><th></th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def active_list(picture: Picture) -> str:
    sides = _sides(picture)
    rows = []
    for name, side, other in zip(("Expected", "Actual"), sides, reversed(sides)):
        if not side.engine:
            rows.append(f'<tr><th class="row">{name}</th><td class="none">no engine</td></tr>')
            continue
        chips = []
        for position, seq_id in enumerate(side.active):
            differs = len(sides) == 2 and (position >= len(other.active) or other.active[position] != seq_id)
            chips.append(f'<span class="chip{" diff" if differs else ""}" title="position {position}">'
                         f'<small>{position}</small> seq {e(seq_id)}</span>')
        if len(sides) == 2 and len(other.active) > len(side.active):
            chips.append(f'<span class="chip diff missing">{len(other.active) - len(side.active)} missing</span>')
        broken = f' <span class="broken">list broken: {e(side.list_error)}</span>' if side.list_error else ""
        rows.append(f'<tr><th class="row">{name}</th><td>{"".join(chips) or "<em>empty</em>"}{broken}</td></tr>')
    return f'<table class="active">{"".join(rows)}</table>'


# ---- ref_count -------------------------------------------------------------------------------------------


def ref_counts(picture: Picture) -> str:
    sides = _sides(picture)
    length = max(len(s.ref_count) for s in sides)
    if not length:
        return '<p class="none">no ref_count array</p>'
    rows_total = -(-length // ROW)

    def entry(side: Side, block: int) -> int | None:
        return side.ref_count[block] if block < len(side.ref_count) else None

    def keep(row: int) -> bool:
        """Rows that differ; with one side only, rows with a block in use."""
        blocks = range(row * ROW, (row + 1) * ROW)
        if len(sides) == 1:
            return rows_total <= 4 or any(entry(sides[0], b) for b in blocks)
        return rows_total <= 4 or any(entry(sides[0], b) != entry(sides[1], b) for b in blocks)

    body = []
    for start, stop, shown in runs(rows_total, keep):
        if not shown:
            blocks = range(start * ROW, min(stop * ROW, length))
            used = sum(1 for b in blocks if (entry(sides[0], b) or 0) > 0)
            same = "the same on both sides, " if len(sides) == 2 else ""
            body.append(_collapsed_row(picture, f"blocks {_span(blocks.start, blocks.stop)}: {same}{used} in use, "
                                                f"{len(blocks) - used} free"))
            continue
        for row in range(start, stop):
            cells = []
            for side, other in zip(sides, reversed(sides)):
                line = []
                for block in range(row * ROW, (row + 1) * ROW):
                    value = entry(side, block)
                    differs = len(sides) == 2 and value != entry(other, block)
                    text = "" if value is None else value
                    kind = "none" if value is None else ("zero" if value == 0 else "used")
                    line.append(_cell(text, f"{kind}{' diff' if differs else ''}", f"ref_count[{block}]"))
                cells.append(line)
            body.append(_paired_row(_span(row * ROW, min(row * ROW + ROW, length)), cells))
    return f'<table class="grid">{_head(picture, "blocks")}<tbody>{"".join(body)}</tbody></table>'


# ---- block tables ----------------------------------------------------------------------------------------


def block_tables(picture: Picture) -> str:
    sides = _sides(picture)
    order = list(dict.fromkeys([*sides[0].active, *(sides[1].active if len(sides) == 2 else ())]))
    if not order:
        return '<p class="none">no sequences</p>'
    now = {slot // KV_PER_BLOCK for slot in picture.written_now}
    parts = []
    for seq_id in order:
        tables = [side.tables.get(seq_id) if seq_id in side.tables else "absent" for side in sides]
        counts = [side.kv_count.get(seq_id) for side in sides]
        same = len(sides) == 2 and tables[0] == tables[1] and counts[0] == counts[1]
        title = f'<span class="seq">seq {e(seq_id)}</span> {_kv_counts(counts)}'
        grid = _table_grid(picture, tables, now)
        if same:
            parts.append(f'<details class="seqtable"><summary>{title} — the same on both sides</summary>{grid}</details>')
        else:
            parts.append(f'<div class="seqtable"><h4>{title}</h4>{grid}</div>')
    return "".join(parts)


def _kv_counts(counts: list[int | None]) -> str:
    shown = ["not on the list" if c is None else f"kv_count {c}" for c in counts]
    if len(counts) == 1 or counts[0] == counts[1]:
        return f"<span>{e(shown[0])}</span>"
    return f'<span class="diff">expected {e(shown[0])}, actual {e(shown[1])}</span>'


def _table_grid(picture: Picture, tables: list, now: set[int]) -> str:
    def l1(table: object, i: int) -> object:
        return table[i] if isinstance(table, tuple) and i < len(table) else None

    def keep(i: int) -> bool:
        return any(l1(t, i) is not None for t in tables)

    body = []
    for start, stop, shown in runs(L1_PT_SIZE, keep):
        if not shown:
            both = len(tables) == 2 and "absent" not in tables
            body.append(_collapsed_row(picture, f"L1 {_span(start, stop)}: NULL" + (" on both sides" if both else "")))
            continue
        for i in range(start, stop):
            rows = [l1(t, i) for t in tables]
            cells = []
            for k, (entries, other) in enumerate(zip(rows, reversed(rows))):
                if tables[k] == "absent":
                    cells.append([f'<td class="c none" colspan="{ROW}">not on the list</td>'])
                elif entries is None:
                    differs = len(rows) == 2 and other is not None
                    cells.append([f'<td class="c null{" diff" if differs else ""}" colspan="{ROW}">NULL</td>'])
                elif entries == WILD:
                    differs = len(rows) == 2 and other != WILD
                    cells.append([f'<td class="c null{" diff" if differs else ""}" colspan="{ROW}">a wild pointer (unreadable)</td>'])
                else:
                    cells.append([_entry(entries, other if len(rows) == 2 else entries, j, i, now) for j in range(L2_PT_SIZE)])
            body.append(_paired_row(f"L1[{i}]", cells))
    return f'<table class="grid">{_head(picture, "L1 × L2")}<tbody>{"".join(body)}</tbody></table>'


def _entry(entries: tuple, other: object, j: int, i: int, now: set[int]) -> str:
    value = entries[j] if j < len(entries) else None
    theirs = other[j] if isinstance(other, tuple) and j < len(other) else None
    differs = value != theirs
    text = "·" if value == UNMAPPED else ("" if value is None else value)
    kind = "unmapped" if value in (UNMAPPED, None) else "mapped"
    classes = f"{kind}{' diff' if differs else ''}{' now' if isinstance(value, int) and value in now else ''}"
    return _cell(text, classes, f"block_table[{i}][{j}]: logical block {i * L2_PT_SIZE + j}")


# ---- the pool --------------------------------------------------------------------------------------------


def pool(picture: Picture) -> str:
    if picture.expected.pool is None and (picture.actual is None or picture.actual.pool is None):
        return '<p class="none">no pool (llm_init was given NULL)</p>'
    blocks = picture.blocks
    parts = []
    if blocks > SHOW_ALL_BLOCKS:
        parts.append(_overview(picture))
    now = {slot // KV_PER_BLOCK for slot in picture.written_now}
    body = []
    for start, stop, shown in runs(blocks, lambda b: blocks <= SHOW_ALL_BLOCKS or b in now or picture.block_differs(b)):
        if not shown:
            body.append(_collapsed_row(picture, _run_summary(picture, start, stop)))
            continue
        for block in range(start, stop):
            cells = [[_slot(picture, block * KV_PER_BLOCK + o, side) for o in range(KV_PER_BLOCK)] for side in range(len(_sides(picture)))]
            body.append(_paired_row(f"block {block}", cells))
    if blocks:
        parts.append(f'<table class="grid pool">{_head(picture, "slots")}<tbody>{"".join(body)}</tbody></table>')
    if picture.actual is not None and picture.actual.pool is None:
        parts.append('<p class="broken">the implementation\'s pool could not be read</p>')
    if picture.tail_differs():
        parts.append('<p class="broken">the bytes past the last block, or a guard zone either side of the pool, '
                     'were overwritten</p>')
    return "".join(parts)


def _run_summary(picture: Picture, start: int, stop: int) -> str:
    counts: dict[str, int] = {}
    for slot in range(start * KV_PER_BLOCK, stop * KV_PER_BLOCK):
        kind = picture.expected_class(slot)
        counts[kind] = counts.get(kind, 0) + 1
    what = ", ".join(f"{n} {CLASS_WORDS[k]}" for k, n in counts.items())
    same = "the same on both sides; " if picture.actual is not None else ""
    return f"blocks {_span(start, stop)} ({stop - start} blocks): {same}slots: {what}"


def _slot(picture: Picture, slot: int, side_index: int) -> str:
    side = _sides(picture)[side_index]
    value = side.slot(slot)
    block, offset = divmod(slot, KV_PER_BLOCK)
    where = f"block {block} slot {offset} (byte {slot * KV_SIZE})"
    if value is None:
        return _cell("", "none", f"{where}: no such slot")
    kind = picture.expected_class(slot) if side_index == 0 else picture.actual_class(slot)
    differs = side_index == 1 and picture.slot_differs(slot)
    title = f"{where}: {value} ({CLASS_WORDS[kind]})"
    if differs:
        title += f"; expected {picture.expected.slot(slot)}"
    now = " now" if slot in picture.written_now else ""
    return _cell(_shown_value(value, slot, picture.blocks), f"{kind}{' diff' if differs else ''}{now}", title)


def _shown_value(value: int, slot: int, blocks: int) -> str:
    """A slot's value in a few characters: "·" for its own magic number, "b7" for block 7's (a copy of the
    same slot of block 7; "b7.3" for its slot 3), else the number, shortened."""
    source = magic_source(value, blocks)
    if source == slot:
        return "·"
    if source is not None:
        src_block, src_offset = divmod(source, KV_PER_BLOCK)
        return f"b{src_block}" if src_offset == slot % KV_PER_BLOCK else f"b{src_block}.{src_offset}"
    return short_number(value)


def short_number(value: int) -> str:
    for limit, suffix in ((10**9, "G"), (10**6, "M"), (10**5, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}{suffix}" if abs(value) < 10 * limit else f"{value // limit}{suffix}"
    return str(value)


def _overview(picture: Picture) -> str:
    """Every block as one square: its class on the model's side, red where the sides differ."""
    cells = []
    for block in range(picture.blocks):
        slots = range(block * KV_PER_BLOCK, (block + 1) * KV_PER_BLOCK)
        kinds = {picture.expected_class(s) for s in slots}
        kind = WRONG if picture.block_differs(block) else COW if COW in kinds else APPEND if APPEND in kinds else MAGIC
        now = " now" if any(s in picture.written_now for s in slots) else ""
        cells.append(f'<span class="b {kind}{now}" title="block {block}: {e(CLASS_WORDS[kind])}"></span>')
    return (f'<div class="overview-label">All {picture.blocks} blocks, {OVERVIEW_COLUMNS} a row (block 0 top left); '
            f'red: differs</div><div class="overview">{"".join(cells)}</div>')


def legend() -> str:
    items = [(MAGIC, "·", CLASS_WORDS[MAGIC]), (APPEND, "7", CLASS_WORDS[APPEND]), (COW, "b3", CLASS_WORDS[COW] + " (b3: from block 3)"),
             (f"{WRONG} diff", "9", CLASS_WORDS[WRONG] + " / differs"), (f"{APPEND} now", "7", "written by the failing call (underlined)")]
    return '<div class="legend">' + "".join(
        f'<span><span class="c {k}">{e(t)}</span> {e(w)}</span>' for k, t, w in items) + "</div>"


def state(picture: Picture) -> str:
    """Every section of the state right after the failing call."""
    missing, objects = "", picture
    if picture.actual is None:
        missing = ('<p class="broken">The implementation\'s state could not be read after this call (it '
                   "crashed, exited or hung): only the expected state is shown.</p>")
    elif not picture.actual.read:  # a Python submission: its objects are its own word, never read (unread.py)
        missing = ('<p class="none">Your engine\'s objects are not read (a Python submission is graded on what its '
                   "calls return and on the pool): the engine, the list, ref_count and the tables show the "
                   "expected state only; the pool shows yours.</p>")
        objects = dataclasses.replace(picture, actual=None)
    sections = [("Engine", counters(objects)), ("Active list (head→next first)", active_list(objects)),
                ("ref_count", ref_counts(objects) if any(s.engine for s in _sides(objects)) else '<p class="none">no engine</p>'),
                ("Block tables (L1 rows × L2 columns; · is -1)", block_tables(objects)), ("Pool", legend() + pool(picture))]
    return missing + "".join(f'<section class="part"><h3>{e(name)}</h3>{html}</section>' for name, html in sections)
