"""A state drawn as named tables, for any family: each table a name and rows of cells (plain values), the
model's state (expected) beside the implementation's (actual). A family hands over only the values (its
`state_tables` hook, oracle/family.py, or the Scene its `picture` hook makes); this module decides what differs
and draws it.

Marks: a cell whose text differs from the same cell on the other side (same table, same row label, same
column) is `diff`; a cell whose text differs from the same side's state before the failing call is `now`
(changed by the call; a table that state lacks was empty); a row one side lacks is drawn empty on that side
("absent") and its cells on the other side are `diff`; a table one side does not show at all is not compared.
Rows where nothing is marked are collapsed in runs when a table has more than SHOW_ALL_ROWS rows. A cell may
have a kind (where its value came from, say), drawn in the kind's tone and explained by the table's legend; a
collapsed run counts the kinds of its cells. Every text goes through html.escape: a submission's values never
become markup.
"""

from dataclasses import dataclass, field, replace
from html import escape
from typing import Callable, Iterator, Sequence

from oracle.printable import printable

SHOW_ALL_ROWS = 12  # tables up to this many rows are drawn whole


TONES = ("plain", "muted", "blue", "orange", "red")  # the colours a kind of cell may be drawn in


@dataclass(frozen=True)
class Kind:
    """A kind of cell a table's legend explains: drawn with the class `kind-NAME` in its tone (one of TONES)."""

    name: str
    words: str  # what it means, in the legend and in a collapsed run's count ("untouched magic")
    tone: str = "plain"
    sample: str = "7"  # the text of its cell in the legend


@dataclass(frozen=True)
class Cell:
    """A value with a note shown on hover (`title`), its kind (a Kind's name, its table's), and a short form
    drawn in its place (`shown`); only the value is compared."""

    value: object
    title: str = ""
    kind: str = ""
    shown: str | None = None

    def __str__(self) -> str:
        return "" if self.value is None else str(self.value)


@dataclass(frozen=True)
class Table:
    name: str  # e.g. "block tables", "free queue"
    rows: dict[str, tuple] = field(default_factory=dict)  # row label -> its cells (plain values or Cells)
    note: str = ""  # one line under the name: what a row is, which end comes first
    columns: tuple[str, ...] = ()  # the columns' names, when they have names
    kinds: tuple[Kind, ...] = ()  # the kinds its cells may have, in the order the legend lists them

    def cell(self, label: str, column: int) -> str | None:
        """The text of a cell; None where the table has no such row or column."""
        cells = self.rows.get(label)
        if cells is None or column >= len(cells):
            return None
        return text(cells[column])


State = tuple[Table, ...]  # one side's state: its tables, in the order drawn


def settled(state: State | None) -> State | None:
    """The state with every cell given as a callable read now: a fact the family derives from an observation
    after making it (what a block holds, say) is drawn as a callable, read once the machine has derived it."""
    if state is None:
        return None
    return tuple(replace(t, rows={label: tuple(c() if callable(c) else c for c in cells)
                                  for label, cells in t.rows.items()}) for t in state)


def text(value: object) -> str:
    return "" if value is None else str(value)


def e(value: object) -> str:
    """`value` as HTML text: its control and reordering characters spelled as escapes first (oracle/printable.py),
    so a submission's words can neither become markup nor turn the grader's words around them."""
    return escape(printable(str(value)), quote=True)


def runs(count: int, keep: Callable[[int], bool], shortest: int = 2) -> Iterator[tuple[int, int, bool]]:
    """(start, stop, shown) runs over range(count): the indices `keep` accepts are shown; a run of others
    is collapsed when it has at least `shortest` members, else shown too."""
    start = 0
    while start < count:
        shown = keep(start)
        stop = start + 1
        while stop < count and keep(stop) == shown:
            stop += 1
        yield start, stop, shown or stop - start < shortest
        start = stop


def _named(state: State | None, name: str) -> Table | None:
    return next((table for table in state or () if table.name == name), None)


@dataclass(frozen=True)
class Marks:
    """Which cells of one table are marked, by side (0 expected, 1 actual): (label, column) pairs."""

    diff: tuple[frozenset, frozenset]
    now: tuple[frozenset, frozenset]


