"""oracle/program.py and oracle/finding.py: a call program as data and where a replay first broke a rule, the
same for every family (each family's own replay makes them)."""

from oracle.difference import CRASH, Difference
from oracle.finding import Finding
from oracle.hw3.programs import parse
from oracle.prefix.programs import BY_ITEM
from oracle.program import Program, Step


def test_a_program_is_its_steps_ops_and_arguments() -> None:
    program = parse("llm_init 128\ncreate_sequence 1 3\ncreate_sequence NULL 2 1\n", "fork")
    assert program.steps[1] == Step("create_sequence", (1, 3))
    assert program.steps[2].null and not program.steps[1].null
    assert program.ops == {"llm_init", "create_sequence"}
    touch = BY_ITEM["touch"]  # the prefix family's: the pool's creation is step 1
    assert touch.name == "touch" and touch.steps[0] == Step("start", (7, 4))
    assert touch.ops == {"start", "admit", "free"} and any(step.judge for step in touch.steps)


def test_a_finding_s_message_is_made_from_its_parts() -> None:
    found = Finding("touch", 3, "admit(req 1, tokens [1..8, 10])", Difference("ref count", "block 1", 2, 1), "touch")
    assert found.where == "touch: step 3 admit(req 1, tokens [1..8, 10])"
    assert found.message == "touch: step 3 admit(req 1, tokens [1..8, 10]): ref count: block 1: expected 2, got 1 [rule: touch]"
    crash = Finding("fuzz", 7, "free(req 2)", Difference(CRASH, "", None, "raised KeyError: 2"), "fuzz", program_step=4)
    # calls have one numbering everywhere (message, call list, repro): the printed program's line is the picture's
    assert crash.message == "fuzz: step 7 free(req 2): raised KeyError: 2 [rule: fuzz]"
    assert crash.step == 7 and crash.program_step == 4 and crash.problem == "raised KeyError: 2"


def test_a_finding_says_its_aspect_once_where_the_program_is_named_after_it() -> None:
    difference = Difference("no false hit", "hit 0 (block 1)", (1, 2), None)
    found = Finding("no false hit", 8, "get_computed_blocks(tokens [1, 2, 0])", difference, "no_false_hit")
    assert found.message.count("no false hit") == 1
    assert found.message.startswith("no false hit: step 8 get_computed_blocks(tokens [1, 2, 0]): hit 0 (block 1) holds ")
    other = Finding("touch", 8, "admit(req 1)", difference, "no_false_hit")  # another program: the aspect is said
    assert other.problem == str(difference) and other.problem.startswith("no false hit: hit 0")
