"""Deliberately broken variants of `engine.llm_memory`, one bug each.

Each <name>.patch is the smallest diff against engine/llm_memory.py that plants its bug (marked `# BUG`), applied
at test time into a scratch copy (tests/conftest.py, `broken_python(name)`: the module `hw3_broken.<name>`); what
each must fail is in tests/fixtures.py. probes/<name>.patch are made the same way: the bug a white-box probe is
aimed at (named after the probe) or one check of a probe meets (tests/test_pyprobes.py).
"""
