"""Every broken fixture's expected verdict, of every family and language, in one place: the rubric items each must
fail (its own rule's, and memory_safety for a memory error), the items it leaves nothing of their own rule to check,
and what a fuzz run of it finds; for the white-box probes' bugs, what the probe meeting each says. Each entry's comment
says why those items. Read by tests/test_fixture_verdicts.py (which also checks every patch has its entry),
test_grade.py, test_unread.py, test_teeth.py, test_pyprobes.py, test_prefix_grade.py, test_prefix_teeth.py and
test_blockspace_teeth.py.

The fixtures are patches, applied at test time (tests/conftest.py, patched_copy): hw3's C ones
tests/submissions/broken/ and unseen/ against engine/c/llm_memory.c, hw3's Python ones tests/broken/ and
tests/broken/probes/ against engine/llm_memory.py, tests/broken_prefix/ and tests/broken_blockspace/ against a file
of engine/prefix and engine/blockspace."""

from oracle.hw3.probe_scale import spread_id

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


# Fixtures of tests/submissions/broken/ graded with one item alone: the item each must fail, and words its message
# must hold (test_grade's test_each_broken_submission_fails_its_own_item, which also builds and runs its repro).
HW3_C_WORDS: dict[str, tuple[str, str]] = {
    "compiles": ("compiles", "unused variable"),
    "llm_init": ("llm_init", "llm_init(pool, 63): return value: expected NULL, got an engine"),
    "create_free": ("create_free", "free_sequence(engine, 2): return value: expected -1, got 0"),
    "fork": ("fork", "seq 2 kv_count: expected 21, got 0 [rule: Task 3"),
    "append_cow": ("append_cow", "append_kv(engine, 2, 10): pool block 2 slot 2"),
    "llm_destroy": ("llm_destroy", "heap: expected every allocation freed"),
    "null_engine": ("null_engine", "append_kv(NULL, 1, 5): crashed with SIGSEGV [rule: Constraint 1: Pointer Safety]"),
    "check_before_allocate": ("check_before_allocate", "a failing call must allocate nothing"),
    "oom_append_l2": ("check_before_allocate", "step 3 append_kv(engine, 1, 7): seq 1 block_table[1]: expected NULL, got an L2 table"),
    "first_fit": ("first_fit", "[rule: Constraint 3: First-Fit Allocation]"),
    "no_premature_writes": ("no_premature_writes", "[rule: Constraint 4: No Premature Memory Modification]"),
    # the copy-on-write drops the shared block's reference: counted free though the parent still holds it
    "free_count": ("free_count", "append_kv(engine, 2, 1): free_local_blocks: expected 7, got 8"),
    "l1_traversal": ("l1_traversal", "l1_gap_free"),
    "tail_insertion": ("tail_insertion", "active list: expected [3, 1], got [1, 3]"),
    "fuzz": ("fuzz", "create_sequence(engine, -"),  # a negative id (shrinking may stop before -1)
    "memory_safety": ("memory_safety", "Invalid read of size 4"),
    "alloc_failure": ("alloc_failure", "heap blocks the failed call left allocated: expected 0, got 2"),
    # survivors of the C mutation campaign (mutation/README.md), each now failing the item of its rule
    "cmut_cow_copies_63_bytes": ("append_cow", "pool block"),
    "cmut_create_cap_257": ("create_free", "create_sequence_cap: step 2 create_sequence(engine, 1, 4097): return value: expected NULL, got a Sequence"),
    "cmut_fork_break_at_null_l1": ("l1_traversal", "l1_gap_fork: fork_sequence(engine, 1, 2)"),
    "cmut_init_refuses_32mib": ("llm_init", "init_untouched: llm_init(pool, 67108864) returned NULL"),
    # bugs only a probe or a debugging malloc shows (the white-box probes, the driver's 0xA5 fill)
    "many_sequences": ("create_free", "many_sequences: create_sequence(engine, "),
    "two_engines": ("create_free", "two_engines: free_sequence(a, 2) succeeded, expected NULL / -1: sequence 2 lives in engine b, not a"),
    "l2_hole_free": ("create_free", "l2_hole_free: after freeing a sequence whose block_table[0] maps entries 0, 2 and 5"),
    "l2_hole_fork": ("fork", "l2_hole_fork: fork_sequence(engine, 1, 2) of a parent whose block_table[0] maps entries 0, 2 and 5"),
    "malloc_ref_count": ("llm_init", "llm_init(pool, 64): ref_count[0]: expected 0, got -1515870811 [rule: Task 1"),
    "int_block_offset": ("big_pool", "big_pool: crashed: SIGSEGV"),
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
# invisible through the API, so no fuzz run finds them: see test_engine_rules (tests/broken/probes/ holds one
# patch per white-box probe's bug: test_pyprobes)
HW3_PYTHON_WHITE_BOX_ONLY = {"free_breaks_at_null_l1", "fork_breaks_at_null_l1"}


# ---- hw3, Python, the white-box probes' bugs: tests/broken/probes/<name>.patch ---------------------------------------
# engine/llm_memory.py with the bug a white-box probe is aimed at (the patch named after the probe) or the bug one
# check of a probe meets. The probes are not graded for a Python submission (its objects are its own word), so
# test_pyprobes runs them on these in the test's own process, edits included (tests/probe_in_process.py).

PAST = "its rule holds; on the way, another item's bug: "  # a probe that judged its rule past another item's bug

# <name> (tests/broken/probes/, or tests/broken/ for fork_no_incref) -> (the probe that meets its bug, whether that
# probe passes (True: not checked, or its rule judged past another item's bug), the start of what it says)
HW3_PROBE_VERDICTS: dict[str, tuple[str, bool, str]] = {
    # each aimed at one probe: it fails that probe
    "l2_hole_free": ("l2_hole_free", False,
                     "after freeing a sequence whose block_table[0] maps entries 0, 2 and 5 (entry 1 is -1), the blocks past "
                     "the gap still have ref_count 1, expected 0 (the loop over an L2 table must not stop at an unmapped entry)"),
    "l2_hole_fork": ("l2_hole_fork", False,
                     "fork_sequence(engine, 1, 2) of a parent whose block_table[0] maps entries 0, 2 and 5 (entry 1 is -1): "
                     "the child's block_table[0][2] is -1, expected the parent's 2"),
    "many_sequences": ("many_sequences", False,
                       f"create_sequence(engine, {spread_id(64)}, 1) returned NULL with 64 sequences live and 4936 free blocks"),
    "two_engines": ("two_engines", False,
                    "create_sequence(b, 1, 5) failed, expected success: sequence 1 exists only in the other engine, a"),
    "init_untouched": ("init_untouched", False, "llm_init(pool, 67108864): total_local_blocks is 1024, expected 1048576"),
    "many_forks": ("many_forks", False,
                   "fork_sequence(engine, 0, 255) returned NULL with 254 forks of sequence 0 live, expected a sequence"),
    # each check of a probe
    "create_returns_null": ("l1_gap_free", True, "not checked: create_sequence(engine, 1, 528) returned NULL with 132 free blocks"),
    "create_leaves_0": ("l1_gap_free", True, "not checked: block_table[2][1] is 0 after create_sequence(engine, 1, 528)"),
    "create_adds_l2": ("l2_hole_free", True,
                       f"{PAST}block_table[15] is an L2 table after create_sequence(engine, 1, 48) (item create_free)"),
    "create_maps_twice": ("l2_hole_fork", True, "not checked: create_sequence(engine, 1, 48) maps 2 distinct blocks, expected 3"),
    "init_returns_null": ("l1_gap_fork", True, "not checked: llm_init(pool, 8448) returned NULL (item llm_init) (another item's bug)"),
    # what free returns and the list after it are create_free's: the walk is judged by the blocks it released
    "free_returns_minus_1": ("l1_gap_free", True, f"{PAST}free_sequence(engine, 1) returned -1, expected 0 (item create_free)"),
    "free_keeps_node": ("l1_gap_free", True,
                        f"{PAST}the active list is not empty after free_sequence(engine, 1) freed its only sequence (item create_free)"),
    "fork_returns_null": ("l1_gap_fork", True,  # without the gap too: the fork item's bug
                          "not checked: fork_sequence(engine, 1, 2) returned NULL for a parent whose L1 slots 0, 3 and 15 are "
                          "in use (1, 2 and 4 to 14 NULL), and fork_sequence(engine, 1, 3) of the same parent without the gap "
                          "returned NULL"),
    "fork_shares_l2": ("l1_gap_fork", True,
                       f"{PAST}fork_sequence(engine, 1, 2): the child's block_table[0] is the parent's L2 table, expected its "
                       "own copy (item fork)"),
    "fork_zeroes_kv_count": ("l2_hole_fork", True,
                             f"{PAST}fork_sequence(engine, 1, 2): the child's kv_count is 0, expected the parent's 48 (item fork)"),
    "fork_adds_l2": ("l1_gap_fork", True,  # seen through the API too: the fork's
                     f"{PAST}fork_sequence(engine, 1, 2): the child's block_table[1] is an empty L2 table where the parent's "
                     "slot is NULL, expected NULL (item fork)"),
    "fork_adds_mapped_l2": ("l1_gap_fork", False,
                            "fork_sequence(engine, 1, 2) of a parent whose L1 slot 1 is NULL: the child's block_table[1] is an L2 table"),
    "fork_takes_block": ("l1_gap_fork", True,  # ref_count shows none: free_count's
                         f"{PAST}free_local_blocks is 98 after fork_sequence(engine, 1, 2), expected 99: a fork takes no block, "
                         "and ref_count shows none taken (item free_count)"),
    "fork_no_incref": ("many_forks", False, "ref_count[0] is 1 after 300 forks of the one-block sequence that maps it, expected 301"),
    "init_writes_pool": ("init_untouched", True,
                         "not checked: llm_init(pool, 63) wrote into the pool (byte 0) (item no_premature_writes)"),
    "init_takes_63": ("init_untouched", False, "llm_init(pool, 63) returned an engine, expected NULL"),
    "init_refuses_65": ("init_untouched", False, "llm_init(pool, 65) returned NULL"),
    "init_free_one_short": ("init_untouched", False, "llm_init(pool, 64): free_local_blocks is 0, expected 1"),
    "init_head_open": ("init_untouched", False, "llm_init(pool, 64): the empty active_seqs head must point to itself both ways"),
    "init_takes_null": ("init_untouched", False, "llm_init(NULL, 6400) returned an engine, expected NULL"),
    "destroy_returns_minus_1": ("destroy_keeps_pool", False, "llm_destroy(engine) did not return 0"),
    "destroy_keeps_pool": ("destroy_keeps_pool", True,  # only append_kv may write it
                           "not checked: llm_destroy wrote into the pool (byte 0), which only append_kv may write (item "
                           "no_premature_writes)"),
    "create_takes_no_block": ("many_sequences", True,  # every block's ref_count is 1: the count is free_count's
                              f"{PAST}free_local_blocks is 5000 with 5000 one-block sequences in a 5000-block pool, expected 0 "
                              "(item free_count)"),
    "init_counts_100": ("many_sequences", True, "not checked: llm_init counted 100 blocks in a 5000-block pool"),
}


# <name> (tests/broken/probes/) graded as a Python submission with the small default rubric -> (the items it fails,
# fuzz aside; its items not run), pinned as measured (test_fixture_verdicts). The probes are not graded for Python, so
# a bug only they show costs nothing (many_sequences' refusal reads as the free count's). The others are not one
# rule's bug each: several leave a table or a count wrong that later calls act on (create_maps_twice, fork_shares_l2),
# or raise where the engine returns (create_leaves_0 and create_adds_l2 for a failed create, fork_raises), and cost
# every item whose programs reach that. Each graded as probe_bugs.py's namespace did before it became a patch: every
# item's status the same (that module's fork_shares_no_block was fork_no_incref's engine: gone).
HW3_PROBE_FAILS: dict[str, tuple[set[str], set[str]]] = {
    # each aimed at one probe
    "l2_hole_free": (set(), set()),
    "l2_hole_fork": (set(), set()),
    "many_sequences": ({"free_count"}, set()),
    "two_engines": (set(), set()),
    "init_untouched": (set(), set()),
    "destroy_keeps_pool": ({"no_premature_writes"}, set()),
    "many_forks": (set(), set()),
    "create_miscounts": ({"append_cow", "free_count"}, set()),
    "fork_raises": ({"fork", "null_engine"}, set()),
    # each check of a probe
    "create_returns_null": ({"create_free"}, {"append_cow", "first_fit", "fork", "free_count"}),
    "create_leaves_0": ({"create_free"}, {"first_fit", "fork", "free_count", "null_engine"}),
    "create_adds_l2": ({"create_free", "first_fit", "null_engine"}, set()),
    "create_leaves_wild": ({"append_cow", "create_free", "fork", "llm_destroy"}, set()),
    "create_maps_twice": ({"append_cow", "first_fit", "free_count"}, set()),
    "init_returns_null": ({"llm_init"}, {"append_cow", "check_before_allocate", "create_free", "first_fit", "fork", "free_count",
                                         "llm_destroy", "no_premature_writes"}),
    "free_returns_minus_1": ({"create_free"}, set()),
    "free_keeps_node": ({"create_free", "null_engine"}, set()),
    "fork_returns_null": ({"fork"}, set()),
    "fork_shares_l2": ({"append_cow", "first_fit"}, set()),
    "fork_zeroes_kv_count": ({"append_cow", "no_premature_writes"}, set()),
    "fork_adds_l2": ({"append_cow"}, set()),
    "fork_adds_mapped_l2": ({"append_cow", "create_free", "first_fit"}, set()),
    "fork_takes_block": ({"append_cow", "free_count"}, set()),
    "init_writes_pool": ({"llm_init"}, set()),
    "init_takes_63": ({"llm_init"}, set()),
    "init_refuses_65": ({"llm_init"}, set()),
    "init_free_one_short": ({"create_free", "free_count"}, set()),
    "init_head_open": ({"create_free", "llm_destroy"}, {"append_cow", "first_fit", "fork", "free_count", "null_engine"}),
    "init_takes_null": ({"llm_init"}, set()),
    "destroy_returns_minus_1": ({"llm_destroy"}, set()),
    "create_takes_no_block": ({"append_cow", "create_free"}, set()),
    "init_counts_100": ({"create_free"}, set()),
}


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


# ---- prefix: tests/prefix_shapes/<shape>_shape.py ---------------------------------------------------------------
# shape -> the items that apply to its test implementation (correct, of that shape) under its own policy (the rest:
# not applicable); a look-up is replayed as an admission and a free on shapes without one (test_prefix_grade)
PREFIX_SHAPES_APPLY: dict[str, set[str]] = {
    # no fork: no_false_hit is graded by its program without fork (programs.WITHOUT_FORK)
    "minivllm": {"free_queue", "hash_chaining", "touch", "eviction", "atomic_allocation", "no_false_hit", "append", "fuzz"},
    # its index entries stay when a block is reused (old nano-vllm's design), which is how old nano-vllm's
    # false hit comes about: the fuzz item and no_false_hit's program without fork find it (test_prefix_grade)
    "nanovllm": {"free_queue", "hash_chaining", "touch", "atomic_allocation", "reverse_order_free", "append"},
    "yaie": {"free_queue", "atomic_allocation", "fuzz"},
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
