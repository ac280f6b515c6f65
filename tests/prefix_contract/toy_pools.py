"""Small pools written for the adapter-contract tests: no prefix cache, only power-of-two block sizes (like a
public pool that failed every seed on block_size=3 before adapters could say what they support)."""


class PowerOfTwoPool:
    block_sizes = (2, 4)
    pool_sizes = (4, 8)
    supports = {"append"}
    policy = {"caching": False, "free_order": "append", "release_order": "forward", "hit_cap": False}
    made: list[tuple[int, int]] = []  # every (num_blocks, block_size) a machine made, for the tests

    def __init__(self, num_blocks: int, block_size: int):
        if block_size & (block_size - 1):
            raise ValueError(f"block size {block_size} is not a power of two")
        PowerOfTwoPool.made.append((num_blocks, block_size))
        self.size, self.free_ids, self.tables, self.lengths = block_size, list(range(num_blocks)), {}, {}

    def admit(self, rid: int, tokens: list[int]) -> bool:
        need = -(-len(tokens) // self.size)
        if need > len(self.free_ids):
            return False
        self.tables[rid], self.lengths[rid] = [self.free_ids.pop(0) for _ in range(need)], len(tokens)
        return True

    def append(self, rid: int, token: int) -> bool:
        need = -(-(self.lengths[rid] + 1) // self.size) - len(self.tables[rid])
        if need > len(self.free_ids):
            return False
        self.tables[rid] += [self.free_ids.pop(0) for _ in range(need)]
        self.lengths[rid] += 1
        return True

    def free(self, rid: int) -> None:
        self.free_ids += self.tables.pop(rid, [])
        self.lengths.pop(rid, None)

    def observe(self) -> dict:
        return {"tables": self.tables, "free": self.free_ids}


class LeakyPool(PowerOfTwoPool):
    """Forgets the last block of a table of two or more when it is freed."""

    def free(self, rid: int) -> None:
        table = self.tables.pop(rid, [])
        self.free_ids += table[:-1] if len(table) > 1 else table
        self.lengths.pop(rid, None)


class NoObserve:
    def __init__(self, num_blocks: int, block_size: int):
        pass

    def admit(self, rid: int, tokens: list[int]) -> bool:
        return False

    def free(self, rid: int) -> None:
        pass


class StaleLengthPool(PowerOfTwoPool):
    """Sizes a request's blocks by a length its append never updates (seed 003's bug in another API), and says
    what it calls things, so messages use its words."""

    names = {"table": "pool.tables[{rid}]", "length": "pool.lengths[{rid}]", "tokens": "request {rid} holds"}

    def append(self, rid: int, token: int) -> bool:
        need = -(-(self.lengths[rid] + 1) // self.size) - len(self.tables[rid])
        if need > len(self.free_ids):
            return False
        self.tables[rid] += [self.free_ids.pop(0) for _ in range(need)]
        return True  # the token is never counted

    def observe(self) -> dict:
        return {**super().observe(), "lengths": dict(self.lengths)}


class BadNames(PowerOfTwoPool):
    names = {"table": "pool.tables[{request}]"}
