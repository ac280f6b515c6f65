"""oracle/grading/settlement.py on plain values: the statuses of the items as they ran and what each read
past, settled into the items whose verdict changes (no checks, no processes)."""

from oracle.grading.settlement import ANOTHER_RULE, ANY_OTHER, Excuse, Seen, Verdict, joined, settle, strict

SAW = Seen("touch: step 4 admit(req 1, tokens [1..8, 10]): conservation: expected free or held, got both [rule: free_queue]",
           "The calls: ...")


def statuses(**status: str) -> dict[str, str]:
    return status


def test_nothing_read_past_changes_nothing() -> None:
    assert settle(statuses(A="passed", B="failed"), {}) == {}


def test_a_named_item_that_passed_takes_the_failure_once_with_what_the_reader_saw() -> None:
    verdicts = settle(statuses(A="passed", C="passed", B="passed"),
                      {"A": [Excuse(frozenset({"B"}), SAW)], "C": [Excuse(frozenset({"B"}), Seen("other"))]})
    assert verdicts == {"B": Verdict(SAW, "A")}
    assert verdicts["B"].message == SAW.message + " (found by item A's programs, not this item's)"


def test_the_excuse_holds_when_the_named_item_failed_or_was_not_run() -> None:
    for owner in ("failed", "not_run", "incomplete", "error"):
        assert settle(statuses(A="passed", B=owner), {"A": [Excuse(frozenset({"B"}), SAW)]}) == {}


def test_an_owner_left_out_of_the_rubric_holds_only_when_the_excuse_says_so() -> None:
    course_choice = Excuse(frozenset({"B"}), SAW)
    stopped_there = Excuse(frozenset({"B"}), SAW, absent_holds=False)
    assert settle(statuses(A="passed"), {"A": [course_choice]}) == {}
    verdicts = settle(statuses(A="passed"), {"A": [stopped_there]})
    assert verdicts == {"A": Verdict(SAW)} and verdicts["A"].message == SAW.message + ANOTHER_RULE


def test_a_sure_excuse_charges_its_owner_even_when_absence_would_not_hold() -> None:
    verdicts = settle(statuses(A="passed", B="passed"), {"A": [Excuse(frozenset({"B"}), SAW, absent_holds=False)]})
    assert verdicts == {"B": Verdict(SAW, "A")}


def test_a_strict_excuse_leaves_the_failure_to_the_reader_when_its_owner_passed_or_is_absent() -> None:
    excuse = strict({"B"}, Seen("probe crashed in append", "log", elsewhere=False))
    assert settle(statuses(A="passed", B="passed"), {"A": [excuse]}) == {"A": Verdict(excuse.failure)}
    assert settle(statuses(A="passed"), {"A": [excuse]})["A"].message == "probe crashed in append"
    assert settle(statuses(A="passed", B="failed"), {"A": [excuse]}) == {}


def test_an_item_that_names_itself_takes_what_it_saw() -> None:
    assert settle(statuses(A="passed", B="failed"), {"A": [Excuse(frozenset({"A"}), SAW)]}) == {"A": Verdict(SAW)}


def test_an_unnamed_owner_needs_some_other_item_that_is_not_a_catch_all_to_fail() -> None:
    excuse = {"A": [Excuse(frozenset({ANY_OTHER}), SAW)]}
    assert settle(statuses(A="passed", B="failed"), excuse) == {}
    assert settle(statuses(A="passed", B="passed"), excuse) == {"A": Verdict(SAW)}
    assert settle(statuses(A="passed", fuzz="failed"), excuse, catch_all=["fuzz"]) == {"A": Verdict(SAW)}
    assert settle(statuses(A="passed", fuzz="failed"), excuse) == {}  # a check like any other when not a catch-all


def test_a_reader_with_several_excuses_takes_the_first_that_does_not_hold() -> None:
    first, second = Excuse(frozenset({"B"}), Seen("first")), Excuse(frozenset({"C"}), Seen("second"), absent_holds=False)
    verdicts = settle(statuses(A="passed", B="failed"), {"A": [first, second]})
    assert verdicts == {"A": Verdict(Seen("second"))}


def test_a_charged_owner_takes_the_charge_not_its_own_excuse() -> None:
    verdicts = settle(statuses(A="passed", B="passed"),
                      {"A": [Excuse(frozenset({"B"}), SAW)], "B": [Excuse(frozenset({"C"}), Seen("B's"), absent_holds=False)]})
    assert verdicts == {"B": Verdict(SAW, "A")}


