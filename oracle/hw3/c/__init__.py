"""HW3's C facts: its build's facts (build), its driver (driver.c, driver_probes.c) and the protocol it speaks
(driver_reply), the adapter over it and its factory (adapter: load_c) and the white-box probes' (probe_adapter, probe_state: an engine's
struct read from outside), and the calls a stray access is charged to (stray). The machinery they run on is
oracle/native/'s."""
