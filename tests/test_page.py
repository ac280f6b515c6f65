"""The HTML picture of an hw3 failing step (oracle/hw3/picture.py: its state as tables, drawn by the core's
oracle/tables.py and oracle/page_html.py), read back from real runs: `fuzz --html` on a broken engine, `grade
--out` on a broken C submission, and a replayed scenario with a 300-block pool and a 4096-record sequence. The
page is parsed, not grepped: the failing call is the marked line, the differing cells are the ones marked `diff`,
each pool slot's provenance is its cell's kind, and what did not change is collapsed."""

import dataclasses
import json
import re
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from oracle.cli import main
from oracle.hw3 import FAMILY, load_adapter
from oracle.hw3.checks import Finding
from oracle.hw3.replay import replay
from oracle.hw3.programs import parse as program
from oracle.hw3.resync import TrackedModel
from oracle.hw3.run import run
from oracle.difference import Difference
from oracle.hw3.difference import CRASH, POOL, POOL_SIZE
from oracle.hw3.model import Model
from oracle.hw3.observation import Observation
from oracle.hw3.pool import magic
from oracle.failed_item import FailedItem
from oracle.page import pictured
from oracle.page_html import render_html
from tests.conftest import broken_python
from tests.test_grade import small_rubric

VOID = {"meta", "br", "img", "hr", "input", "link"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list["Node"] = field(default_factory=list)
    parent: "Node | None" = None
    texts: list[str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    @property
    def text(self) -> str:
        return "".join(self.texts) + "".join(child.text for child in self.children)

    def all(self, tag: str, cls: str | None = None) -> list["Node"]:
        found = [self] if self.tag == tag and (cls is None or cls in self.classes) else []
        for child in self.children:
            found += child.all(tag, cls)
        return found


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.root = self.at = Node("root", {})

    def handle_starttag(self, tag: str, attrs: list) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, parent=self.at)
        self.at.children.append(node)
        if tag not in VOID:
            self.at = node

    def handle_endtag(self, tag: str) -> None:
        node = self.at
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None and node.parent is not None, f"unbalanced </{tag}>"
        self.at = node.parent

    def handle_data(self, data: str) -> None:
        self.at.texts.append(data)


def parse(page: str) -> Node:
    tree = _Tree()
    tree.feed(page)
    assert tree.at is tree.root, "the page leaves elements open"
    return tree.root


def rows(section: Node) -> dict[str, list[Node]]:
    """A grid's rows by their label (th.row): the cells of both sides (the gap cell left out)."""
    return {tr.all("th", "row")[0].text: [td for td in tr.all("td") if "gap" not in td.classes]
            for tr in section.all("tr") if tr.all("th", "row")}


def part(failure: Node, heading: str) -> Node:
    """The first table of the state right after the failing call whose name starts with `heading`."""
    (after,) = failure.all("div", "after")
    return next(s for s in after.all("section", "part") if s.all("h3")[0].text.startswith(heading))


def drawn(cells: list[Node]) -> list[Node]:
    """A row's cells without the empty cell that fills a short row out to the table's width."""
    return [c for c in cells if "none" not in c.classes or "absent" in c.classes]


def page_of(title: str, items: list[FailedItem]) -> str:
    """The page `grade --out` and `fuzz --html` write for hw3's items (oracle/page.py's write_page)."""
    return render_html(title, pictured(FAMILY, items))


def collapsed(section: Node) -> list[str]:
    return [tr.text for tr in section.all("tr", "collapsed")]


def assert_self_contained(page: str) -> None:
    """Nothing the browser would fetch: no script, stylesheet link, image, frame, url() or remote address."""
    tree = parse(page)
    for tag in ("script", "link", "img", "iframe", "object", "embed"):
        assert not tree.all(tag), tag
    assert all(a.attrs["href"].startswith("#") for a in tree.all("a"))
    assert "url(" not in page and "@import" not in page and "http://" not in page and "https://" not in page


def replay_line(program: list[str]) -> int:
    """The index of the program line whose execution raises, found by running it line by line."""
    namespace: dict = {}
    for index, line in enumerate(program):
        try:
            exec(line, namespace)
        except AssertionError:
            return index
    raise AssertionError("the program did not fail")


def test_fuzz_html_marks_the_failing_line_and_the_zeroed_slots(tmp_path: Path) -> None:
    page_path, json_path = tmp_path / "fuzz.html", tmp_path / "fuzz.json"
    argv = ["fuzz", "--impl", broken_python("zero_on_create"), "--examples", "20", "--steps", "15", "--seed", "1", "-q",
            "--html", str(page_path), "--json", str(json_path)]
    assert main(argv) == 1
    program = json.loads(json_path.read_text())["program"].splitlines()
    page = page_path.read_text()
    assert_self_contained(page)
    (failure,) = parse(page).all("section", "failure")
    assert "Rule: Constraint 4: No Premature Memory Modification" in failure.all("p", "rule")[0].text
    assert "expected" in failure.all("p", "message")[0].text
    marked = failure.all("ol", "program")[0].all("li", "failing")
    assert len(marked) == 1 and marked[0].all("code")[0].text == program[replay_line(program)]
    (call,) = failure.all("ol", "calls")[0].all("li", "failing")
    assert call.all("code")[0].text.startswith("create_sequence(engine, ")
    # create_sequence zeroed the block it mapped: the actual side's written slots are 0 and marked
    pool = rows(part(failure, "Pool"))
    cells = pool["block 0"]
    expected, actual = cells[:16], cells[16:]
    assert all("kind-magic" in c.classes for c in expected)
    wrong = [c for c in actual if "diff" in c.classes]
    assert wrong and all(c.text == "0" and "kind-wrong" in c.classes for c in wrong)
    assert [i for i, c in enumerate(expected) if "diff" in c.classes] == [i for i, c in enumerate(actual) if c in wrong]
    assert all(c.text == "·" for c in actual if "diff" not in c.classes)  # untouched: their own magic number


def test_grade_out_pictures_every_failed_item_with_its_cow_block(
    tmp_path: Path, submission: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    rubric = small_rubric(tmp_path / "rubric.toml", ["compiles", "append_cow"])
    out = tmp_path / "out"
    assert main(["grade", str(submission("broken", "append_cow")), "--rubric", str(rubric), "--out", str(out), "-q"]) == 1
    assert f"wrote {out / 'report.html'} (the failing steps, pictured)" in capsys.readouterr().out
    page = (out / "report.html").read_text()
    assert_self_contained(page)
    (failure,) = parse(page).all("section", "failure")  # compiles passed: no section
    assert failure.all("h2")[0].text == "Task 4: append_kv with copy-on-write"
    (call,) = failure.all("ol", "calls")[0].all("li", "failing")
    assert call.all("code")[0].text == "append_kv(engine, 2, 10)" and call.attrs["value"] == "7"
    # seq 1 held 17 records, so block 1 had one record and fifteen magic numbers; the fork's append copied
    # block 1 to block 2 with one record only: slot 0 copied, slot 1 appended, slots 2-15 left untouched
    pool = part(failure, "Pool")
    block = rows(pool)["block 2"]
    expected, actual = block[:16], block[16:]
    assert [c.text for c in expected[:2]] == ["3", "10"] and all(c.text == "b1" for c in expected[2:])
    assert [("kind-cow" in c.classes, "kind-append" in c.classes) for c in expected[:2]] == [(True, False), (False, True)]
    assert [i for i, c in enumerate(actual) if "diff" in c.classes] == list(range(2, 16))
    assert all(c.text == "·" and "kind-magic" in c.classes for c in actual[2:])  # never written: their own magic
    assert all("now" in c.classes for c in expected)  # the failing call wrote the whole block, in the model
    # everything else in the 24-block pool is the same on both sides: collapsed around block 2
    assert set(rows(pool)) == {"block 2"} and len(collapsed(pool)) == 2
    # both sequences' tables are the same on both sides: seq 1's collapsed whole, seq 2's but what the failing
    # append changed (its kv_count, and its L1[0] row, whose block 1 it copied to block 2)
    (after,) = failure.all("div", "after")
    seqs = [s for s in after.all("section", "part") if s.all("h3")[0].text.startswith("Block table of")]
    assert [s.all("h3")[0].text for s in seqs] == ["Block table of seq 1", "Block table of seq 2"]
    assert not [td for s in seqs for td in s.all("td") if "diff" in td.classes]
    assert not rows(seqs[0]) and collapsed(seqs[0]) == ["17 rows (kv_count … L1[15]): the same on both sides, unchanged"]
    count = drawn(rows(seqs[1])["kv_count"])
    assert list(rows(seqs[1])) == ["kv_count", "L1[0]"]
    assert [(c.text, "now" in c.classes) for c in count] == [("18", True), ("18", False)]
    assert [(c.text, c.attrs["title"]) for c in rows(seqs[1])["L1[0]"] if "now" in c.classes] == [
        ("2", "block_table[0][1]: logical block 1")]
    assert collapsed(seqs[1]) == ["15 rows (L1[1] … L1[15]): the same on both sides, unchanged"]


def test_grade_page_escapes_what_the_submission_prints_and_its_name(
    tmp_path: Path, submission: Callable[..., Path]
) -> None:
    student = tmp_path / "<i>student"
    student.mkdir()
    source = (submission("broken", "append_cow") / "llm_memory.c").read_text()
    source = source.replace("#include <string.h>", '#include <string.h>\n#include <stdio.h>', 1)
    marker = '<b id="injected">x</b>'
    source = re.sub(r"(int append_kv\([^)]*\)\s*\{)", lambda m: m[1] + f'\n    printf("%s\\n", "{marker.replace(chr(34), chr(92) + chr(34))}");', source, count=1)
    assert marker.replace('"', '\\"') in source
    (student / "llm_memory.c").write_text(source)
    rubric = small_rubric(tmp_path / "rubric.toml", ["append_cow"])
    out = tmp_path / "out"
    assert main(["grade", str(student), "--rubric", str(rubric), "--out", str(out), "-q"]) == 1
    page = (out / "report.html").read_text()
    assert "&lt;b id=&quot;injected&quot;&gt;x&lt;/b&gt;" in page and "&lt;i&gt;student" in page
    tree = parse(page)
    assert not tree.all("b") and not tree.all("i")


def _big_failure() -> FailedItem:
    """A real replay on a 300-block pool: seq 1 with 4095 records (256 blocks), its fork appended to, by an
    engine that writes the shared block in place instead of copying it."""
    scenario = program("llm_init 19200\ncreate_sequence 5 100\ncreate_sequence 1 4095\nfork_sequence 1 2\nfree_sequence 5\n"
                       "append_kv 2 7\n", "big")
    with closing(load_adapter(broken_python("no_cow"))()) as adapter:
        finding = replay(adapter, scenario)
    assert finding is not None and finding.step == 6
    return FailedItem("append_cow", "Task 4", finding.message, "", (), finding)


def big_page() -> str:
    return page_of("a 300-block pool", [_big_failure()])


def test_a_300_block_pool_and_a_4096_record_sequence_collapse_what_did_not_change() -> None:
    page = big_page()
    assert len(page) < 150_000
    (failure,) = parse(page).all("section", "failure")
    pool = part(failure, "Pool")
    # copy-on-write should have copied block 262 (seq 1's last) into block 0 (freed by seq 5): those two
    # blocks are drawn slot by slot, the 298 others as two collapsed rows
    assert set(rows(pool)) == {"block 0", "block 262"}
    assert [t.split(":")[0] for t in collapsed(pool)] == ["261 rows (block 1 … block 261)", "37 rows (block 263 … block 299)"]
    assert all("the same on both sides" in t for t in collapsed(pool)) and "4176 untouched magic" in collapsed(pool)[0]
    assert all(any("diff" in c.classes for c in cells) for cells in rows(pool).values())  # the two that differ
    new, shared = rows(pool)["block 0"], rows(pool)["block 262"]
    assert all(c.text == "b262" and "kind-cow" in c.classes for c in new[:15]) and new[15].text == "7"
    assert all("diff" in c.classes and c.text == "·" for c in new[16:])  # no copy: block 0 untouched
    assert [i for i, c in enumerate(shared[16:]) if "diff" in c.classes] == [15]  # written in place
    assert shared[31].text == "7" and shared[31].attrs["title"].endswith(f"expected {magic(262 * 16 + 15)}")
    # seq 1 is the same on both sides: collapsed whole; seq 2 (4096 records) differs in one entry, its kv_count
    # changed by the call, its other L1 rows the same on both sides
    same = part(failure, "Block table of seq 1")
    assert not rows(same) and collapsed(same) == ["17 rows (kv_count … L1[15]): the same on both sides, unchanged"]
    seq2 = part(failure, "Block table of seq 2")
    grid = rows(seq2)
    assert list(grid) == ["kv_count", "L1[15]"] and [c.text for c in drawn(grid["kv_count"])] == ["4096", "4096"]
    assert all("now" in c.classes for c in grid["kv_count"][:1])
    assert collapsed(seq2) == ["15 rows (L1[0] … L1[14]): the same on both sides, unchanged"]
    diffs = [(label, i) for label, cells in grid.items() for i, c in enumerate(cells) if "diff" in c.classes]
    assert diffs == [("L1[15]", 15), ("L1[15]", 31)]
    assert [grid["L1[15]"][15].text, grid["L1[15]"][31].text] == ["0", "262"]
    # ref_count: the rows that agree are collapsed, the two that differ drawn
    refs = part(failure, "ref_count")
    assert set(rows(refs)) == {"0–15", "256–271"}
    assert collapsed(refs) == ["15 rows (16–31 … 240–255): the same on both sides, unchanged",
                               "2 rows (272–287 … 288–299): the same on both sides, unchanged"]


def test_null_l1_slots_on_both_sides_collapse_into_one_row() -> None:
    scenario = program("llm_init 512\ncreate_sequence 1 20\nfork_sequence 1 2\nappend_kv 2 7\n", "small")
    with closing(load_adapter(broken_python("no_cow"))()) as adapter:
        finding = replay(adapter, scenario)
    page = page_of("small", [FailedItem("append_cow", "", finding.message, "", (), finding)])
    (failure,) = parse(page).all("section", "failure")
    # seq 1 the same on both sides: collapsed whole; seq 2's NULL L1 slots 1-15, the same on both sides: one row
    assert collapsed(part(failure, "Block table of seq 1")) == [
        "17 rows (kv_count … L1[15]): the same on both sides, unchanged"]
    seq2 = part(failure, "Block table of seq 2")
    assert collapsed(seq2) == ["15 rows (L1[1] … L1[15]): the same on both sides, unchanged"]
    assert set(rows(seq2)) == {"kv_count", "L1[0]"}
    assert len(rows(part(failure, "Pool"))) == 8  # a small pool is drawn whole


def test_a_page_without_failures_says_so() -> None:
    page = page_of("green", [])
    assert "Every item passed" in page and not parse(page).all("section", "failure")
    assert_self_contained(page)


def test_fuzz_html_errors_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["fuzz", "--html", str(tmp_path / "missing" / "x.html"), "-q"])
    assert exit.value.code == 2
    assert main(["fuzz", "--examples", "1", "--html", "/proc/pagedcheck.html", "-q"]) == 2
    assert "cannot write /proc/pagedcheck.html" in capsys.readouterr().err
    # a family that draws no page: refused before anything runs
    import oracle.commands.fuzz

    monkeypatch.setattr(oracle.commands.fuzz, "families", lambda: {"hw3": dataclasses.replace(FAMILY, picture=None)})
    assert main(["fuzz", "--html", str(tmp_path / "x.html"), "-q"]) == 2
    assert "the hw3 family draws no HTML page" in capsys.readouterr().err and not (tmp_path / "x.html").exists()


def test_long_runs_of_one_call_show_their_first_and_last_calls() -> None:
    bursts = "".join(f"append_kv 1 {k}\n" for k in range(20))
    scenario = program(f"llm_init 256\ncreate_sequence 1 1\n{bursts}fork_sequence 1 2\nappend_kv 2 9\n", "burst")
    with closing(load_adapter(broken_python("no_cow"))()) as adapter:
        finding = replay(adapter, scenario)
    page = page_of("burst", [FailedItem("append_cow", "", finding.message, "", (), finding)])
    listing = parse(page).all("ol", "calls")[0]
    numbers = [li.attrs["value"] for li in listing.all("li")]
    assert numbers == ["1", "2", "3", "4", "5", "21", "22", "23", "24"]  # calls 5-20 collapsed into one line
    assert listing.all("li", "collapsed")[0].text == "… 16 more calls (append_kv) …"
    assert [li.attrs["value"] for li in listing.all("li", "failing")] == ["24"]


def _graded(tmp_path: Path, fixture: Path, items: list[str]) -> Node:
    tmp_path.mkdir(exist_ok=True)
    rubric = small_rubric(tmp_path / "rubric.toml", items)
    assert main(["grade", str(fixture), "--rubric", str(rubric), "--out", str(tmp_path / "out"), "-q"]) == 1
    page = (tmp_path / "out" / "report.html").read_text()
    assert_self_contained(page)
    return parse(page)


def test_a_crash_shows_the_expected_side_only(tmp_path: Path, submission: Callable[..., Path]) -> None:
    (failure,) = _graded(tmp_path, submission("hostile", "segfault"), ["append_cow"]).all("section", "failure")
    assert "could not be read" in failure.all("p", "broken")[0].text
    pool = part(failure, "Pool")
    assert [th.text for th in pool.all("th", "side")] == ["Expected (the model)"]
    assert not [td for td in pool.all("td") if "diff" in td.classes]
    assert collapsed(pool) and not [t for t in collapsed(pool) if "both sides" in t]  # one side: nothing compared
    assert [li.attrs["value"] for li in failure.all("li", "failing")] == ["8"]  # the 5th append crashed


def test_an_item_without_a_failing_step_shows_its_rule_and_details(tmp_path: Path, submission: Callable[..., Path]) -> None:
    (failure,) = _graded(tmp_path, submission("hostile", "warning"), ["compiles"]).all("section", "failure")
    assert failure.all("p", "rule")[0].text.startswith("Rule: Compilation Standard")
    assert "unused variable" in failure.all("pre")[0].text and not failure.all("section", "part")


def test_an_engine_that_should_be_null_and_a_failing_call_that_allocates(
    tmp_path: Path, submission: Callable[..., Path]
) -> None:
    (init_failure,) = _graded(tmp_path / "a", submission("broken", "llm_init"), ["llm_init"]).all("section", "failure")
    engine = rows(part(init_failure, "Engine"))["engine"]
    assert [c.text for c in engine] == ["NULL (no engine)", "live"] and all("diff" in c.classes for c in engine)
    # no engine, no list on the model's side: the implementation's list row is marked
    listed = rows(part(init_failure, "Active list"))["head→next"]
    assert [(c.text, "absent" in c.classes) for c in listed] == [("absent", True), ("empty", False)]
    (alloc_failure,) = _graded(tmp_path / "b", submission("broken", "check_before_allocate"),
                               ["check_before_allocate"]).all("section", "failure")
    heap = rows(part(alloc_failure, "Engine"))["heap"]
    assert "diff" in heap[1].classes and heap[1].text.startswith("2 allocation(s) in the call")


def test_a_sequence_missing_from_the_list(tmp_path: Path, submission: Callable[..., Path]) -> None:
    """The C fuzz fixture refuses ids below -1000: its list lacks the sequence the model created."""
    with closing(load_adapter(str(submission("broken", "fuzz")))()) as adapter:
        finding = replay(adapter, program("llm_init 64\ncreate_sequence -1001 1\n", "negative_id"))
    page = page_of("missing", [FailedItem("create_free", "", finding.message, "", (), finding)])
    (failure,) = parse(page).all("section", "failure")
    listed = rows(part(failure, "Active list"))["head→next"]
    assert [(c.text, "diff" in c.classes) for c in listed] == [("seq -1001", True), ("empty", False)]
    table = part(failure, "Block table of seq -1001")  # the implementation has no such sequence: every row marked
    grid = rows(table)
    assert [c.text for c in drawn(grid["kv_count"])] == ["1", "absent"] and "diff" in grid["kv_count"][0].classes
    assert [c.text for c in drawn(grid["L1[1]"])] == ["NULL", "absent"] and "diff" in grid["L1[1]"][0].classes
    assert len(grid) == 17 and not collapsed(table)


def _observed_after(text: str) -> tuple[Model, Observation, list]:
    """The model and the reference engine's real observation after the program `text` (run.py's loop)."""
    model = TrackedModel()
    with closing(load_adapter("engine")()) as adapter:
        trace = run(program(text, "steps"), adapter, model)
        assert not any(ran.found for ran in trace.steps)
        return model, trace.steps[-1].seen, trace.calls


def test_guard_zones_tail_bytes_and_large_values() -> None:
    model, seen, calls = _observed_after("llm_init 141\ncreate_sequence 1 2\nappend_kv 1 2100000000\n")
    pool = bytearray(seen.pool)
    pool[-1] ^= 0xFF  # a byte past the last block
    seen = dataclasses.replace(seen, pool=bytes(pool), guard_after=b"\0" * 64)
    finding = Finding("tail", 3, calls[-1], Difference(POOL, "pool byte 140 (past the last block)", "0x7e", "0x81"),
                      "a rule", calls=calls, model=model, seen=seen)
    page = page_of("tail", [FailedItem("x", "", "m", "", (), finding)])
    (failure,) = parse(page).all("section", "failure")
    edges = rows(part(failure, "Pool edges"))
    assert [c.text for c in edges["guard zones"]] == ["intact", "overwritten"]
    assert [c.text for c in edges["bytes past the last block"]] == ["as llm_init left them", "overwritten"]
    assert all("diff" in c.classes for cells in edges.values() for c in cells)
    block = rows(part(failure, "Pool"))["block 0"]
    assert block[2].text == block[18].text == "2.1G" and "kind-append" in block[2].classes
    assert block[2].attrs["title"].endswith(": 2100000000 (written by append)")


def test_a_null_pool_and_a_program_without_a_step() -> None:
    model, seen, calls = _observed_after("llm_init NULL 640\n")
    finding = Finding("null_pool", 1, calls[0], Difference(CRASH, "", None, "(none: a picture of a NULL pool)"), "a rule",
                      calls=calls, model=model, seen=seen)
    page = page_of("null", [FailedItem("x", "", "m", "", (), finding),
                                       FailedItem("y", "", "m", "", ("state = M()", "state.init()"), None)])
    first, second = parse(page).all("section", "failure")
    pool = part(first, "Pool")
    assert pool.all("p", "note")[0].text.startswith("no pool") and not rows(pool)
    assert [li.text for li in second.all("li")] == ["state = M()", "state.init()"]
    assert not second.all("li", "failing")


def test_a_pool_the_implementation_does_not_show_is_not_compared() -> None:
    model, seen, calls = _observed_after("llm_init 1280\ncreate_sequence 1 2\n")
    finding = Finding("lost_pool", 2, calls[-1], Difference(POOL_SIZE, "pool", "the caller's pool", "none"), "a rule",
                      calls=calls, model=model, seen=dataclasses.replace(seen, pool=None))
    (failure,) = parse(page_of("lost", [FailedItem("x", "", "m", "", (), finding)])).all("section", "failure")
    assert "the implementation's pool could not be read" in failure.all("p", "broken")[0].text
    pool = part(failure, "Pool")  # not compared: the model's 20 blocks, collapsed, nothing marked
    assert not [td for td in pool.all("td") if "diff" in td.classes]
    assert [t.split(";")[0] for t in collapsed(pool)] == ["20 rows (block 0 … block 19): unchanged"]


def test_a_wild_l1_slot_is_drawn_as_one_marked_cell(tmp_path: Path, submission: Callable[..., Path]) -> None:
    """l1_not_nulled: create leaves its unused L1 slots as malloc filled them; each is drawn as one cell saying
    so, marked as a difference against the model's NULL (marked too)."""
    (failure,) = _graded(tmp_path, submission("broken", "l1_not_nulled"), ["create_free"]).all("section", "failure")
    tables = part(failure, "Block table of seq")
    wild = [td for td in tables.all("td") if td.text == "a wild pointer (unreadable)"]
    assert len(wild) == 15 and all("diff" in td.classes for td in wild)  # slots 1-15 of the one sequence
    nulls = [td for td in tables.all("td") if td.text == "NULL"]
    assert len(nulls) == 15 and all("diff" in td.classes for td in nulls)  # the model's side


def test_a_python_submissions_objects_are_not_compared_and_its_pool_is() -> None:
    """A Python submission's engine objects are never read (only its pool is its own): the page says so, draws
    the model's objects beside nothing, and compares the pool."""
    model, seen, calls = _observed_after("llm_init 128\ncreate_sequence 1 1\nappend_kv 1 5\n")
    pool = bytearray(seen.pool)
    pool[4:8] = (6).to_bytes(4, "little", signed=True)  # the appended record, as the submission wrote it
    seen = dataclasses.replace(seen, pool=bytes(pool), state_read=False)
    finding = Finding("unread", 3, calls[-1], Difference(POOL, "seq 1 record 1", "5", "6"), "a rule", calls=calls,
                      model=model, seen=seen)
    (failure,) = parse(page_of("unread", [FailedItem("x", "", "m", "", (), finding)])).all("section", "failure")
    assert any(p.text.startswith("Your engine's objects are not read") for p in failure.all("p", "note"))
    engine = rows(part(failure, "Engine"))
    assert [c.text for c in engine["engine"]] == ["live", "absent"]
    assert not [td for name in ("Engine", "Active list", "ref_count", "Block table of seq 1")
                for td in part(failure, name).all("td") if "diff" in td.classes]
    block = rows(part(failure, "Pool"))["block 0"]
    assert [i for i, c in enumerate(block) if "diff" in c.classes] == [1, 17]
    assert block[17].text == "6" and "kind-wrong" in block[17].classes and "kind-append" in block[1].classes
