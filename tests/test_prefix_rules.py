"""oracle/prefix/rules.py: every aspect the prefix family words goes to exactly one rubric item, whatever call
made it, so no difference, of a directed item or of fuzzing, names no rule."""

import pytest

from oracle.difference import Difference
from oracle.prefix.difference import ASPECTS
from oracle.prefix.rules import RULES, hits_difference, rule_of


@pytest.mark.parametrize("op", ["start", "admit", "lookup", "append", "commit", "free", "fork", "copy", "reset"])
def test_every_aspect_has_a_rule_row_for_every_call(op: str) -> None:
    missing = [aspect for aspect in ASPECTS if rule_of(Difference(aspect, "", None, None), op) not in RULES]
    assert not missing


def test_how_many_blocks_hit_is_worded_as_the_rule_it_breaks() -> None:
    assert hits_difference(1, 1, 9, 4, cap=True) is None
    assert hits_difference(1, 2, 8, 4, cap=True).aspect == "hit cap"  # past (8 - 1) // 4 = 1
    assert hits_difference(1, 2, 9, 4, cap=True).aspect == "extra hits"
    assert hits_difference(1, 2, 8, 4, cap=False).aspect == "extra hits"
    assert hits_difference(2, 1, 9, 4, cap=True).aspect == "missed hits"
    assert {rule_of(hits_difference(1, got, 8, 4, True), "admit") for got in (0, 2)} == {"hash_chaining", "hit_cap"}
