"""The rubric items each broken fixture's bug belongs to: its own rule's items, and memory_safety for a memory
error. A fixture must fail exactly these items, plus `fuzz` where the fuzz item reaches the bug (FUZZ_MISSES
lists the fixtures whose bug only a white-box probe, valgrind or the build can show)."""

OWN_ITEMS: dict[str, set[str]] = {
    "alloc_failure": {"alloc_failure"},
    "append_cow": {"append_cow"},
    "append_byte_offset": {"append_cow"},  # big_pool finds the record in the right block, at the wrong byte
    "break_at_null_l1": {"l1_traversal"},
    "check_before_allocate": {"check_before_allocate"},
    "cmut_cow_copies_63_bytes": {"append_cow"},
    "cmut_create_cap_257": {"create_free", "memory_safety"},  # the 257th block is written past block_table[15]
    "cmut_fork_break_at_null_l1": {"l1_traversal"},
    "cmut_init_refuses_32mib": {"llm_init"},
    "compiles": {"compiles"},
    "create_kv_count_rounded": {"create_free"},  # big_pool follows the kv_count the create left
    "create_free": {"create_free"},
    # one block short of a partial last one: big_pool's one-record create maps none, and its append fills the hole
    "create_floor_blocks": {"create_free"},
    "deref_null_l1": {"create_free", "llm_destroy", "memory_safety"},  # free and destroy share the walk; the probe crash in free is create_free's
    "destroy_frees_pool": {"llm_destroy", "memory_safety"},
    "first_fit": {"first_fit"},
    "first_fit_static_hint": {"first_fit"},
    "fork": {"fork"},
    "fork_counts_shared_blocks": {"free_count"},  # l1_gap_fork: a free count ref_count contradicts
    "fork_deep_copy": {"fork"},  # l1_gap_fork: a control fork without the gap returns NULL too
    "fork_no_incref": {"fork"},
    # a heap overflow in fork: malloc later aborts in whichever call; valgrind places it in fork_sequence
    # first fit finds no block once the lowest free one is past free_local_blocks: the call leaves -1, and the
    # second opinion (fresh_pool.py) shows a failed search, not a short count: first fit's alone. big_pool maps
    # block 2^25 itself when the search cannot reach it
    "first_fit_bound_free_count": {"first_fit"},
    "fork_l2_malloc_bytes": {"memory_safety"},
    # the child holds the parent's L2 tables: llm_destroy frees them twice, after fork's bug in the same program
    "fork_shallow_l2": {"fork", "memory_safety"},
    "free_scrubs_blocks": {"no_premature_writes"},  # only append_kv may write the pool
    "free_count": {"free_count"},
    "free_count_at_zero": {"free_count"},
    "free_returns_one": {"create_free"},  # l1_gap_free and many_forks judge the blocks, not the return value
    "free_unlink_half": {"create_free", "memory_safety"},  # the list after a free; valgrind: a read after free
    "free_walks_kv_count": {"l1_traversal"},  # the slots kv_count covers: L1 slot 3 past the gap is never visited
    "fuzz": set(),
    "hang_in_free": {"create_free"},
    "init_refuses_all": {"llm_init"},  # and nothing else can be checked: see NOT_CHECKED in test_fixture_verdicts
    "init_writes_pool": {"no_premature_writes"},  # Constraint 4: only append_kv writes the pool
    "int_block_offset": {"big_pool"},
    "l1_not_nulled": {"create_free", "memory_safety"},  # its unused L1 slots hold 0xA5 pointers (read as wild)
    "l1_traversal": {"l1_traversal"},
    "l2_hole_fork": {"fork"},
    "l2_hole_free": {"create_free"},
    # free_sequence leaks its L2 tables, and llm_destroy too (they share the walk): Task 5 frees everything
    "leak_l2": {"memory_safety", "llm_destroy"},
    "llm_destroy": {"llm_destroy", "memory_safety"},  # the Sequence it leaks
    "llm_init": {"llm_init"},
    "malloc_ref_count": {"llm_init", "memory_safety"},  # valgrind: a jump on uninitialised values
    "many_sequences": {"create_free"},
    "memory_safety": {"memory_safety"},
    "no_cow": {"append_cow"},
    "no_premature_writes": {"no_premature_writes"},
    "null_engine": {"null_engine", "memory_safety"},  # a NULL dereference
    "oom_append_l2": {"check_before_allocate"},
    # the registry grows before the free-block check; a create whose later malloc fails leaves it grown: a
    # failing call allocated (Constraint 2), and a failed malloc left a trace (robustness, 0 points)
    "realloc_registry": {"check_before_allocate", "alloc_failure"},
    "repro_accepts_zero_length": {"create_free"},
    "repro_cow_copies_half": {"append_cow"},
    "repro_cow_keeps_ref": {"append_cow"},
    "repro_fork_at_head": {"tail_insertion"},
    "tail_insertion": {"tail_insertion"},
    "two_engines": {"create_free"},
    "use_after_free": {"memory_safety"},
}
