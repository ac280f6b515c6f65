"""Mini-YAIE's shape (seed 004): `KVCacheManager(num_blocks, block_size, num_heads, head_dim)` with
`allocate_blocks(request_id, num_tokens)` (RuntimeError when short), `free_blocks(request_id)` and
`copy_blocks(src, dst)` (lists of the same length, else ValueError); no ref counts, no prefix cache. Read
white-box: `free_block_list` (taken from the front) and `block_tables` (request id -> block ids). Checked for
conservation and leaks: a copy changes no table and no free block.
"""

from typing import Any

from oracle.prefix.adapters import call, require
from oracle.prefix.observation import ImplementationFailure, Observation
from oracle.prefix.policy import MINI_YAIE, Policy


class YaieAdapter:
    shape = "yaie"
    default_policy = MINI_YAIE
    supports = frozenset({"copy"})
    shows = frozenset({"free"})  # every observe() gives these (remote.py)

    def __init__(self, target: Any, spec: str, policy: Policy = MINI_YAIE):
        require(target, spec, ["KVCacheManager"])
        self.target, self.spec, self.policy = target, spec, policy

    def start(self, num_blocks: int, block_size: int) -> None:
        self.manager = call("KVCacheManager()", self.target.KVCacheManager, num_blocks, block_size, 1, 1)
        self.live: set[int] = set()

    def admit(self, rid: int, tokens: list[int]) -> tuple[bool, int | None]:
        try:
            self.manager.allocate_blocks(f"req-{rid}", len(tokens))
        except RuntimeError:  # not enough free blocks: refused
            return False, None
        except Exception as exc:
            raise ImplementationFailure(f"allocate_blocks raised {type(exc).__name__}: {exc}") from exc
        self.live.add(rid)
        return True, None

    def copy(self, src: int, dst: int, mismatched: bool) -> bool:
        """copy_blocks from the blocks of request `src` to those of `dst` (as many as both have; with
        `mismatched`, one more destination than sources). True when it was refused with ValueError."""
        tables = self.manager.block_tables
        sources, targets = list(tables[f"req-{src}"]), list(tables[f"req-{dst}"])
        n = min(len(sources), len(targets))
        sources, targets = sources[:n], targets[:n]
        if mismatched:
            targets.append(targets[0] if targets else 0)
        try:
            self.manager.copy_blocks(sources, targets)
        except ValueError:
            return True
        except Exception as exc:
            raise ImplementationFailure(f"copy_blocks raised {type(exc).__name__}: {exc}") from exc
        return False

    def free(self, rid: int) -> None:
        self.live.discard(rid)
        call("free_blocks", self.manager.free_blocks, f"req-{rid}")

    def observe(self) -> Observation:
        try:
            tables = self.manager.block_tables
            return Observation(
                tables={rid: tuple(tables[f"req-{rid}"]) for rid in self.live if f"req-{rid}" in tables},
                free=tuple(self.manager.free_block_list),
            )
        except (AttributeError, TypeError) as exc:
            raise ImplementationFailure(f"state unreadable: {exc}") from exc

    def close(self) -> None:
        self.live = set()
