"""The HTML page of a failure for the prefix and blockspace families (the core's page of their state tables:
oracle/page_html.py, oracle/scene.py, tables.py), read back from real runs: `fuzz --html` and `grade --out` on
broken copies of our engines (tests/broken_prefix/, tests/broken_blockspace/). The page is parsed: the failing
program line is the marked one, the failing call heads the state after it, the cells the bug makes differ are
the ones marked `diff`; then Debian's chromium loads each page without a console error and draws it."""

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from oracle.cli import main
from tests.conftest import ROOT, patched
from tests.test_blockspace_grade import student_copy
from tests.test_page import Node, assert_self_contained, parse, replay_line, rows
from tests.test_page_browser import browse, chromium, scanlines  # noqa: F401  (chromium: the fixture)


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory):
    """`broken(family, variant)`: the importable name of engine/<family> with that variant's patch applied."""
    root = tmp_path_factory.mktemp("pages_broken")
    sys.path.insert(0, str(root))

    def materialise(family: str, variant: str) -> Path:
        package = root / f"pages_{family}_{variant}"
        if not package.is_dir():
            engine = ROOT / "engine" / family
            shutil.copytree(engine, package, ignore=shutil.ignore_patterns("__pycache__"))
            patch = ROOT / "tests" / f"broken_{family}" / f"{variant}.patch"
            target = re.search(rf"^\+\+\+ b/engine/{family}/(\S+)", patch.read_text(), re.M)[1]
            (package / target).write_text(patched((engine / target).read_text(), patch))
        return package

    yield materialise
    sys.path.remove(str(root))


def after(failure: Node) -> dict[str, Node]:
    """The tables of the state right after the failing call, by name."""
    (state,) = failure.all("div", "after")
    return {part.all("h3")[0].text: part for part in state.all("section", "part")}


def before(failure: Node) -> dict[str, Node]:
    (state,) = failure.all("details", "before")
    return {part.all("h3")[0].text: part for part in state.all("section", "part")}


def marked(part: Node, cls: str = "diff") -> list[tuple[str, int, str]]:
    """(row, cell index over both sides, text) of every cell carrying `cls`."""
    return [(label, n, cell.text) for label, cells in rows(part).items() for n, cell in enumerate(cells)
            if cls in cell.classes]


def fuzzed(tmp_path: Path, family: str, impl: str, *options: str) -> tuple[Node, dict, str]:
    page, report = tmp_path / f"{family}.html", tmp_path / f"{family}.json"
    argv = ["fuzz", "--family", family, "--impl", impl, "--seed", "0", "-q", "--html", str(page), "--json", str(report),
            *options]
    assert main(argv) == 1
    text = page.read_text()
    assert_self_contained(text)
    (failure,) = parse(text).all("section", "failure")
    return failure, json.loads(report.read_text()), text


def test_prefix_fuzz_html_shows_the_index_entry_a_reused_block_kept(tmp_path: Path, broken) -> None:
    """eviction_keeps_index: a warm block taken for new tokens keeps its old index entry, so after the second
    pressure request the index points to block 1 twice where the model has it once."""
    impl = f"lab:{broken('prefix', 'eviction_keeps_index').name}"
    failure, report, _ = fuzzed(tmp_path, "prefix", impl, "--examples", "300", "--steps", "20")
    program = report["program"].splitlines()
    (line,) = failure.all("ol", "program")[0].all("li", "failing")
    assert line.all("code")[0].text == program[replay_line(program)] == "state.evict(count=0)"
    call = report["divergence"].split(":")[0]
    assert call == "admit(req 1, 2 tokens)"
    assert failure.all("h3", "after")[0].text == f"Right after {call}"
    tables = after(failure)
    assert list(tables) == ["Block tables", "Free queue", "Blocks"]
    # the index column of block 1: one entry expected, two found; nothing else differs
    assert marked(tables["Blocks"]) == [("block 1", 2, "×1"), ("block 1", 6, "×2")]
    assert not marked(tables["Block tables"]) and not marked(tables["Free queue"])
    # the call took block 1 (the free queue's only block) for req 1: its table, ref count and KV changed
    assert [c.text for c in rows(tables["Block tables"])["req 1"]] == ["1", "1"]
    assert ("block 1", 3, "[101, 101]") in marked(tables["Blocks"], "now")
    assert [c.text for c in rows(tables["Free queue"])["free"]] == ["empty", "empty"]
    # before the call: block 1 free and warm, indexed once on both sides, holding the first pressure's KV
    earlier = before(failure)
    assert [c.text for c in rows(earlier["Free queue"])["free"]] == ["1", "1"]
    assert [c.text for c in rows(earlier["Blocks"])["block 1"]] == ["0", "hashed", "×1", "[1, 1]"] * 2


