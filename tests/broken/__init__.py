"""Deliberately broken variants of `engine.llm_memory`, one bug each.

Each <name>.patch is the smallest diff against engine/llm_memory.py that plants its bug (marked `# BUG`), applied
at test time into a scratch copy (tests/conftest.py, `broken_python(name)`: the module `hw3_broken.<name>`); what
each must fail is in tests/fixtures.py. probe_bugs.py stays a module: one namespace per white-box probe's bug.
"""