def marks(sides: Sequence[Table | None], before: Sequence[Table | None] = ()) -> Marks:
    """The marks of one table drawn on each side: cells that differ from the other side's (`diff`, only
    with two sides) and from the same side's table before the call (`now`, where one is given)."""
    labels = list(dict.fromkeys(label for table in sides if table is not None for label in table.rows))
    diff: list[set] = [set(), set()]
    now: list[set] = [set(), set()]
    for label in labels:
        width = max(len(table.rows.get(label, ())) for table in sides if table is not None)
        for column in range(width):
            cells = [None if table is None else table.cell(label, column) for table in sides]
            for side, mine in enumerate(cells):
                if sides[side] is None or label not in sides[side].rows:
                    continue
                if len(cells) == 2 and sides[1 - side] is not None and mine != cells[1 - side]:
                    diff[side].add((label, column))
                was = before[side] if side < len(before) else None
                if was is not None and mine != was.cell(label, column):
                    now[side].add((label, column))
    return Marks((frozenset(diff[0]), frozenset(diff[1])), (frozenset(now[0]), frozenset(now[1])))


def draw_state(expected: State, actual: State | None, before: Sequence[State | None] = ()) -> str:
    """Every table of the state, expected beside actual (the expected side alone when `actual` is None),
    each under its name; `before`: the sides' states before the call, whose changes are marked `now`."""
    names = list(dict.fromkeys(table.name for state in (expected, actual or ()) for table in state))
    parts = []
    for name in names:
        sides = [_named(expected, name)] + ([_named(actual, name)] if actual is not None else [])
        # a table the state before lacks was empty then: every cell of it is the call's
        earlier = [None if state is None else _named(state, name) or Table(name) for state in before]
        note = next((t.note for t in sides if t is not None and t.note), "")
        kinds = next((t.kinds for t in sides if t is not None and t.kinds), ())
        html = draw_table(sides, marks(sides, earlier))
        parts.append(f'<section class="part"><h3>{e(name)}</h3>{f"<p class=note>{e(note)}</p>" if note else ""}'
                     f"{legend(kinds)}{html}</section>")
    return "".join(parts)


