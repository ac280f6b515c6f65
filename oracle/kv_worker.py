"""What a simulated worker's KV blocks hold, for a family whose implementations only manage blocks (a block manager
never holds the KV itself): written only by what the calls tell a worker to do (a prompt written at allocation, a
token into its slot, a copy-on-write pair or a swap pair copied), never read from the implementation. After each
call every block of every live table must hold what the model says (a swap round trip and a copy-on-write keep the
KV, a block handed to two sequences holds one's tokens only)."""

from typing import Iterable

from oracle.difference import Difference

KV_CONTENTS = "kv contents"  # the aspect (a family words it and maps it to its rules)
Tokens = tuple[int, ...]


def shown(tokens: Tokens | None) -> str:
    return "nothing" if tokens is None else f"the KV of tokens {list(tokens)}"


class Worker:
    def __init__(self, devices: Iterable[str]):
        self.blocks: dict[str, dict[int, Tokens | None]] = {device: {} for device in devices}

    def write(self, device: str, blocks: Iterable[tuple[int, Tokens]]) -> None:
        """Whole blocks written: (block, the tokens it holds)."""
        self.blocks[device].update(blocks)

    def write_slot(self, device: str, block: int, slot: int, token: int) -> None:
        self.blocks[device][block] = (self.blocks[device].get(block) or ())[:slot] + (token,)

    def copy(self, src: str, dst: str, pairs: Iterable[tuple[int, int]]) -> None:
        """Each (old, new) pair: block `new` of `dst` now holds what block `old` of `src` held."""
        self.blocks[dst].update([(new, self.blocks[src].get(old)) for old, new in pairs])

    def difference(self, expected: Iterable[tuple[str, str, int, Tokens]]) -> Difference | None:
        """The first (where, device, block, tokens) whose block does not hold those tokens."""
        for where, device, block, want in expected:
            got = self.blocks[device].get(block)
            if want != got:
                return Difference(KV_CONTENTS, f"{where} ({device} block {block})", shown(want), shown(got))
        return None
