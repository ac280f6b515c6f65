"""The HTML page of a run's failures, for any family: one self-contained file, inline CSS, no script, nothing
fetched. The frame (title, the list of failed items), the rule and message on top, the printed program with the
failing line marked, the calls made with the failing one marked (where the family lists them), and each failing
call with the state before it and right after it, expected beside actual, drawn as tables (oracle/tables.py).
Every text goes through html.escape.
"""

import re

from oracle.failed_item import FailedItem
from oracle.scene import Scene
from oracle.tables import CSS as TABLES_CSS, draw_state, e, runs

_STATE_LINE = re.compile(r"^state = \w+\(\)$")
INTRO = ("pagedcheck: the failing step of each failed item, expected (the model) beside actual "
         "(the implementation), right after the failing call.")


def frame(title: str, body: str, css: str, intro: str = INTRO) -> str:
    """The page around `body`: its title, a line saying what it shows, and its style."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{e(title)}</title>'
            f'<style>{css}</style></head><body><header><h1>{e(title)}</h1>'
            f'<p>{e(intro)}</p></header><main>{body}</main></body></html>\n')


def contents(items: list[FailedItem]) -> str:
    """The list of failed items linking to their sections, or the line saying that everything passed."""
    toc = "".join(f'<li><a href="#item-{n}">{e(item.name)}</a>: {e(item.message)}</li>' for n, item in enumerate(items))
    return (f'<nav><h2>{len(items)} failed</h2><ol>{toc}</ol></nav>' if items
            else '<p class="passed">Every item passed: there is no failing step to show.</p>')


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


def render_html(title: str, items: list[FailedItem]) -> str:
    """The page of a family that draws its state as tables: each item's evidence, when it is a Scene."""
    body = contents(items) + "".join(_section(n, item) for n, item in enumerate(items))
    intro = ("pagedcheck: each failing call, with the state before it and right after it, expected (the model) "
             "beside actual (the implementation); cells that differ are outlined in red, cells the call changed "
             "are underlined.")
    return frame(title, body, CSS, intro)


def _section(number: int, item: FailedItem) -> str:
    scene = item.evidence if isinstance(item.evidence, Scene) else None
    parts = [f'<h2>{e(item.name)}</h2>']
    rule = scene.rule if scene is not None and scene.rule else item.rule
    if rule:
        parts.append(f'<p class="rule">Rule: {e(rule)}</p>')
    parts.append(f'<p class="message"><code>{e(item.message)}</code></p>')
    if scene is not None:
        parts += [f'<p class="note">{e(note)}</p>' for note in scene.notes]
    if item.program:
        parts.append(f'<h3>The program</h3>{program(item.program, scene.line if scene else 0)}')
    if scene is not None and scene.calls:
        listed = calls(scene.calls, scene.step)
        parts.append(f'<details><summary>Its calls ({len(scene.calls)})</summary>{listed}</details>' if item.program
                     else f"<h3>The calls</h3>{listed}")
    if scene is not None:
        expected, actual = scene.after
        call = f"<code>{e(scene.call)}</code>" if scene.call else "the failing call"
        if scene.before is not None:
            parts.append(f'<details class="before" open><summary>The state before {call}</summary>'
                         f'{draw_state(*scene.before)}</details>')
        parts.append(f'<h3 class="after">Right after {f"call {scene.step}: " if scene.step else ""}{call}</h3>')
        if actual is None:
            parts.append('<p class="broken">The implementation\'s state could not be read after this call: only '
                         "the expected state is shown.</p>")
        parts += [f'<p class="broken">{e(what)}</p>' for what in scene.broken]
        parts.append(f'<div class="after">{LEGEND}{draw_state(expected, actual, scene.before or ())}</div>')
    if item.details:
        parts.append(f'<details><summary>Details</summary><pre>{e(item.details)}</pre></details>')
    return f'<section class="failure" id="item-{number}">{"".join(parts)}</section>'


LONG_RUN = 10  # consecutive calls of one name from which a listing shows only both ends
RUN_ENDS = 2


def calls(listed: tuple[tuple[str, str], ...], step: int) -> str:
    """The calls up to the failing one (`step`, 1-based), numbered, each with what the model said it returns,
    the failing one marked; long runs of calls of one name (an append burst, say) show their ends only."""
    names = [text.partition("(")[0] for text, _ in listed]
    keep = set(range(len(listed))) | {step - 1, step - 2}
    start = 0
    while start < len(listed):
        stop = start
        while stop < len(listed) and names[stop] == names[start]:
            stop += 1
        if stop - start >= LONG_RUN:
            keep -= set(range(start + RUN_ENDS, stop - RUN_ENDS)) - {step - 1, step - 2}
        start = stop
    rows = []
    for start, stop, kept in runs(len(listed), keep.__contains__):
        if not kept:
            rows.append(f'<li class="collapsed" value="{start + 1}">… {stop - start} more calls '
                        f'({e(", ".join(dict.fromkeys(names[start:stop])))}) …</li>')
            continue
        for n in range(start, stop):
            failing = n == step - 1
            mark = '<span class="mark">◀ the failing call</span>' if failing else ""
            rows.append(f'<li value="{n + 1}" class="{"failing" if failing else ""}"><code>{e(listed[n][0])}</code> '
                        f'<span class="ret">→ {e(listed[n][1])}</span>{mark}</li>')
    return f'<ol class="program calls">{"".join(rows)}</ol>'


LEGEND = ('<div class="legend"><span><span class="c v diff">7</span> differs between expected and actual</span>'
          '<span><span class="c v now">7</span> changed by the failing call</span>'
          '<span><span class="c none absent">absent</span> no such row on this side</span></div>')

BASE_CSS = """
:root { --diff:#d32f2f; --ink:#1d2430;
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
"""
CSS = BASE_CSS + TABLES_CSS + """
th.col { font-size: 11px; color: #667085; font-weight: 500; text-align: center; }
details.before { margin: 10px 0; }
.broken { color: var(--diff); font-weight: 600; }
.none { color: var(--muted); }
"""