def draw_table(sides: Sequence[Table | None], marked: Marks) -> str:
    """One table: a row per label (th.row), each side's cells (.c), a gap cell between the sides."""
    labels = list(dict.fromkeys(label for table in sides if table is not None for label in table.rows))
    if not labels:
        return '<p class="none">empty on both sides</p>' if len(sides) == 2 else '<p class="none">empty</p>'
    width = max(1, *(len(table.rows[label]) for table in sides if table is not None for label in table.rows))
    head = ['<th class="side" colspan="{}">Expected (the model)</th>'.format(width)]
    if len(sides) == 2:
        head.append(f'<th class="gap"></th><th class="side" colspan="{width}">Actual (the implementation)</th>')
    if any(table is not None and table.columns for table in sides):
        named = next(table.columns for table in sides if table is not None and table.columns)
        columns = "".join(f'<th class="col">{e(name)}</th>' for name in named) + '<th></th>' * (width - len(named))
        head.append(f'</tr><tr><th></th>{columns}' + (f'<th class="gap"></th>{columns}' if len(sides) == 2 else ""))
    flagged = {label for side in (0, 1) for label, _ in marked.diff[side] | marked.now[side]}
    compared = len(sides) == 2 and None not in sides  # a table one side does not show is not compared
    missing = {label for label in labels for table in sides if compared and label not in table.rows}
    kinds = next((t.kinds for t in sides if t is not None and t.kinds), ())

    def keep(index: int) -> bool:
        return len(labels) <= SHOW_ALL_ROWS or labels[index] in flagged | missing

    body = []
    for start, stop, shown in runs(len(labels), keep):
        if not shown:
            same = " the same on both sides," if compared else ""
            span = 1 + width + (width + 1 if len(sides) == 2 else 0)
            counted = _kinds_in(sides[0], labels[start:stop], kinds)
            body.append(f'<tr class="collapsed"><td colspan="{span}">{stop - start} rows ({e(labels[start])} … '
                        f'{e(labels[stop - 1])}):{same} unchanged{e(counted)}</td></tr>')
            continue
        for label in labels[start:stop]:
            cells = [_side_cells(table, label, width, marked, side, kinds) for side, table in enumerate(sides)]
            body.append(f'<tr><th class="row">{e(label)}</th>{"<td class=gap></td>".join(cells)}</tr>')
    return (f'<table class="grid"><thead><tr><th></th>{"".join(head)}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _kinds_in(table: Table | None, labels: list[str], kinds: tuple[Kind, ...]) -> str:
    """"; on the model's side: 4176 untouched magic, ...": the kinds of a collapsed run's cells, counted."""
    if table is None or not kinds:
        return ""
    found = [cell.kind for label in labels for cell in table.rows.get(label, ()) if isinstance(cell, Cell)]
    counts = [f"{found.count(kind.name)} {kind.words}" for kind in kinds if kind.name in found]
    return f"; on the model's side: {', '.join(counts)}" if counts else ""


def legend(kinds: tuple[Kind, ...]) -> str:
    """What each kind of cell means, a sample cell of each."""
    if not kinds:
        return ""
    return '<div class="legend">' + "".join(f'<span><span class="c v {_kind_class(kind.name, kinds)}">{e(kind.sample)}'
                                            f"</span> {e(kind.words)}</span>" for kind in kinds) + "</div>"


def _kind_class(name: str, kinds: tuple[Kind, ...]) -> str:
    kind = next((k for k in kinds if k.name == name), None)
    return "" if kind is None else f"kind-{e(kind.name)} tone-{kind.tone if kind.tone in TONES else 'plain'}"


def _side_cells(table: Table | None, label: str, width: int, marked: Marks, side: int,
                kinds: tuple[Kind, ...] = ()) -> str:
    if table is None or label not in table.rows:
        return f'<td class="c none absent" colspan="{width}">absent</td>'
    cells = []
    for column, value in enumerate(table.rows[label]):
        classes = "c v" + (" diff" if (label, column) in marked.diff[side] else "")
        classes += " now" if (label, column) in marked.now[side] else ""
        title = value.title if isinstance(value, Cell) else ""
        kind = _kind_class(value.kind, kinds) if isinstance(value, Cell) and value.kind else ""
        classes += f" {kind}" if kind else ""
        drawn = value.shown if isinstance(value, Cell) and value.shown is not None else text(value)
        tip = f' title="{e(title)}"' if title else ""
        cells.append(f'<td class="{classes}"{tip}>{e(drawn)}</td>')
    if len(table.rows[label]) < width:
        empty = "" if table.rows[label] else "empty"
        cells.append(f'<td class="c none" colspan="{width - len(table.rows[label])}">{empty}</td>')
    return "".join(cells)


CSS = """
table.grid { border-collapse: separate; border-spacing: 2px; margin-bottom: 6px; }
th.row { text-align: right; font-weight: 500; color: #667085; padding-right: 6px; white-space: nowrap; font-size: 12px; }
th.side { font-size: 12px; text-align: left; color: #667085; font-weight: 600; }
td.gap, th.gap { width: 14px; }
.c { min-width: 30px; height: 20px; padding: 0 6px; text-align: center; font-size: 12px; border-radius: 3px;
  background: #e0f2fe; color: #0b4a6f; white-space: nowrap;
  font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
.c.none { background: transparent; color: #98a2b3; font-style: italic; }
.c.tone-muted { background: #eceff3; color: #475467; }
.c.tone-blue { background: #cfe3ff; color: #0b3d91; }
.c.tone-orange { background: #ffe0b2; color: #7a3e00; }
.c.tone-red { background: #ffb4b4; color: #7a0000; }
.c.absent { background: repeating-linear-gradient(45deg, #f5f6f8, #f5f6f8 6px, #eceef2 6px, #eceef2 12px); }
.c.now { box-shadow: inset 0 -3px 0 #f79009; background: #fff1b8; color: #7a3e00; }
.c.diff { outline: 2px solid #d32f2f; outline-offset: -2px; font-weight: 700; color: #7a0000; background: #ffb4b4; }
tr.collapsed td { color: #667085; font-style: italic; font-size: 12px; padding: 3px 8px; background: #f8f9fb;
  border: 1px dashed #d9dee7; border-radius: 4px; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; font-size: 12px; color: #667085; margin: 4px 0 8px; }
.legend .c { display: inline-block; line-height: 20px; }
"""
