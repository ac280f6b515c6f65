"""The blockspace model (oracle/blockspace/model.py) on the paper's examples, by hand."""

from oracle.blockspace.model import CPU, GPU, VLLM_V0, BlockspaceModel


def model(gpu: int = 8, cpu: int = 4, block_size: int = 4, watermark: float = 0.0) -> BlockspaceModel:
    return BlockspaceModel(block_size, gpu, cpu, watermark)


def test_a_7_token_prompt_fills_two_blocks_and_a_new_block_comes_only_when_the_last_is_full():
    m = model()
    m.arrive(0, [0], list(range(7)))
    assert m.can_allocate(0) == "OK"
    m.allocate(0)
    assert m.seqs[0].table == [0, 1] and m.kv[GPU][1] == (4, 5, 6)
    assert m.append(0, 7) == [] and m.seqs[0].table == [0, 1] and m.kv[GPU][1] == (4, 5, 6, 7)
    assert m.append(0, 8) == [] and m.seqs[0].table == [0, 1, 2] and m.kv[GPU][2] == (8,)
    assert m.waste() == (12, 9)


def test_parallel_samples_share_the_prompt_and_the_first_writer_copies_the_shared_block():
    m = model()
    m.arrive(0, [0, 1], list(range(7)))
    m.allocate(0)
    assert m.seqs[0].table == m.seqs[1].table == [0, 1] and m.ref_count(GPU, 1) == 2
    assert m.append(0, 100) == [(1, 2)]
    assert m.seqs[0].table == [0, 2] and m.kv[GPU][2] == (4, 5, 6, 100) and m.kv[GPU][1] == (4, 5, 6)
    assert m.append(1, 200) == [] and m.kv[GPU][1] == (4, 5, 6, 200)  # held once now: in place
    assert m.waste() == (12, 12)


def test_fork_and_free_follow_the_ref_counts():
    m = model()
    m.arrive(0, [0], list(range(5)))
    m.allocate(0)
    m.fork(0, 1, 0)
    assert m.ref_count(GPU, 0) == 2
    m.free_seq(0)
    assert m.free[GPU] == [2, 3, 4, 5, 6, 7] and m.ref_count(GPU, 1) == 1
    m.free_seq(1)
    assert sorted(m.free[GPU]) == list(range(8)) and m.kv[GPU] == {}


def test_swap_moves_each_shared_block_once_and_keeps_the_contents():
    m = model(gpu=6, cpu=4)
    m.arrive(0, [0, 1], list(range(7)))
    m.allocate(0)
    m.append(0, 100)  # three distinct blocks now
    assert m.can_swap_out(0)
    m.swap(0, "running", GPU, CPU)
    assert [m.seqs[i].device for i in (0, 1)] == [CPU, CPU] and len(m.free[CPU]) == 1 and len(m.free[GPU]) == 6
    assert m.seqs[0].table[0] == m.seqs[1].table[0]  # shared on the CPU too
    assert m.can_swap_in(0) == "OK"  # 3 blocks + 2 sequences <= 6
    m.swap(0, "swapped", CPU, GPU)
    assert [m.kv[GPU][b] for b in m.seqs[0].table] == [(0, 1, 2, 3), (4, 5, 6, 100)]
    assert len(m.free[CPU]) == 4


def test_swap_is_bounded_by_the_other_devices_free_blocks():
    m = model(gpu=6, cpu=1)
    m.arrive(0, [0], list(range(5)))
    m.allocate(0)
    assert not m.can_swap_out(0)
    big = model(gpu=4, cpu=4)
    big.arrive(0, [0, 1], list(range(8)))
    big.allocate(0)
    big.swap(0, "running", GPU, CPU)
    assert big.can_swap_in(0) == "OK"  # 2 blocks + 2 sequences = 4
    big.arrive(1, [2], [9])
    big.allocate(1)
    assert big.can_swap_in(0) == "LATER"


def test_can_allocate_keeps_the_watermark_back():
    m = model(gpu=20, watermark=0.1)  # 2 blocks kept back
    for tokens, status in ((80, "NEVER"), (76, "NEVER"), (72, "OK")):
        m.arrive(tokens, [tokens], list(range(tokens)))
        assert m.can_allocate(tokens) == status
    m.allocate(72)
    m.arrive(1, [1], [0])
    assert m.can_allocate(1) == "LATER"
    m.drop(80)
    assert 80 not in m.seqs


def test_recompute_frees_the_blocks_and_keeps_the_tokens_as_a_new_prompt():
    m = model(gpu=3)
    m.arrive(0, [0], list(range(6)))
    m.allocate(0)
    m.append(0, 6)
    m.recompute(0)
    assert m.seqs[0].status == "waiting" and m.seqs[0].table == [] and len(m.free[GPU]) == 3
    assert m.can_allocate(0) == "OK"
    m.allocate(0)
    assert m.kv[GPU][m.seqs[0].table[1]] == (4, 5, 6)


def test_can_append_slots_asks_one_free_block_per_running_sequence():
    m = model(gpu=3)
    m.arrive(0, [0, 1], list(range(4)))
    m.allocate(0)
    assert m.can_append_slots(0, 0)  # 2 running, 2 free
    m.arrive(1, [2], [0])
    m.allocate(1)
    assert not m.can_append_slots(0, 0)


def test_under_vllm_v0_can_append_slots_counts_the_blocks_the_new_token_touches():
    m = BlockspaceModel(4, 3, 4, 0.0, VLLM_V0)
    m.arrive(0, [0, 1], list(range(4)))  # one full block, shared
    m.allocate(0)
    m.arrive(1, [2], [0])
    m.allocate(1)
    assert m.can_append_slots(0, 0)  # 1 free: seq 0's token touches one block, seq 1's full block none
    m.append(0, 4)
    assert not m.can_append_slots(0, 1)  # seq 0's partly filled block counts too: 2 > 0 free


def test_under_vllm_v0_each_sequence_swaps_its_own_copy_of_a_shared_block():
    m = BlockspaceModel(4, 6, 8, 0.0, VLLM_V0)
    m.arrive(0, [0, 1], list(range(9)))  # 3 blocks shared by 2 sequences
    m.allocate(0)
    assert m.can_swap_out(0)  # 6 CPU blocks needed, 8 free
    m.swap(0, "running", GPU, CPU)
    assert len(m.free[CPU]) == 2 and set(m.seqs[0].table).isdisjoint(m.seqs[1].table)
    assert m.can_swap_in(0) == "OK" and len(m.free[GPU]) == 6
    m.swap(0, "swapped", CPU, GPU)
    assert len(m.free[GPU]) == 0 and m.kv[GPU][m.seqs[1].table[2]] == (8,)
    small = BlockspaceModel(4, 4, 8, 0.0, VLLM_V0)
    small.arrive(0, [0, 1], list(range(9)))
    small.allocate(0)
    small.swap(0, "running", GPU, CPU)
    assert small.can_swap_in(0) == "NEVER"  # 6 blocks > 4 GPU blocks