def test_blockspace_fuzz_html_shows_the_shared_block_written_without_a_copy(tmp_path: Path, broken) -> None:
    """no_copy_on_write: append_slots writes a block two samples share instead of copying it."""
    impl = broken("blockspace", "no_copy_on_write").name + ".block_manager"
    failure, report, _ = fuzzed(tmp_path, "blockspace", impl, "--examples", "300", "--steps", "30")
    program = report["program"].splitlines()
    (line,) = failure.all("ol", "program")[0].all("li", "failing")
    assert line.all("code")[0].text == program[replay_line(program)] == "state.append(pick=0, tokens=1)"
    assert failure.all("h3", "after")[0].text == "Right after append_slots(seq 0) for its token 2"
    tables = after(failure)
    assert list(tables) == ["Block tables", "Block contents", "Free blocks", "Ref counts"]
    # seq 1 should keep the prompt block while seq 0 gets a copy: the implementation left them sharing it
    assert marked(tables["Block tables"]) == [("seq 1 (gpu)", 0, "0"), ("seq 1 (gpu)", 1, "1")]
    assert marked(tables["Free blocks"]) == [("gpu", 0, "1"), ("gpu", 1, "2")]
    assert marked(tables["Ref counts"]) == [("seq 0 (gpu)", 0, "1"), ("seq 0 (gpu)", 1, "2"),
                                            ("seq 1 (gpu)", 0, "1"), ("seq 1 (gpu)", 1, "2")]
    assert ("seq 0 (gpu)", 0, "[0, 1]") in marked(tables["Block contents"], "now")
    # before the call: one shared prompt block holding token 0, the same on both sides
    earlier = before(failure)
    assert [c.text for c in rows(earlier["Block contents"])["seq 1 (gpu)"]] == ["[0]", "[0]"]
    assert not any(marked(part) for part in earlier.values())


