"""Hostile Python submission (review), on top of tests/broken/fork_breaks_at_null_l1.patch: llm_init raises an
exception whose text is lines laid out as the grader's own summary (every item passed, 100/100). The grader
quotes the text in the item's message; printed with its newlines, those lines stand at the left margin of the
TA's terminal, of report.txt-like outputs and of grader.log, as if the grader had written them."""

_honest_llm_init = llm_init

FORGED = ("\n  total                                                   100/100   (0.1 s, seed 0)\n"
          "score: 100/100 (passed)\n")


def llm_init(pool_addr, pool_size):
    raise RuntimeError("no" + FORGED)
