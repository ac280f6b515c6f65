"""Chained block hashing: a full block's hash covers its parent's hash, so equal tokens after different
prefixes hash differently."""

from collections.abc import Sequence


def hash_block_tokens(parent_hash: int | None, token_ids: Sequence[int]) -> int:
    return hash((parent_hash, tuple(token_ids)))


def hash_request_blocks(token_ids: Sequence[int], block_size: int) -> list[int]:
    """The chained hashes of every full block of `token_ids`, from the front."""
    hashes: list[int] = []
    parent = None
    for start in range(0, len(token_ids) - block_size + 1, block_size):
        parent = hash_block_tokens(parent, token_ids[start : start + block_size])
        hashes.append(parent)
    return hashes
