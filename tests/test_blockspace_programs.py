"""The paper's scenarios (oracle/blockspace/programs/*.txt) on our engine: each runs clean and does what its
comments say; and the program reader's errors."""

import pytest

from oracle.blockspace import load_adapter
from oracle.blockspace.driver import Driver
from oracle.blockspace.programs import BY_ITEM, FOLDER, OPERATIONS, SIGNATURES, load, replay
from oracle.program import ProgramError, Step, read


def run(driver: Driver, step: Step) -> None:
    OPERATIONS[step.op](driver, *step.args)


def events(name: str) -> tuple[Driver, dict]:
    driver = Driver(load_adapter("engine")())
    for step in load(name).steps:
        run(driver, step)
    return driver, driver.stats.events


def test_every_program_file_belongs_to_an_item_and_runs_clean_on_the_engine():
    names = {n for names in BY_ITEM.values() for n in names}
    assert names == {path.stem for path in FOLDER.glob("*.txt")}
    for name in sorted(names):
        calls: list[str] = []
        assert replay(load(name), load_adapter("engine")(), calls) is None, name
        assert len(calls) == len(load(name).steps)


def test_the_7_token_prompt_takes_a_new_block_only_when_the_last_is_full():
    driver = Driver(load_adapter("engine")())
    steps = load("prompt_7_tokens").steps
    for step in steps[:3]:
        run(driver, step)
    assert [len(driver.tables[0])] == [2] and driver.worker.blocks["gpu"][driver.tables[0][1]] == (4, 5, 6)
    run(driver, steps[3])
    assert len(driver.tables[0]) == 2
    run(driver, steps[4])
    assert len(driver.tables[0]) == 3 and driver.worker.blocks["gpu"][driver.tables[0][2]] == (8,)


def test_parallel_sampling_copies_on_write_twice():
    assert events("parallel_sampling")[1]["copy_on_write"] == 2


def test_beam_search_and_the_shared_prompt_end_with_every_block_free():
    for name in ("beam_search", "shared_prefix"):
        driver, _ = events(name)
        assert driver.model.seqs == {} and driver.last["free"][0] == driver.model.total["gpu"], name


def test_swap_preemption_is_refused_then_done_both_ways():
    _, seen = events("swap_preemption")
    assert (seen["swap_out_ok"], seen["swap_out_refused"], seen["swap_in_ok"], seen["swap_in_refused"]) == (2, 1, 2, 1)


def test_recompute_preemption_frees_the_group_and_allocates_its_tokens_again():
    driver, seen = events("recompute_preemption")
    assert seen["append_refused"] == 2 and driver.stats.rules["recompute"] == 1 and seen["can_allocate_OK"] == 3
    assert driver.model.seqs == {} and driver.last["free"] == [5, 4]


def test_watermark_answers_never_never_ok_later_ok_ok():
    _, seen = events("watermark")
    assert (seen["can_allocate_NEVER"], seen["can_allocate_LATER"], seen["can_allocate_OK"]) == (2, 1, 3)


@pytest.mark.parametrize("text, why", [
    ("arrive 3\n", "starts with one `start`"),
    ("start 4 8 8 0\nstart 4 8 8 0\n", "starts with one `start`"),
    ("start 4 8 8 0\nappend\n", "line 2: not a call"),
    ("start 4 8 8 0\nfork 0 old\n", "line 2: not a call: 'fork 0 old'"),
    ("start 4 8 8 x\n", "line 1: not a call: 'start 4 8 8 x'"),
    ("start 4 8 8 0\nfree 1.5\n", "line 2: not a call: 'free 1.5'"),
    ("start 4 8.5 8 0\n", "line 1: not a call: 'start 4 8.5 8 0'"),
    ("start 4 8 8 0\nteleport 1\n", "line 2: not a call"),
])
def test_a_bad_program_is_refused_naming_the_line(text, why):
    with pytest.raises(ProgramError, match=why):
        read(text, "bad", SIGNATURES)


def test_comments_and_blank_lines_are_skipped_and_fork_new_is_read():
    program = read("# a comment\n\nstart 4 8 8 0.5  # four numbers\nfork 0 new\n", "ok", SIGNATURES)
    assert [(s.op, s.args) for s in program.steps] == [("start", (4, 8, 8, 0.5)), ("fork", (0, "new"))]
