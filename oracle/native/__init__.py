"""The machinery that runs a submission written in C, for any family graded in C (README.md here): the build in
the sandbox (build, build_cache, upload, refusal), the driver's process and its pipes (driver_process,
reply_pipe), the heap's facts as the grader observes them (ledger, heap_notify, heap_maps, native_heap), the
driver's memory read from outside (outside), valgrind's runs and log (valgrind, log_channel), and the C
driver's own machinery (driver_heap.c, driver_main.c). It names no family: a family passes in its facts (its
build's BuildFacts, its longest reply, its failure type) as data."""
