"""The hw3 family's HTML page (`grade --out DIR` writes DIR/report.html, `fuzz --html FILE`): one
self-contained file, inline CSS, no script, nothing fetched. For each failed item: the rule and message on
top, the program with the failing call marked, then the state right after that call, expected beside
actual (picture_html.py). Every text goes through html.escape.
"""

import re

from oracle.hw3.checks import fails
from oracle.hw3.machine import POINTER_CALLS, Call
from oracle.hw3.picture import Picture, picture_of
from oracle.hw3.picture_html import e, runs, state
from oracle.page import FailedItem

LONG_RUN = 10  # consecutive calls of one API from which a listing shows only both ends
RUN_ENDS = 2


def render_html(title: str, items: list[FailedItem]) -> str:
    """One page for a run's failures; an empty list says that everything passed."""
    pictures = [picture_of(item.evidence) for item in items]
    toc = "".join(f'<li><a href="#item-{n}">{e(item.name)}</a>: {e(item.message)}</li>' for n, item in enumerate(items))
    body = (f'<nav><h2>{len(items)} failed</h2><ol>{toc}</ol></nav>' if items
            else '<p class="passed">Every item passed: there is no failing step to show.</p>')
    body += "".join(_section(n, item, picture) for n, (item, picture) in enumerate(zip(items, pictures)))
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{e(title)}</title>'
            f'<style>{CSS}</style></head><body><header><h1>{e(title)}</h1>'
            f'<p>pagedcheck: the failing step of each failed item, expected (the model) beside actual '
            f'(the implementation), right after the failing call.</p></header><main>{body}</main></body></html>\n')


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
_STATE_LINE = re.compile(r"^state = \w+\(\)$")


def program(lines: tuple[str, ...], line: int) -> str:
    """A printed program, unnumbered (the page numbers calls only, as the messages and the repro do), with the
    rule line that made the failing call marked (`line` counts the lines after `state = ...()`, 0 for none)."""
    start = next((n for n, text in enumerate(lines) if _STATE_LINE.match(text)), None)
    failing = start + line if start is not None and line else None
    rows = []
    for n, text in enumerate(lines):
        kind = "failing" if n == failing else "preamble" if start is None or n <= start else ""
        mark = '<span class="mark">◀ the failing call</span>' if n == failing else ""
        rows.append(f'<li class="{kind}"><code>{e(text)}</code>{mark}</li>')
    return f'<ol class="program printed">{"".join(rows)}</ol>'


def calls(picture: Picture) -> str:
    """The API calls up to the failing one, numbered, the failing one marked; long runs of one API (an
    append burst, say) show their first and last calls only."""
    listed = picture.calls
    failing = picture.step - 1
    keep = _kept(listed, failing)
    rows = []
    for start, stop, shown in runs(len(listed), keep.__contains__):
        if not shown:
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
    expected = POINTER_CALLS[call.api] if call.api in POINTER_CALLS and call.expected else (
        "NULL" if call.api in POINTER_CALLS else str(call.expected))
    verdict = "fails" if fails(call.api, call.expected) else "succeeds"
    said = f"expected ({verdict})" if call.judged else "returned (not judged: the model had lost the state)"
    mark = '<span class="mark">◀ the failing call</span>' if failing else ""
    return (f'<li value="{n + 1}" class="{"failing" if failing else ""}"><code>{e(call)}</code> '
            f'<span class="ret">→ {e(expected)} {said}</span>{mark}</li>')


CSS = """
:root { --magic:#eceff3; --append:#cfe3ff; --cow:#ffe0b2; --wrong:#ffb4b4; --diff:#d32f2f; --ink:#1d2430;
  --muted:#667085; --line:#d9dee7; --fail:#fff1b8; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
  background: #f6f7f9; }
header { background: #1d2430; color: #fff; padding: 14px 24px; }
header h1 { margin: 0 0 4px; font-size: 20px; word-break: break-all; }
header p { margin: 0; color: #c9d1dc; }
main { padding: 16px 24px 40px; }
nav, section.failure { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 18px;
  margin-bottom: 18px; }
nav h2 { margin: 0 0 6px; font-size: 16px; }
nav ol { margin: 0; padding-left: 22px; }
section.failure > h2 { margin: 4px 0 6px; font-size: 18px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
h3.after { border-top: 2px solid var(--line); padding-top: 12px; }
h4 { margin: 10px 0 4px; font-size: 14px; }
.rule { display: inline-block; margin: 0 0 6px; padding: 2px 10px; border-radius: 12px; background: #eef2ff;
  color: #3538cd; font-weight: 600; }
.message code { display: block; padding: 8px 10px; background: #fff5f5; border-left: 4px solid var(--diff);
  white-space: pre-wrap; word-break: break-word; }
.note { color: var(--muted); font-style: italic; }
.passed { font-size: 16px; color: #067647; }
code, pre, .c, .chip { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
pre { background: #f3f4f6; padding: 8px; overflow-x: auto; white-space: pre-wrap; font-size: 12px; }
ol.program { margin: 0; padding: 6px 0 6px 44px; background: #fafbfc; border: 1px solid var(--line);
  border-radius: 6px; font-size: 12.5px; }
ol.program li { padding: 1px 6px; white-space: pre-wrap; word-break: break-all; }
ol.program li.preamble { color: var(--muted); }
ol.program li.failing { background: var(--fail); border-left: 4px solid #f79009; font-weight: 600; }
ol.program.printed { list-style: none; padding-left: 12px; }  /* unnumbered: the numbers on the page are calls' */
ol.program li.collapsed { color: var(--muted); list-style: none; font-style: italic; }
.mark { margin-left: 10px; color: #b54708; font-weight: 700; }
.ret { color: var(--muted); }
section.part { margin: 10px 0 14px; }
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
