"""Our prefix engine (engine/prefix) rule by rule, read against seed 001."""

import pytest

from engine.prefix import BlockPool, FreeKVCacheBlockQueue, KVCacheBlock, KVCacheManager, Request, hash_block_tokens
from engine.prefix.hashing import hash_request_blocks


def ids(blocks):
    return [b.block_id for b in blocks]


def test_free_queue_removes_a_middle_block_and_keeps_the_rest_ordered():
    blocks = [KVCacheBlock(i) for i in range(4)]
    queue = FreeKVCacheBlockQueue(blocks)
    queue.remove(blocks[2])
    assert ids(queue.get_all_free_blocks()) == [0, 1, 3] and queue.num_free_blocks == 3
    assert queue.popleft() is blocks[0]
    queue.append(blocks[2])
    assert ids(queue.get_all_free_blocks()) == [1, 3, 2]


def test_free_queue_popleft_on_empty_raises():
    with pytest.raises(ValueError, match="^no free blocks$"):
        FreeKVCacheBlockQueue([]).popleft()


def test_hash_is_chained_same_tokens_after_different_parents_differ():
    assert hash_block_tokens(None, [1, 2]) != hash_block_tokens(hash_block_tokens(None, [3]), [1, 2])


def test_block_pool_reserves_the_null_block_and_refuses_too_many():
    pool = BlockPool(3)
    assert pool.null_block.block_id == 0 and pool.null_block.is_null
    assert pool.get_num_free_blocks() == 2 and pool.get_usage() == 0.0
    with pytest.raises(ValueError, match="^cannot get 3 free blocks from the pool$"):
        pool.get_new_blocks(3)
    taken = pool.get_new_blocks(1)
    assert ids(taken) == [1] and taken[0].ref_cnt == 1 and pool.get_usage() == 0.5
    with pytest.raises(ValueError, match="^num_blocks must be at least 1 \\(the null block\\), got 0$"):
        BlockPool(0)
    assert BlockPool(1).get_usage() == 0.0


def test_fork_block_copies_only_a_shared_block_and_refuses_without_a_free_one():
    pool = BlockPool(3)
    block = pool.get_new_blocks(1)[0]
    assert pool.fork_block(block) is block
    pool.touch([block])
    copy = pool.fork_block(block)
    assert copy is not block and block.ref_cnt == 1 and copy.ref_cnt == 1
    pool.touch([block])
    pool.touch([block])
    with pytest.raises(ValueError):
        pool.fork_block(block)
    assert block.ref_cnt == 3


def test_manager_hits_are_capped_and_freed_blocks_stay_warm_until_reused():
    manager = KVCacheManager(block_size=2, num_blocks=5)
    first = Request("a", [1, 2, 3, 4])
    assert manager.get_computed_blocks(first) == ([], 0)
    assert ids(manager.allocate_slots(first, 4)) == [1, 2]
    same = Request("b", [1, 2, 3, 4])
    hits, cached = manager.get_computed_blocks(same)
    assert ids(hits) == [1] and cached == 2  # one token is always left to compute
    manager.free(first)
    assert ids(manager.block_pool.free_block_queue.get_all_free_blocks()) == [3, 4, 2, 1]  # reverse order
    hits, _ = manager.get_computed_blocks(same)
    assert ids(manager.allocate_slots(same, 2, hits)) == [3]  # the hit (block 1) leaves the queue; the new block is its head
    assert manager.block_pool.get_cached_block(hash_block_tokens(None, [1, 2])).block_id == 1
    assert not manager.reset_prefix_cache()
    manager.free(same)
    manager.free(same)  # a freed request again: nothing happens
    assert manager.reset_prefix_cache() and manager.block_pool.cached_block_hash_to_block == {}


def test_manager_refuses_without_changing_anything_and_rejects_bad_requests():
    manager = KVCacheManager(block_size=2, num_blocks=2)
    request = Request("a", [1, 2, 3])
    assert manager.allocate_slots(request, 3) is None and manager.req_to_blocks == {}
    with pytest.raises(ValueError, match="^num_new_tokens must be positive, got 0$"):
        manager.allocate_slots(request, 0)
    with pytest.raises(ValueError, match="^request a has 3 tokens, asked for slots up to 4$"):
        manager.allocate_slots(request, 4)
    with pytest.raises(ValueError, match="^block_size must be positive, got 0$"):
        KVCacheManager(block_size=0, num_blocks=2)
    single = KVCacheManager(block_size=1, num_blocks=3)
    assert ids(single.allocate_slots(Request("s", [4, 5]), 2)) == [1, 2]
    off = KVCacheManager(block_size=2, num_blocks=4, enable_caching=False)
    off.allocate_slots(request, 3)
    assert off.get_computed_blocks(Request("b", [1, 2, 3])) == ([], 0)
    request.append_output_token_ids(9)
    assert request.all_token_ids == [1, 2, 3, 9]
    assert len(hash_request_blocks([1, 2, 3], 2)) == 1 and len(hash_request_blocks([1, 2, 3, 4], 2)) == 2


def test_fork_of_a_block_three_requests_share_drops_one_reference():
    pool = BlockPool(4)
    block = pool.get_new_blocks(1)[0]
    pool.touch([block, block])
    assert pool.fork_block(block) is not block and block.ref_cnt == 2


def test_a_freed_request_id_admitted_again_caches_its_blocks_afresh():
    manager = KVCacheManager(block_size=2, num_blocks=6)
    first = Request("a", [1, 2, 3, 4, 5])
    manager.allocate_slots(first, 5)
    manager.free(first)
    manager.reset_prefix_cache()
    again = Request("a", [1, 2, 3, 4, 5])
    manager.allocate_slots(again, 5)
    assert len(manager.block_pool.cached_block_hash_to_block) == 2
