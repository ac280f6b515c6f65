"""Running C submissions: build one against the official header (build), drive it in a sandboxed process
(adapter, driver.c), drive the white-box probes there (probe_adapter, driver_probes.c), and rerun it under
valgrind (valgrind)."""
