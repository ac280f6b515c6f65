"""Every broken fixture's expected verdict, of every family and language, in one place: the rubric items each must
fail (its own rule's, and memory_safety for a memory error), the items it leaves nothing of their own rule to check,
and what a fuzz run of it finds. Each entry's comment says why those items. Read by tests/test_fixture_verdicts.py,
test_unread.py, test_teeth.py, test_prefix_grade.py, test_prefix_teeth.py and test_blockspace_teeth.py.

The fixtures are patches, applied at test time (tests/conftest.py, patched_copy): hw3's C ones
tests/submissions/broken/ and unseen/ against engine/c/llm_memory.c, hw3's Python ones tests/broken/ against
engine/llm_memory.py, tests/broken_prefix/ and tests/broken_blockspace/ against a file of engine/prefix and
engine/blockspace."""

N = r"-?\d+"  # an int in a divergence line

# ---- hw3, C: tests/submissions/broken/<name>.patch -------------------------------------------------------------------
# The items each fails, fuzz aside, graded with every item of the default rubric (a small fuzz budget): one bug costs
# the items of its own rule, once.
HW3_C_FAILS: dict[str, set[str]] = {
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


# Items that could check nothing of their own rule past the fixture's bug: not run, 0 points (an item earns
# only what it checked).
# (alloc_failure, 0 points, is not run whenever its program meets any bug with every allocation succeeding.)
HW3_C_NOT_RUN: dict[str, set[str]] = {
    "cmut_init_refuses_32mib": {"big_pool"},  # llm_init refuses the 2 GiB pool the probe needs
    "init_refuses_all": {"create_free", "fork", "append_cow", "llm_destroy", "big_pool", "check_before_allocate",
                         "first_fit", "no_premature_writes", "free_count", "l1_traversal", "tail_insertion",
                         "memory_safety"},  # with no engine, only null_engine's calls can be judged
    # ref_count holds the 0xA5 bytes of a fresh malloc: no block can be judged free or shared. The model takes
    # the tables the creates leave over (every entry -1), so the calls decided before the counts (ids, lengths)
    # are still judged; first fit and the probes' set-ups need a free block and check nothing
    "malloc_ref_count": {"big_pool", "first_fit", "l1_traversal"},
    "hang_in_free": {"memory_safety"},  # a free that hangs: the battery does not run whole (create_free's bug)
}


# Fixtures whose fuzz verdict is pinned too: every item that did not pass, fuzz included (one bug, the items of
# its rule only, and fuzz exactly when the seed's programs meet the bug).
HW3_C_NOT_PASSED: dict[str, set[str]] = {
    "first_fit": {"first_fit", "fuzz"},  # last fit: every block id differs from the spec's
    "tail_insertion": {"tail_insertion", "fuzz"},  # head insertion: every list order differs
    "repro_fork_at_head": {"tail_insertion", "fuzz"},
    "l1_traversal": {"l1_traversal"},
    "fuzz": {"fuzz"},
}


# ---- hw3, C: tests/submissions/unseen/<name>/ ------------------------------------------------------------------
# Submissions of tests/submissions/unseen/ (written without the grader's code in view) that once cost another
# item: each fails exactly these items, plus possibly fuzz.
HW3_UNSEEN_FAILS: dict[str, set[str]] = {
    "create_cap_in_loop": {"check_before_allocate"},  # the cap is met while mapping: a failing create allocated
    "create_ceil_plus_one": {"create_free"},  # a block too many: the probes' set-ups go on past it
    "create_double_decrement": {"free_count"},  # many_sequences' create refused by a free count ref_count contradicts
    "free_skips_last_l1": {"l1_traversal", "memory_safety"},  # a free that skips L1 slot 15 (its blocks leak)
    # the third batch (session 6)
    "append_moves_seq_to_tail": {"tail_insertion"},  # the list's order is creation order, whichever call moved it
    "append_zeroes_new_page": {"no_premature_writes"},  # the record right, and the rest of its fresh block zeroed
    "cow_sets_old_ref_to_one": {"append_cow"},  # a block shared by four: seen only from the second copy on
    "rewrite_cow_only_if_ref_two": {"append_cow"},
    "init_refuses_partial_block": {"llm_init"},  # no_premature_writes also runs on a pool of whole blocks
    "init_int_cast_before_divide": {"big_pool"},  # refuses 2 GiB, takes the 64 MiB the llm_init item gives
    "rewrite_fork_allocs_all_l2": {"fork"},  # the gap probe notes an empty L2 table where the parent has none
    # the fourth batch (session 6)
    "lookup_cache_across_engines": {"create_free"},  # two_engines looks an id up in one engine right after the other
    "create_rejects_negative_id": {"create_free"},  # any int is an id
    "rewrite_cow_stale_record_ptr": {"append_cow"},  # free blocks in a bitmap: big_pool copies out of 2^25 anyway
    "destroy_wipes_live_blocks": {"no_premature_writes"},  # llm_destroy writes the pool: Constraint 4
}


# ---- hw3, Python: tests/broken/<name>.patch --------------------------------------------------------------------
# engine/llm_memory.py with one bug, graded in its child process: the items each fails, fuzz aside
# (test_fixture_verdicts; test_unread grades HW3_PYTHON_UNREAD's, judged on returns and the pool alone). Where C
# shows the bug otherwise, the comment says how.
HW3_PYTHON_FAILS: dict[str, set[str]] = {
    "big_endian": {"append_cow"},
    "cap_one_early": {"append_cow"},
    "cap_one_late": {"append_cow"},
    "cow_copies_written_only": {"append_cow"},
    "cow_no_oom_check": {"append_cow"},  # the append's return value: Task 4's
    # the list's order and an L2 table are read only inside the submission's process, which a Python submission's
    # code owns: tail_insertion and the L2 half of check_before_allocate are not graded for it (oracle/hw3/evidence.py)
    "create_at_head": set(),  # the list's order shows in no return value and no pool byte: not graded
    "destroy_returns_minus_one": {"llm_destroy"},
    # only an edit of the live tables (an L1 gap) shows these two, and a Python submission's objects are not
    # edited by the grader (oracle/hw3/evidence.py): l1_traversal passes on what is graded, saying what is not
    "fork_breaks_at_null_l1": set(),
    # fork's missing reference shows in no return and no pool byte at the fork, only in later calls (a write to
    # the shared block lands in place, a free hands out a block the child holds): the graded run's own append in
    # place and its own later calls show the references missed (oracle/hw3/fork_witness.py), so those calls' items
    # read past it (C: fork, by ref_count)
    "fork_no_incref": {"fork"},
    "free_breaks_at_null_l1": set(),
    "free_count_not_incremented": {"free_count"},  # refusals that more free blocks undo (C: the count itself)
    "last_fit": {"first_fit"},  # its records land in other blocks than first fit's (C: the block tables)
    "no_cow": {"append_cow"},
    "oom_append_allocates_l2": set(),
    "zero_on_create": {"no_premature_writes"},
}

# the Python fixtures test_unread grades, one per item the returns and the pool show, and the list's order
HW3_PYTHON_UNREAD = {"last_fit", "free_count_not_incremented", "no_cow", "zero_on_create", "create_at_head", "fork_no_incref"}

# tests/broken/<name>.patch -> the first-divergence line a fuzz run of it must produce (test_teeth: fixed seed and
# budget); the bug named where a person would look for it, not as a later knock-on effect
HW3_PYTHON_FUZZ: dict[str, str] = {
    "no_cow": r"^(return value: expected -1, got 0|free_local_blocks: expected \d+, got \d+|ref_count\[\d+\]: expected \d+, got \d+) after append_kv",
    "last_fit": rf"^(ref_count\[\d+\]: expected 1, got 0|seq {N} block_table\[\d+\]\[\d+\]: expected \d+, got \d+) after (create_sequence|append_kv)",
    "zero_on_create": rf"^(seq {N} record \d+ \(block \d+\)|pool block \d+ slot \d+ \(byte \d+\)): expected {N}, got 0 after create_sequence",
    "oom_append_allocates_l2": rf"^seq {N} block_table\[\d+\]: expected NULL, got an L2 table after append_kv\(engine, {N}, {N}\)",
    "cow_copies_written_only": rf"^pool block \d+ slot \d+ \(byte \d+\): expected {N}, got {N} after append_kv",
    "fork_no_incref": r"^ref_count\[\d+\]: expected \d+, got \d+ after fork_sequence",
    "free_count_not_incremented": r"^free_local_blocks: expected \d+, got \d+ after free_sequence",
    "create_at_head": r"^active list: expected \[.*\], got \[.*\] after create_sequence",
    "cow_no_oom_check": rf"^append_kv\(engine, {N}, {N}\) raised AssertionError: allocate_block called with no free block",
    "big_endian": rf"^seq {N} record \d+ \(block \d+\): expected (?P<want>{N}), got (?P<got>{N}) after append_kv",
    "destroy_returns_minus_one": r"^return value: expected 0, got -1 after llm_destroy\(engine\)$",
    "cap_one_early": rf"^return value: expected 0, got -1 after append_kv\(engine, {N}, {N}\)",
    "cap_one_late": rf"^(append_kv\(engine, {N}, {N}\) raised IndexError|return value: expected -1, got 0 after append_kv)",
}
# invisible through the API, so no fuzz run finds them: see test_engine_rules (tests/broken/probe_bugs.py holds one
# variant per white-box probe: test_pyprobes)
HW3_PYTHON_WHITE_BOX_ONLY = {"free_breaks_at_null_l1", "fork_breaks_at_null_l1"}


# ---- prefix: tests/broken_prefix/<name>.patch -------------------------------------------------------------------
# tests/broken_prefix/<name>.patch -> (the items it fails, the items whose program it stops before any step of their
# own rule), graded with the default rubric (test_prefix_grade)
PREFIX_FAILS: dict[str, tuple[set[str], set[str]]] = {
    "no_null_block": ({"null_block", "fuzz"}, set()),
    "hash_not_chained": ({"hash_chaining", "fuzz"}, set()),
    "no_hit_cap": ({"hit_cap", "fuzz"}, set()),
    # the rubric's fuzz (seed 1, 150 programs of 30 calls) reaches a hit past an evicted head in 21 programs
    # since evict_then_hit makes the two-block request it needs when the drawn one is too short
    "hits_past_first_miss": ({"no_false_hit", "fuzz"}, set()),
    "eviction_keeps_index": ({"eviction", "fuzz"}, {"no_false_hit"}),  # its stale entry is what a false hit needs
    "touch_leaves_in_queue": ({"touch", "fuzz"}, set()),
    "non_atomic_allocation": ({"atomic_allocation", "fuzz"}, set()),
    "forward_order_free": ({"reverse_order_free", "fuzz"}, set()),
    "free_to_front_hashed": ({"free_queue", "fuzz"}, set()),
    "ref_count_not_per_table": ({"touch", "fuzz"}, {"no_false_hit", "copy_on_write"}),  # sharing needs the count
}

# tests/broken_prefix/<name>.patch -> the aspects the first divergence of a fuzz run of it may name (what the bug
# breaks first, where a person looks; test_prefix_teeth)
PREFIX_FUZZ: dict[str, set[str]] = {
    "no_null_block": {"null block"},
    "hash_not_chained": {"hash chaining", "no false hit"},
    "no_hit_cap": {"hit cap"},
    "hits_past_first_miss": {"extra hits"},
    "eviction_keeps_index": {"index", "no false hit"},
    "touch_leaves_in_queue": {"conservation"},
    "non_atomic_allocation": {"atomic failure"},
    # a free whose released blocks are the whole free queue, in the opposite order: the release order (the
    # machine and the directed programs share one driver and word it alike)
    "forward_order_free": {"free order", "release order"},
    "free_to_front_hashed": {"free order", "release order"},
    "ref_count_not_per_table": {"ref count"},
}


# ---- blockspace: tests/broken_blockspace/<name>.patch -----------------------------------------------------------
# tests/broken_blockspace/<name>.patch -> the rubric item whose rule it breaks: the one directed item it fails, and the
# rule a fuzz run of it names (test_blockspace_teeth)
BLOCKSPACE_FAILS: dict[str, str] = {
    "no_copy_on_write": "copy_on_write",
    "fork_no_incref": "sharing",
    "free_ignores_sharing": "sharing",
    "table_one_block_early": "block_table",
    "watermark_ignored": "watermark",
    "swap_shared_twice": "swap",
    "can_swap_out_ignores_cpu": "swap",
    "free_skips_waiting": "recompute",
}
# the rules a fuzz run may name besides its own item's: a count wrong at a block boundary first shows as a wrong
# can_allocate answer
BLOCKSPACE_FUZZ_ALSO: dict[str, set[str]] = {"table_one_block_early": {"watermark"}}