def test_grade_out_pictures_the_fuzz_item_of_both_families_and_the_prefix_directed_item(tmp_path: Path, broken,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    prefix = broken("prefix", "eviction_keeps_index")
    blockspace = student_copy(tmp_path / "student", str(ROOT / "tests" / "broken_blockspace" / "no_copy_on_write.patch"))
    for family, submission in (("prefix", str(prefix)), ("blockspace", str(blockspace / "block_manager.py"))):
        out = tmp_path / family
        assert main(["grade", "--family", family, submission, "--out", str(out), "-q"]) == 1
        assert f"wrote {out / 'report.html'} (the failing steps, pictured)" in capsys.readouterr().out
        page = (out / "report.html").read_text()
        assert_self_contained(page)
        sections = parse(page).all("section", "failure")
        (fuzz,) = [s for s in sections if s.all("h2")[0].text == "Stateful fuzzing against the model"]
        assert fuzz.all("p", "rule")[0].text.startswith("Rule: after every call of a random program")
        assert len(fuzz.all("ol", "program")[0].all("li", "failing")) == 1
        assert any(marked(part) for part in after(fuzz).values())
        pictured = {s.all("h2")[0].text for s in sections if s is not fuzz and s.all("div", "after")}
        if family == "blockspace":  # its scenario programs show their message and calls, without a state
            assert len(sections) > 1 and not pictured
            continue
        # the prefix family's directed item of the broken rule: its failing call replayed on the lab's program
        assert pictured == {"Eviction drops the hash and the index entry"}
        (eviction,) = [s for s in sections if s.all("h2")[0].text in pictured]
        assert eviction.all("h3", "after")[0].text == "Right after admit(req 1, tokens [50..61])"
        assert marked(after(eviction)["Blocks"]) == [("block 1", 2, "×1"), ("block 1", 6, "×2")]
        assert [c.text for c in rows(before(eviction)["Free queue"])["free"]] == ["3", "2", "1"] * 2


def test_chromium_loads_both_families_pages_and_draws_them(chromium: str, tmp_path: Path, broken) -> None:
    pages = [fuzzed(tmp_path, "prefix", f"lab:{broken('prefix', 'eviction_keeps_index').name}", "--examples", "300",
                    "--steps", "20"),
             fuzzed(tmp_path, "blockspace", broken("blockspace", "no_copy_on_write").name + ".block_manager",
                    "--examples", "300", "--steps", "30")]
    for n, (failure, _, _) in enumerate(pages):
        page = tmp_path / ("prefix.html", "blockspace.html")[n]
        dumped = browse(chromium, page, tmp_path / "profile", "--dump-dom")
        assert dumped.returncode == 0, dumped.stderr[-2000:]
        errors = [line for line in dumped.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
        assert not errors, errors
        (seen,) = parse(dumped.stdout).all("section", "failure")
        assert {name: marked(part) for name, part in after(seen).items()} == \
            {name: marked(part) for name, part in after(failure).items()}
        shot = tmp_path / f"page{n}.png"
        drawn = browse(chromium, page, tmp_path / "profile", "--hide-scrollbars", "--window-size=1200,900",
                       f"--screenshot={shot}")
        assert drawn.returncode == 0 and shot.is_file(), drawn.stderr[-2000:]
        lines = scanlines(shot.read_bytes())
        assert len(lines) == 900 and len(set(lines)) > 100  # text and tables, not one colour


def test_a_program_that_does_not_fail_again_gives_no_scene(tmp_path: Path, broken) -> None:
    """The picture is the failure replayed: the same program on the correct engine does not fail, so there is
    none (the page then shows the program alone)."""
    from oracle.page import fuzz_scene
    from oracle.prefix import FAMILY, load_adapter
    from oracle.shrink import parse as parse_program
    from oracle.stats import RunStats

    impl = f"lab:{broken('prefix', 'eviction_keeps_index').name}"
    _, report, _ = fuzzed(tmp_path, "prefix", impl, "--examples", "300", "--steps", "20")
    program = report["program"].splitlines()  # as printed, read back as data (oracle/shrink.py)
    steps = parse_program(FAMILY.machine_for(load_adapter(impl), RunStats()), program)
    scene = fuzz_scene(FAMILY, load_adapter(impl), steps)
    first = next(n for n, line in enumerate(program) if line.startswith("state = "))
    assert scene is not None and scene.call == "admit(req 1, 2 tokens)" and scene.line == replay_line(program) - first
    assert fuzz_scene(FAMILY, load_adapter("engine"), steps) is None


def test_a_run_that_agrees_writes_a_page_saying_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for family in ("prefix", "blockspace"):
        page = tmp_path / f"{family}.html"
        assert main(["fuzz", "--family", family, "--examples", "5", "--steps", "5", "--seed", "1", "-q",
                     "--html", str(page)]) == 0
        assert f"wrote {page} (no failing step to picture)" in capsys.readouterr().out
        text = page.read_text()
        assert_self_contained(text)
        assert "Every item passed" in text and not parse(text).all("section", "failure")


VARIANTS = [("prefix", p.stem) for p in sorted((ROOT / "tests" / "broken_prefix").glob("*.patch"))] + \
           [("blockspace", p.stem) for p in sorted((ROOT / "tests" / "broken_blockspace").glob("*.patch"))]


@pytest.mark.parametrize("family, variant", VARIANTS)
def test_before_the_failing_call_expected_and_actual_agree(family: str, variant: str, broken) -> None:
    """Every check passed before the failing call, so the state drawn before it shows no difference: what the
    machine derives from an observation (what each block holds) is read once it has derived it, not at the
    observation (read there, a free after an admit showed the admitted blocks' KV as differing)."""
    from oracle.family import families
    from oracle.page import fuzz_scene
    from oracle.runner import fuzz
    from oracle.tables import marks

    chosen = families()[family]
    name = broken(family, variant).name
    impl = f"lab:{name}" if family == "prefix" else f"{name}.block_manager"
    factory = chosen.load_adapter(impl)
    report = fuzz(chosen, impl, factory, examples=300, steps=20 if family == "prefix" else 30, seed=0)
    assert not report.passed
    scene = fuzz_scene(chosen, factory, report.failing)
    assert scene is not None and report.divergence.startswith(scene.call)
    if scene.before is None:  # the pool's creation failed: nothing came before it
        assert scene.line == 1
        return
    expected, actual = scene.before
    assert actual is not None and {t.name for t in actual} <= {t.name for t in expected}
    for mine in expected:  # (a manager without live sequences reports no ref counts: that table is one-sided)
        drawn = marks([mine, next((t for t in actual if t.name == mine.name), None)])
        assert not drawn.diff[0] and not drawn.diff[1], (mine.name, sorted(drawn.diff[0]))
