"""Deliberately broken variants of `engine.llm_memory`, one bug each, for tests/test_teeth.py.

Each module imports the built-in engine and replaces ONE behaviour (a copied function with one line
changed, marked `# BUG`). The engine module itself is never patched: a variant is its own module.
"""
