"""Running C submissions: build one against the official header (build), drive it in a sandboxed process
(adapter, driver.c), and rerun it under valgrind (valgrind)."""
