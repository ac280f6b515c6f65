"""The shape check of a served reply (oracle/reply_shape.py), on plain values, and where it stands: a served method's
answer of another shape is the submission's failure, with the place it departs."""

import pytest

from oracle.reply_shape import ANY, COUNT, Int, OneOf, misfit
from oracle.blockspace.grade import REPLIES

OBSERVED = {"tables": [[0, [3, 4]], [1, [3]]], "free": [5, 8], "ref_counts": [[0, 0, 2], [0, 1, 1]]}


def test_a_reply_of_the_declared_shape_fits() -> None:
    assert misfit(OBSERVED, REPLIES["observe"]) is None
    assert misfit([[1, 7]], REPLIES["swap"]) is None and misfit([], REPLIES["append_slots"]) is None
    assert misfit("LATER", REPLIES["ask"]) is None and misfit(False, REPLIES["ask"]) is None
    assert misfit(None, None) is None and misfit({"x": 1.5}, ANY) is None


def test_a_float_position_is_named_where_it_is() -> None:
    bad = {**OBSERVED, "ref_counts": [[0, 0.5, 2]]}
    assert misfit(bad, REPLIES["observe"], "observe's answer") == \
        "observe's answer['ref_counts'][0][1] is 0.5, not an integer"


@pytest.mark.parametrize("value, shape, said", [
    (True, int, "is True, not an integer"),  # a bool is no int
    (1.0, Int(), "is 1.0, not an integer"),
    (-1, COUNT, "is -1, out of [0, "),
    (1 << 63, Int(), "out of ["),
    ([1, 2, 3], (int, int), "not a list of 2"),
    ({"tables": [], "free": [1, 2]}, REPLIES["observe"], "not an object of 'tables', 'free', 'ref_counts'"),
    ({"tables": [], "free": [1, 2], "ref_counts": [], "more": 1}, REPLIES["observe"], "not an object of"),
    ([[1, "2"]], REPLIES["swap"], "[0][1] is '2', not an integer"),
    ({"0": 1}, [int], "not a list"),
    (3, OneOf(bool, str), "is 3, not true or false"),
    (0, None, "is 0, not null"),
])
def test_a_reply_of_another_shape_says_where_it_departs(value, shape, said: str) -> None:
    why = misfit(value, shape, "the reply")
    assert why is not None and said in why and why.startswith("the reply")


def test_a_long_value_is_shown_cut() -> None:
    why = misfit("x" * 1000, int)
    assert why is not None and len(why) < 120


def test_a_shape_the_grader_does_not_know_is_its_own_bug() -> None:
    with pytest.raises(TypeError):
        misfit(1, 1.5)
