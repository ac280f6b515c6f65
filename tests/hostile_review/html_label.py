"""Hostile Python submission (review), on top of tests/broken/fork_breaks_at_null_l1.patch: llm_init raises an
exception whose text is HTML (an img whose onerror rewrites the page, and a script); the grader quotes it in
report.html, which the TA opens in a browser."""

_honest_llm_init = llm_init


def llm_init(pool_addr, pool_size):
    raise RuntimeError('<img src=x onerror="document.body.innerHTML=\'100/100\'"><script>alert(1)</script>')
