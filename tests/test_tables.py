"""The core's drawing of a state as named tables (oracle/tables.py), on plain values: which cells are marked as
differing between expected and actual (`diff`) and as changed by the call (`now`), rows one side lacks, what is
collapsed, and that every value is escaped. The page is parsed, not grepped."""

from oracle.tables import SHOW_ALL_ROWS, Cell, Kind, Table, draw_state, draw_table, marks
from tests.test_page import parse, rows


def cells(html: str) -> dict[str, list[tuple[str, set[str]]]]:
    """Each row's cells (both sides, the gap left out) as (text, classes)."""
    return {label: [(c.text, c.classes) for c in row] for label, row in rows(parse(html)).items()}


def test_a_cell_that_differs_is_marked_on_both_sides_and_nothing_else_is() -> None:
    expected = Table("free queue", {"free": (1, 2, 3)})
    actual = Table("free queue", {"free": (1, 3, 2)})
    drawn = cells(draw_table([expected, actual], marks([expected, actual])))
    assert [text for text, _ in drawn["free"]] == ["1", "2", "3", "1", "3", "2"]
    assert [("diff" in classes) for _, classes in drawn["free"]] == [False, True, True, False, True, True]


def test_cells_the_call_changed_are_marked_now_on_their_own_side() -> None:
    before = Table("t", {"req 0": (1,), "req 1": (2,)})
    expected = Table("t", {"req 0": (1, 4), "req 1": (2,)})
    actual = Table("t", {"req 0": (1, 5), "req 1": (7,)})
    drawn = cells(draw_table([expected, actual], marks([expected, actual], [before, before])))
    # req 0's new entry: changed on both sides, and differing; req 1: only the actual side changed it
    assert [sorted(c & {"diff", "now"}) for _, c in drawn["req 0"]] == [[], ["diff", "now"], [], ["diff", "now"]]
    drawn_cells = [c for _, c in drawn["req 1"] if "none" not in c]  # less the padding to the widest row
    assert [sorted(c & {"diff", "now"}) for c in drawn_cells] == [["diff"], ["diff", "now"]]


def test_a_table_the_state_before_lacks_is_all_the_calls() -> None:
    before = (Table("Engine", {"free": (3,)}),)
    after = before + (Table("Block table of seq 0", {"kv_count": (1,), "L1[0]": (0, -1)}),)
    tree = parse(draw_state(after, None, (before, None)))
    new = rows(tree.all("section", "part")[1])
    assert [[("now" in c.classes) for c in cells if "none" not in c.classes] for cells in new.values()] == [
        [True], [True, True]]
    assert not [td for td in tree.all("section", "part")[0].all("td") if "now" in td.classes]


def test_a_row_one_side_lacks_is_drawn_absent_and_the_other_sides_cells_differ() -> None:
    expected = Table("block tables", {"req 0": (1, 2)})
    actual = Table("block tables", {"req 0": (1, 2), "req 1": (3,)})
    drawn = cells(draw_table([expected, actual], marks([expected, actual])))
    assert drawn["req 1"][0] == ("absent", {"c", "none", "absent"})
    assert drawn["req 1"][1][0] == "3" and "diff" in drawn["req 1"][1][1]
    assert not any("diff" in c for _, c in drawn["req 0"])


def test_a_shorter_row_differs_where_the_other_has_cells_and_is_padded() -> None:
    expected, actual = Table("t", {"r": (1, 2, 3)}), Table("t", {"r": (1,)})
    drawn = cells(draw_table([expected, actual], marks([expected, actual])))
    assert [("diff" in c) for _, c in drawn["r"][:3]] == [False, True, True]
    assert "diff" not in drawn["r"][3][1] and "none" in drawn["r"][4][1]  # actual's 1, then the padding


def test_a_cells_title_is_shown_on_hover_and_never_compared() -> None:
    expected = Table("blocks", {"block 1": (Cell("hashed", "hash [1, 2]"),)})
    actual = Table("blocks", {"block 1": (Cell("hashed", "hash 0x5eed"),)})
    tree = parse(draw_table([expected, actual], marks([expected, actual])))
    tds = [td for td in tree.all("td") if "gap" not in td.classes]
    assert [td.attrs["title"] for td in tds] == ["hash [1, 2]", "hash 0x5eed"]
    assert not [td for td in tds if "diff" in td.classes]


def test_a_long_table_collapses_the_rows_where_nothing_is_marked() -> None:
    count = SHOW_ALL_ROWS + 10
    expected = Table("blocks", {f"block {b}": (0,) for b in range(count)})
    actual = Table("blocks", {f"block {b}": (1 if b == 15 else 0,) for b in range(count)})
    tree = parse(draw_table([expected, actual], marks([expected, actual])))
    assert list(rows(tree)) == ["block 15"]
    assert [tr.text for tr in tree.all("tr", "collapsed")] == [
        "15 rows (block 0 … block 14): the same on both sides, unchanged",
        f"{count - 16} rows (block 16 … block {count - 1}): the same on both sides, unchanged"]


