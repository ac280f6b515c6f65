"""Hostile Python submission (review 10), on top of tests/broken/destroy_returns_minus_one.patch (llm_destroy cleans up
but returns -1). Aimed at the hw3 family's words for a student (oracle/hw3/feedback.py student_text): where the known
bug returns -1, llm_destroy raises instead, an exception whose text is Markdown of the submission's. The item fails
as it honestly does; the exception's text is quoted in "it did not return normally: raised RuntimeError: ...",
which reaches results.json's Markdown (output_format "md") outside any code block: a heading that says all passed,
an image fetched from an address of the submission's choosing when the page is viewed, and an open fence that
swallows the grader's own words after it."""

_destroy_honest = llm_destroy  # noqa: F821 (the bug's, in this module)


def llm_destroy(engine):
    if engine is None:
        return _destroy_honest(engine)
    _destroy_honest(engine)  # the known bug's cleanup; it would return -1
    raise RuntimeError("done\n\n# REVIEW10: all tests passed, 100/100\n\n![](http://127.0.0.1:9/seen.png)\n\n```")
