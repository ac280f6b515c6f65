"""The hw3 family's HTML page (`grade --out DIR` writes DIR/report.html, `fuzz --html FILE`): one
self-contained file, inline CSS, no script, nothing fetched. For each failed item: the rule and message on
top, the program with the failing call marked, then the state right after that call, expected beside
actual (picture_html.py). Every text goes through html.escape.
"""

from oracle.hw3.rules import fails
from oracle.hw3.call import Call, shown
from oracle.hw3.picture import Picture, picture_of
from oracle.hw3.picture_html import state
from oracle.failed_item import FailedItem
from oracle.page_html import BASE_CSS, contents, frame, program
from oracle.tables import e, runs

LONG_RUN = 10  # consecutive calls of one API from which a listing shows only both ends
RUN_ENDS = 2


def render_html(title: str, items: list[FailedItem]) -> str:
    """One page for a run's failures; an empty list says that everything passed."""
    pictures = [picture_of(item.evidence) for item in items]
    body = contents(items) + "".join(_section(n, item, picture) for n, (item, picture) in enumerate(zip(items, pictures)))
    return frame(title, body, CSS)


def _section(number: int, item: FailedItem, picture: Picture | None) -> str:
    top = [f'<h2>{e(item.name)}</h2>']
    if picture is not None:
        top.append(f'<p class="rule">Rule: {e(picture.rule)}</p>')
    elif item.rule:
        top.append(f'<p class="rule">Rule: {e(item.rule)}</p>')
    top.append(f'<p class="message"><code>{e(item.message)}</code></p>')
    parts = ["".join(top)]
    if picture is not None:
        if picture.lenient:
            parts.append(f'<p class="note">This item compared {e(" and ".join(_LENIENT[a] for a in sorted(picture.lenient)))}; '
                         "the picture compares everything exactly, so it can show differences the item did not count.</p>")
        if item.program:
            parts.append(f'<h3>The program</h3>{program(item.program, picture.line)}')
            parts.append(f'<details><summary>Its API calls ({len(picture.calls)})</summary>{calls(picture)}</details>')
        else:
            parts.append(f"<h3>The calls</h3>{calls(picture)}")
        parts.append(f'<h3 class="after">Right after call {picture.step}: <code>{e(picture.calls[picture.step - 1])}</code></h3>')
        parts.append(state(picture))
    elif item.program:
        parts.append(f"<h3>The program</h3>{program(item.program, 0)}")
    if item.details:
        parts.append(f'<details><summary>Details</summary><pre>{e(item.details)}</pre></details>')
    return f'<section class="failure" id="item-{number}">{"".join(parts)}</section>'


_LENIENT = {"block_ids": "physical block ids up to a renaming", "list_order": "the active list as a set of ids"}


def calls(picture: Picture) -> str:
    """The API calls up to the failing one, numbered, the failing one marked; long runs of one API (an
    append burst, say) show their first and last calls only."""
    listed = picture.calls
    failing = picture.step - 1
    keep = _kept(listed, failing)
    rows = []
    for start, stop, kept in runs(len(listed), keep.__contains__):
        if not kept:
            rows.append(f'<li class="collapsed" value="{start + 1}">… {stop - start} more calls '
                        f'({e(_apis(listed[start:stop]))}) …</li>')
            continue
        for n in range(start, stop):
            rows.append(_call_row(listed[n], n, n == failing))
    return f'<ol class="program calls">{"".join(rows)}</ol>'


def _kept(listed: tuple[Call, ...], failing: int) -> set[int]:
    keep = set(range(len(listed)))
    start = 0
    while start < len(listed):
        stop = start
        while stop < len(listed) and listed[stop].api == listed[start].api:
            stop += 1
        if stop - start >= LONG_RUN:
            keep -= set(range(start + RUN_ENDS, stop - RUN_ENDS))
        start = stop
    return keep | {failing, failing - 1}


def _apis(listed: tuple[Call, ...]) -> str:
    return ", ".join(dict.fromkeys(call.api for call in listed))


def _call_row(call: Call, n: int, failing: bool) -> str:
    expected = shown(call.api, call.expected)
    verdict = "fails" if fails(call.api, call.expected) else "succeeds"
    said = f"expected ({verdict})" if call.judged else "returned (not judged: the model had lost the state)"
    mark = '<span class="mark">◀ the failing call</span>' if failing else ""
    return (f'<li value="{n + 1}" class="{"failing" if failing else ""}"><code>{e(call)}</code> '
            f'<span class="ret">→ {e(expected)} {said}</span>{mark}</li>')


CSS = BASE_CSS + """\
table { border-collapse: separate; border-spacing: 2px; }
table.counters td.v, table.counters th { padding: 2px 10px; text-align: left; }
table.counters td.v { background: #f3f4f6; border-radius: 4px; font-family: ui-monospace, monospace; }
th.row { text-align: right; font-weight: 500; color: var(--muted); padding-right: 6px; white-space: nowrap;
  font-size: 12px; }
th.side { font-size: 12px; text-align: left; color: var(--muted); font-weight: 600; }
td.gap, th.gap { width: 14px; }
.c { min-width: 30px; height: 20px; padding: 0 2px; text-align: center; font-size: 11px; border-radius: 3px;
  background: var(--magic); color: #475467; white-space: nowrap; }
.c.mapped, .c.used { background: #e0f2fe; color: #0b4a6f; }
.c.unmapped, .c.zero { background: #f5f6f8; color: #98a2b3; }
.c.null { background: repeating-linear-gradient(45deg, #f5f6f8, #f5f6f8 6px, #eceef2 6px, #eceef2 12px);
  color: #98a2b3; }
.c.none { background: transparent; color: #98a2b3; }
.c.append { background: var(--append); color: #0b3d91; }
.c.cow { background: var(--cow); color: #7a3e00; }
.c.wrong { background: var(--wrong); color: #7a0000; }
.c.diff, .chip.diff { outline: 2px solid var(--diff); outline-offset: -2px; font-weight: 700; color: #7a0000; }
td.v.diff { outline: 2px solid var(--diff); font-weight: 700; color: #7a0000; }
.c.now { box-shadow: inset 0 -3px 0 #f79009; }
tr.collapsed td { color: var(--muted); font-style: italic; font-size: 12px; padding: 3px 8px; background: #f8f9fb;
  border: 1px dashed var(--line); border-radius: 4px; }
.chip { display: inline-block; margin: 2px 4px 2px 0; padding: 1px 8px; border-radius: 10px; background: #e0f2fe;
  font-size: 12px; }
.chip small { color: var(--muted); margin-right: 4px; }
.chip.missing { background: var(--wrong); }
.broken { color: var(--diff); font-weight: 600; }
.none { color: var(--muted); }
details.seqtable, div.seqtable { margin: 6px 0; }
details > summary { cursor: pointer; color: var(--muted); margin: 6px 0; }
.seq { font-weight: 700; }
span.diff { color: var(--diff); font-weight: 700; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; font-size: 12px; color: var(--muted); margin: 4px 0 8px; }
.legend .c { display: inline-block; line-height: 20px; }
.overview-label { font-size: 12px; color: var(--muted); margin: 4px 0; }
.overview { display: grid; grid-template-columns: repeat(32, 12px); gap: 2px; margin-bottom: 10px; }
.overview .b { width: 12px; height: 12px; border-radius: 2px; background: var(--magic); }
.overview .b.append { background: #7fb2f0; }
.overview .b.cow { background: #f5a524; }
.overview .b.wrong { background: var(--diff); }
.overview .b.now { box-shadow: inset 0 -3px 0 #f79009; }
"""
