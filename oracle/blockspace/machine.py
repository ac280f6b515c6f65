"""The blockspace state machine: Hypothesis draws programs of the scheduler's calls (requests arrive and are
admitted, sequences decode, fork and finish, groups are preempted by swapping or recomputation); the driver makes
each call on the implementation and the model and checks every invariant after it. The machine is the core's
(oracle/table_machine.py), built from this table of operations. A test class:
`machine_for(load_adapter("engine")).TestCase`."""

from oracle.blockspace.driver import Driver
from oracle.blockspace.model import Policy
from oracle.step_strategy import Between, Choice
from oracle.table_machine import Operation, table_machine, valid

# Each argument is one plain choice (oracle/step_strategy.py): the choices Hypothesis's sampled_from, integers and
# one_of drew, without their spans; the first alternative is what shrinking aims at.
picks = Between(0, 7)  # which live sequence or group, modulo how many there are


def _seq(driver: Driver, pick: int, status: str = "running") -> int | None:
    seqs = [i for i, s in driver.model.seqs.items() if s.status == status]
    return seqs[pick % len(seqs)] if seqs else None


def _group(driver: Driver, pick: int, status: str) -> int:
    seq = _seq(driver, pick, status)
    return -1 if seq is None else driver.model.seqs[seq].group  # -1: no such group, the call is skipped


def start(driver: Driver, block_size: int, gpu: int, cpu: int, watermark: float) -> None:
    valid(block_size >= 1 and gpu >= 1 and cpu >= 0 and 0 <= watermark < 1)  # a shrunk replay may ask otherwise
    driver.start(block_size, gpu, cpu, watermark)


def arrive(driver: Driver, prompt_len: int, samples: int) -> None:
    valid(prompt_len >= 1 and samples >= 1)
    driver.arrive(prompt_len, samples)
    driver.admit()


def append(driver: Driver, pick: int, tokens: int) -> None:
    seq = _seq(driver, pick)
    while seq is not None and tokens and driver.append(seq):
        tokens -= 1


START = Operation(start, {"block_size": Choice(1, 2, 4, 4), "gpu": Between(2, 24),
                          "cpu": Choice(Between(0, 4), Between(0, 16)), "watermark": Choice(0.0, 0.0, 0.01, 0.1, 0.25)})
OPERATIONS = {
    "arrive": Operation(arrive, {"prompt_len": Between(1, 13), "samples": Choice(1, 1, 1, 2, 3)}),
    "admit": Operation(Driver.admit),
    "append": Operation(append, {"pick": picks, "tokens": Choice(1, 1, 2, 3, 5)}),
    "fork": Operation(lambda driver, pick, new_group: driver.fork(_seq(driver, pick), new_group),
                      {"pick": picks, "new_group": Choice(False, False, True)}),
    # a sequence finishes, or a swapped one is aborted
    "free": Operation(lambda d, pick, swapped: d.free(_seq(d, pick, "swapped" if swapped else "running")),
                      {"pick": picks, "swapped": Choice(False, False, True)}),
    "swap": Operation(lambda d, pick, out: d.swap(_group(d, pick, "running" if out else "swapped"), out),
                      {"pick": picks, "out": Choice(False, True)}),
    "recompute": Operation(lambda driver, pick: driver.recompute(_group(driver, pick, "running")), {"pick": picks}),
}
# the policy: what load_adapter says the implementation is checked under
machine_for = table_machine("BlockspaceMachine", START, OPERATIONS,
                            lambda impl, stats, factory: Driver(impl, stats, getattr(factory, "policy", Policy())))
