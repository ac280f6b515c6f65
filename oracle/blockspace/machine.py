"""The blockspace state machine: Hypothesis draws programs of the scheduler's calls (requests arrive and are
admitted, sequences decode, fork and finish, groups are preempted by swapping or recomputation); the driver makes
each call on the implementation and the model and checks every invariant after it. A test class:
`machine_for(load_adapter("engine")).TestCase`."""

from typing import Any, Callable

from hypothesis import assume, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from oracle.blockspace.driver import Driver
from oracle.blockspace.model import Policy
from oracle.stats import RunStats

picks = st.integers(0, 7)  # which live sequence or group, modulo how many there are


class BlockspaceMachine(RuleBasedStateMachine):
    adapter_factory: Callable[[], Any]
    stats: RunStats

    def __init__(self) -> None:
        super().__init__()
        self.stats.examples += 1
        self.driver = Driver(self.adapter_factory(), self.stats, getattr(self.adapter_factory, "policy", Policy()))

    def _seq(self, pick: int, status: str = "running") -> int | None:
        seqs = [i for i, s in self.driver.model.seqs.items() if s.status == status]
        return seqs[pick % len(seqs)] if seqs else None

    def _group(self, pick: int, status: str) -> int:
        seq = self._seq(pick, status)
        return -1 if seq is None else self.driver.model.seqs[seq].group  # -1: no such group, the call is skipped

    @initialize(block_size=st.sampled_from([1, 2, 4, 4]), gpu=st.integers(2, 24),
                cpu=st.one_of(st.integers(0, 4), st.integers(0, 16)),
                watermark=st.sampled_from([0.0, 0.0, 0.01, 0.1, 0.25]))
    def start(self, block_size: int, gpu: int, cpu: int, watermark: float) -> None:
        assume(block_size >= 1 and gpu >= 1 and cpu >= 0 and 0 <= watermark < 1)  # a shrunk replay may ask otherwise
        self.driver.start(block_size, gpu, cpu, watermark)

    @rule(prompt_len=st.integers(1, 13), samples=st.sampled_from([1, 1, 1, 2, 3]))
    def arrive(self, prompt_len: int, samples: int) -> None:
        assume(prompt_len >= 1 and samples >= 1)
        self.driver.arrive(prompt_len, samples)
        self.driver.admit()

    @rule()
    def admit(self) -> None:
        self.driver.admit()

    @rule(pick=picks, tokens=st.sampled_from([1, 1, 2, 3, 5]))
    def append(self, pick: int, tokens: int) -> None:
        seq = self._seq(pick)
        while seq is not None and tokens and self.driver.append(seq):
            tokens -= 1

    @rule(pick=picks, new_group=st.sampled_from([False, False, True]))
    def fork(self, pick: int, new_group: bool) -> None:
        self.driver.fork(self._seq(pick), new_group)

    @rule(pick=picks, swapped=st.sampled_from([False, False, True]))
    def free(self, pick: int, swapped: bool) -> None:
        """A sequence finishes, or a swapped one is aborted."""
        self.driver.free(self._seq(pick, "swapped" if swapped else "running"))

    @rule(pick=picks, out=st.booleans())
    def swap(self, pick: int, out: bool) -> None:
        self.driver.swap(self._group(pick, "running" if out else "swapped"), out)

    @rule(pick=picks)
    def recompute(self, pick: int) -> None:
        self.driver.recompute(self._group(pick, "running"))

    def teardown(self) -> None:
        self.driver.impl.close()


def machine_for(adapter_factory: Callable[[], Any], stats: RunStats | None = None) -> type[BlockspaceMachine]:
    """A machine class bound to an implementation; `stats` collects what its runs fire and reach."""
    return type("BlockspaceMachine", (BlockspaceMachine,),
                {"adapter_factory": staticmethod(adapter_factory), "stats": stats if stats is not None else RunStats()})
