"""Hostile Python submission (review 7, after review 6's refusal_pool_file held), on top of
tests/broken/free_count_not_incremented.patch (a free never raises the free count, so later creates are refused for want
of blocks the engine has). Aimed at the refusal's second opinion (oracle/hw3/fresh_pool.py
refused_for_want_of_blocks): the program replayed from its llm_init in a fresh process over a pool of more blocks
(witness_pool: the program's size plus two blocks a block its calls can take), where the refused call must then
succeed for the refusal to be the free count's.

witness_pool is derived from the program "so that no size tells the second opinion from a graded run". But the
directed programs are public and few, and so are their pools' sizes: an engine whose pool is of no size a directed
program names is a second opinion's (or fuzzing's), and this one refuses every create there. The refusal then reads
as the create's own (create_free's), not the free count's."""

_PROGRAM_SIZES = {0, 63, 64, 100, 128, 192, 256, 383, 384, 385, 512, 525, 640, 703, 768, 1024, 1280, 1536, 2560,
                  5120, 16448, 19200, 19201, 19204}  # every llm_init of oracle/hw3/programs/*.txt
_WITNESS = False
_counting_wrong = (llm_init, create_sequence)


def llm_init(pool_addr, pool_size):
    global _WITNESS
    _WITNESS = pool_size not in _PROGRAM_SIZES
    return _counting_wrong[0](pool_addr, pool_size)


def create_sequence(engine, seq_id, initial_kv_len):
    if _WITNESS and engine is not None:
        return None
    return _counting_wrong[1](engine, seq_id, initial_kv_len)
