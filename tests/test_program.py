"""oracle/program.py's `read`: a program file typed by a family's signatures (ints, floats, literal words, optional
arguments at the end), and the line named when one is not a call."""

import pytest

from oracle.program import ProgramError, Step, read, write

SIGNATURES = {"begin": "int float", "move": "int word?", "stop": ""}


def test_each_line_is_a_step_of_the_arguments_its_signature_takes():
    program = read("begin 4 0.5\n# a comment\n\nmove 1\nmove 2 word  # the optional word\nstop\n", "p", SIGNATURES)
    assert program.steps == (Step("begin", (4, 0.5)), Step("move", (1,)), Step("move", (2, "word")), Step("stop"))
    assert read("begin 4 1\n", "p", SIGNATURES).steps == (Step("begin", (4, 1)),)  # an int is a float too


@pytest.mark.parametrize("text, line", [
    ("begin 4\n", "line 1: not a call: 'begin 4'"),  # too few
    ("begin 4 0.5 6\n", "line 1: not a call: 'begin 4 0.5 6'"),  # too many
    ("begin 4.5 0.5\n", "line 1: not a call: 'begin 4.5 0.5'"),  # a float where an int goes
    ("begin 4 0.5\nmove 1 other\n", "line 2: not a call: 'move 1 other'"),  # another word
    ("begin 4 0.5\nmove x\n", "line 2: not a call: 'move x'"),
    ("begin 4 0.5\nleap 1\n", "line 2: not a call: 'leap 1'"),  # no such operation
    ("stop\n", "starts with one `begin` line"),
])
def test_a_line_that_is_not_a_call_is_named(text, line):
    with pytest.raises(ProgramError, match=line):
        read(text, "p", SIGNATURES)


def test_null_right_after_the_operation_makes_a_null_handle_step_and_write_reads_back() -> None:
    program = read("begin 4 0.5\nmove NULL 1\nmove 2 word\nstop NULL\n", "p", SIGNATURES)
    assert program.steps[1:] == (Step("move", (1,), null=True), Step("move", (2, "word")), Step("stop", (), null=True))
    assert read(write(program), "p", SIGNATURES) == program


def test_a_family_may_let_a_program_open_with_any_call_and_repeat_it() -> None:
    program = read("move 1\nbegin 4 0.5\nbegin 5 1\n", "p", SIGNATURES, opens=False)
    assert [step.op for step in program.steps] == ["move", "begin", "begin"]
    with pytest.raises(ProgramError, match="p: no call in it"):
        read("# only a comment\n", "p", SIGNATURES, opens=False)


def test_runs_any_number_of_ints_and_judged_steps():
    signatures = {"begin": "int", "take": "int int..."}
    program = read("begin 2\n* take 1 4..6 9  # judged\ntake 3\n", "p", signatures)
    assert program.steps == (Step("begin", (2,)), Step("take", (1, 4, 5, 6, 9), judge=True), Step("take", (3,)))
    for bad in ("take 1 6..4", "take 1 x..4", "take", "* take 1 2.5"):
        with pytest.raises(ProgramError, match="line 2: not a call"):
            read(f"begin 2\n{bad}\n", "p", signatures)