def test_one_side_only_draws_the_expected_state_and_marks_no_difference() -> None:
    expected = Table("free blocks", {"gpu": (3,), "cpu": (0,)})
    tree = parse(draw_state((expected,), None))
    assert [th.text for th in tree.all("th", "side")] == ["Expected (the model)"]
    assert not [td for td in tree.all("td") if "diff" in td.classes]
    assert [td.text for td in tree.all("td")] == ["3", "0"]


def test_every_table_of_either_side_is_drawn_under_its_name_with_its_note_and_columns() -> None:
    expected = (Table("Free queue", {"free": ()}, "head first"), Table("Blocks", {"block 0": (0, "—")}, "",
                                                                         ("ref count", "hash")))
    actual = (Table("Blocks", {"block 0": (1, "—")}, "", ("ref count", "hash")), Table("Extra", {"x": (1,)}))
    tree = parse(draw_state(expected, actual))
    parts = tree.all("section", "part")
    assert [p.all("h3")[0].text for p in parts] == ["Free queue", "Blocks", "Extra"]
    assert parts[0].all("p", "note")[0].text == "head first"
    assert [c.text for c in rows(parts[0])["free"]] == ["empty", "absent"]
    assert [th.text for th in parts[1].all("th", "col")] == ["ref count", "hash"] * 2
    assert [("diff" in c.classes) for c in rows(parts[1])["block 0"]] == [True, False, True, False]
    assert [c.text for c in rows(parts[2])["x"]] == ["absent", "1"]


def test_a_cells_kind_is_its_class_in_its_tone_explained_by_the_legend_and_counted_when_collapsed() -> None:
    kinds = (Kind("magic", "untouched magic", "muted", "·"), Kind("append", "written by append", "blue"))
    count = SHOW_ALL_ROWS + 4
    table = Table("Pool", {f"block {b}": (Cell(b, kind="append" if b == 0 else "magic"), Cell(9, kind="magic"))
                           for b in range(count)}, kinds=kinds)
    other = Table("Pool", {**table.rows, "block 5": (Cell(7, kind="magic"), Cell(9, kind="magic"))}, kinds=kinds)
    tree = parse(draw_state((table,), (other,)))
    legend = tree.all("div", "legend")[0].all("span", "c")
    assert [(c.text, sorted(c.classes - {"c", "v"})) for c in legend] == [
        ("·", ["kind-magic", "tone-muted"]), ("7", ["kind-append", "tone-blue"])]
    assert list(rows(tree)) == ["block 5"] and "kind-magic" in rows(tree)["block 5"][0].classes
    assert [tr.text for tr in tree.all("tr", "collapsed")] == [
        "5 rows (block 0 … block 4): the same on both sides, unchanged; on the model's side: "
        "9 untouched magic, 1 written by append",
        f"{count - 6} rows (block 6 … block {count - 1}): the same on both sides, unchanged; on the model's side: "
        f"{2 * (count - 6)} untouched magic"]


def test_a_cells_short_form_is_drawn_and_its_value_compared() -> None:
    expected = Table("Pool", {"block 0": (Cell(2100000000, shown="2.1G"), Cell(-1, shown="·"))})
    actual = Table("Pool", {"block 0": (Cell(2100000001, shown="2.1G"), Cell(-1, shown="·"))})
    drawn = cells(draw_table([expected, actual], marks([expected, actual])))
    assert [(text, "diff" in c) for text, c in drawn["block 0"]] == [
        ("2.1G", True), ("·", False), ("2.1G", True), ("·", False)]


def test_a_table_one_side_does_not_show_is_not_compared() -> None:
    count = SHOW_ALL_ROWS + 3
    pool = Table("Pool", {f"block {b}": (b,) for b in range(count)})
    tree = parse(draw_state((pool, Table("Engine", {"free": (3,)})), (Table("Engine", {"free": (3,)}),)))
    part = tree.all("section", "part")[0]
    assert not [td for td in tree.all("td") if "diff" in td.classes]
    assert [tr.text for tr in part.all("tr", "collapsed")] == [f"{count} rows (block 0 … block {count - 1}): unchanged"]


def test_values_and_labels_are_escaped() -> None:
    hostile = '<b id="x">'
    table = Table(hostile, {hostile: (hostile, Cell(1, hostile))}, hostile)
    html = draw_state((table,), (table,))
    tree = parse(html)
    assert not tree.all("b") and "&lt;b id=&quot;x&quot;&gt;" in html
    assert tree.all("h3")[0].text == hostile and rows(tree)[hostile][0].text == hostile