def test_a_not_run_reader_charges_its_owner_and_stays_as_it_was_when_the_excuse_holds() -> None:
    verdicts = settle(statuses(A="not_run", B="passed"), {"A": [Excuse(frozenset({"B"}), SAW, absent_holds=False)]})
    assert verdicts == {"B": Verdict(SAW, "A")}


def test_joined_excuses_name_both_owners_and_say_the_first_failure() -> None:
    one = joined(Excuse(frozenset({"B"}), Seen("first")), Excuse(frozenset({"C"}), Seen("second"), absent_holds=False))
    assert one == Excuse(frozenset({"B", "C"}), Seen("first"), absent_holds=False, sure=True)
    assert joined(one, None) is one
    assert settle(statuses(A="passed", B="failed"), {"A": [one]}) == {"A": Verdict(Seen("first"))}  # C is not graded


def test_a_failed_item_charges_the_item_of_the_rule_its_failure_breaks_once_and_keeps_its_own() -> None:
    fuzz = {"fuzz": [Excuse(frozenset({"B"}), SAW)]}  # a catch-all's failure names the rule it breaks
    verdicts = settle(statuses(B="passed", fuzz="failed"), fuzz, catch_all=["fuzz"])
    assert verdicts == {"B": Verdict(SAW, "fuzz")}
    assert verdicts["B"].message == SAW.message + " (found by item fuzz's programs, not this item's)"
    assert settle(statuses(B="failed", fuzz="failed"), fuzz, catch_all=["fuzz"]) == {}  # once: B failed already
    assert settle(statuses(fuzz="failed"), fuzz, catch_all=["fuzz"]) == {}  # B is not graded: the fuzz's alone
    # the fuzz item's own verdict stands even where the excuse would not hold for a pass
    assert settle(statuses(fuzz="failed"), {"fuzz": [Excuse(frozenset({"B"}), SAW, absent_holds=False)]}) == {}


def test_a_stopped_readers_excuse_holds_whatever_the_points() -> None:
    """An item stopped by another rule's cheaper failure is not failed for it: an honest bug costs its own
    items only (what the stopped item could not check is the fuzz item's to find, and its failure charges it)."""
    stopped = {"swap": [Excuse(frozenset({"table"}), SAW, absent_holds=False, stopped=True)]}
    cheaper = {"table": 10, "swap": 15}
    assert settle(statuses(swap="passed", table="failed"), stopped, points=cheaper) == {}
    assert settle(statuses(swap="passed", table="passed"), stopped, points=cheaper) == {"table": Verdict(SAW, "swap")}


def test_an_excuse_that_was_read_past_holds_whatever_the_points() -> None:
    followed = {"swap": [Excuse(frozenset({"table"}), SAW)]}  # the reader checked its own rule to the end
    assert settle(statuses(swap="passed", table="failed"), followed, points={"table": 1, "swap": 15}) == {}


def test_a_catch_alls_charge_is_spared_where_another_rule_that_may_have_made_it_failed_worth_as_much() -> None:
    either = {"fuzz": [Excuse(frozenset({"watermark"}), SAW, unless=frozenset({"table"}))]}
    worth = {"watermark": 10, "table": 10}
    assert settle(statuses(table="failed", watermark="passed", fuzz="failed"), either, ["fuzz"], worth) == {}
    assert settle(statuses(table="passed", watermark="passed", fuzz="failed"), either, ["fuzz"], worth) == {
        "watermark": Verdict(SAW, "fuzz")}
    dearer = {"watermark": 20, "table": 10}  # a cheaper failure does not buy off a dearer charge
    assert settle(statuses(table="failed", watermark="passed", fuzz="failed"), either, ["fuzz"], dearer) == {
        "watermark": Verdict(SAW, "fuzz")}


def test_a_read_past_failure_another_rule_that_failed_may_have_made_is_paid_for_its_reader_too() -> None:
    """A prefix release order read past: reverse_order_free's, unless free_queue's item (whose bug may make one) failed,
    worth as much: then no one is charged, and the reader's excuse holds (it does not fail for it either)."""
    read = {"eviction": [Excuse(frozenset({"reverse_order_free"}), SAW, unless=frozenset({"free_queue"}))]}
    worth = {"reverse_order_free": 8, "free_queue": 8, "eviction": 8}
    assert settle(statuses(free_queue="failed", reverse_order_free="passed", eviction="passed"), read,
                  points=worth) == {}
    assert settle(statuses(free_queue="passed", reverse_order_free="passed", eviction="passed"), read,
                  points=worth) == {"reverse_order_free": Verdict(SAW, "eviction")}
