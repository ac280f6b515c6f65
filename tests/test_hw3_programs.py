"""oracle/hw3/programs.py: HW3's directed programs are files in oracle/hw3/programs/, each rubric item names its
programs (a course names its own, beside its rubric), and a bad program file is one line naming it and its line."""

from pathlib import Path

import pytest

from oracle.cli import main
from oracle.grading.rubric import RubricError
from oracle.hw3 import programs
from oracle.hw3.checks import CHECKS
from oracle.hw3.grade import grade, load
from oracle.hw3.step import expected_calls
from oracle.program import ProgramError, Step, write
from tests.conftest import broken_python

FOLDER = Path(programs.__file__).with_name("programs")


def test_every_program_file_is_read_and_named_by_an_item_the_battery_or_alloc_failure() -> None:
    named = {name for names in programs.BY_ITEM.values() for name in names} | {programs.ALLOCATING}
    files = {path.stem for path in FOLDER.glob("*.txt")}
    assert files == named
    assert {path.stem for path in (FOLDER / "battery").glob("*.txt")} == set(programs.BATTERY)
    for name in named:
        program = programs.load(name)
        assert program.name == name and program.steps
    for name in programs.BATTERY:
        assert programs.battery_program(name).steps


def test_each_directed_item_runs_the_programs_its_option_names() -> None:
    rubric = load()
    for item in rubric.items:
        if item.id in programs.BY_ITEM:
            assert [p.name for p in item.options["programs"]] == list(programs.BY_ITEM[item.id])
            assert CHECKS[item.id].options["programs"] == list(programs.BY_ITEM[item.id])
    assert set(programs.BY_ITEM) <= set(CHECKS)


def test_a_program_file_reads_null_handles_and_writes_back_as_read() -> None:
    text = "llm_init NULL 640\nllm_init 640  # 10 blocks\ncreate_sequence 1 -3\ncreate_sequence NULL 2 1\nllm_destroy\n"
    program = programs.parse(text, "p")
    assert program.steps == (Step("llm_init", (640,), null=True), Step("llm_init", (640,)),
                             Step("create_sequence", (1, -3)), Step("create_sequence", (2, 1), null=True),
                             Step("llm_destroy"))
    assert programs.parse(write(program), "p") == program


def test_the_model_expects_null_where_no_engine_is_live() -> None:
    calls, model = expected_calls(programs.parse("create_sequence 0 1\nllm_init 0\ncreate_sequence 0 1\n"
                                                 "llm_init 640\ncreate_sequence 0 1\nllm_destroy\nfree_sequence 0\n", "p"))
    assert [(c.api, c.null, c.expected) for c in calls] == [
        ("create_sequence", True, False), ("llm_init", False, False), ("create_sequence", True, False),
        ("llm_init", False, True), ("create_sequence", False, True), ("llm_destroy", False, 0),
        ("free_sequence", True, -1)]
    assert not model.live


@pytest.mark.parametrize("text, said", [
    ("llm_init 640\ncreate_sequence 1\n", "bad.txt, line 2: not a call: 'create_sequence 1'"),
    ("llm_init 640\n\n# c\nappend_kv 1 x\n", "bad.txt, line 4: not a call: 'append_kv 1 x'"),
    ("llm_init 640\nmalloc 3\n", "bad.txt, line 2: not a call: 'malloc 3'"),
    ("llm_init 6.5\n", "bad.txt, line 1: not a call: 'llm_init 6.5'"),
    ("llm_init 640\ncreate_sequence 2147483648 1\n", "bad.txt, line 2: 2147483648 is outside create_sequence's range"),
    ("llm_init -64\n", "bad.txt, line 1: -64 is outside llm_init's range 0 to 67108864"),
    ("# nothing\n", "bad.txt: no call in it"),
])
def test_a_bad_program_file_is_named_with_its_line(text: str, said: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ProgramError) as error:
        programs.read_file(path)
    assert said in str(error.value) and "\n" not in str(error.value)


def _course(tmp_path: Path, item: str, names: list[str], files: dict[str, str]) -> Path:
    (tmp_path / "programs").mkdir()
    for name, text in files.items():
        (tmp_path / "programs" / f"{name}.txt").write_text(text)
    path = tmp_path / "course.toml"
    path.write_text(f'[[item]]\nid = "{item}"\npoints = 4\n[item.options]\nprograms = {names!r}\n'.replace("'", '"'))
    return path


def test_a_course_names_its_own_programs_beside_its_rubric_and_the_shipped_ones(tmp_path: Path) -> None:
    path = _course(tmp_path, "tail_insertion", ["two_sequences", "tail_insertion"],
                   {"two_sequences": "llm_init 640\ncreate_sequence 1 1\ncreate_sequence 2 1\n"})
    (item,) = load(path).items
    ours, shipped = item.options["programs"]
    assert ours.name == "two_sequences" and ours.steps[2] == Step("create_sequence", (2, 1))
    assert shipped == programs.load("tail_insertion")


def test_a_course_program_is_what_the_item_runs(tmp_path: Path) -> None:
    """no_cow's append writes a block it shares with a fork in place: the course's fork-then-append program shows
    it at its append, and the failure names that program."""
    path = _course(tmp_path, "append_cow", ["shared_append"],
                   {"shared_append": "llm_init 640\ncreate_sequence 1 1\nfork_sequence 1 2\nappend_kv 2 7\n"})
    report = grade(broken_python("no_cow"), load(path), tmp_path / "out")
    (item,) = report.items
    assert item.status == "failed" and item.message.startswith("shared_append: step 4 append_kv(engine, 2, 7)"), item.message


@pytest.mark.parametrize("names, files, said", [
    (["missing"], {}, "item 'tail_insertion': no program 'missing': no missing.txt in"),
    (["bad"], {"bad": "llm_init 640\nfree_sequence\n"}, "programs/bad.txt, line 2: not a call: 'free_sequence'"),
    (["../escape"], {}, "option 'programs' must be a non-empty list of program names"),
    ([], {}, "option 'programs' must be a non-empty list of program names"),
])
def test_a_bad_course_program_is_one_line_and_exit_2(names: list[str], files: dict[str, str], said: str,
                                                     tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _course(tmp_path, "tail_insertion", names, files)
    with pytest.raises(RubricError, match="rubric .*course.toml: "):
        load(path)
    assert main(["grade", "engine", "--rubric", str(path)]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
