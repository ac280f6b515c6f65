"""Seed 003's own BlockManager and Sequence (a minivllm write-up), graded and fuzzed as published and with
each of its two bugs alone: its messages speak its names, and each bug is charged to the one rule it breaks.

The code is never committed: it is cut at test time from the seed's text (its ```python blocks), named by
`PAGEDCHECK_SEED003` (the seed file) or found at /work/shared/seeds/003_*.txt; the tests skip when neither
exists. The two bugs, by reading the code:
- a block that is not full when the manager takes it (a prompt's last block, a block `manage_blocks_after_append`
  takes) is never counted: `ref_cache` stays 0 while `seq.block_list` holds it (and `deallocate_for_sequence`
  then trips its own assertion);
- `Sequence.append_token` does not count the token (`num_tokens`, hence `len(seq)`, keeps the prompt's length),
  so `manage_blocks_after_append` decides by a stale length.
"""

import os
import re
from pathlib import Path

import pytest

from oracle.prefix import FAMILY, load_adapter
from oracle.prefix.grade import grade, load
from oracle.prefix.rules import rule_of
from oracle.runner import fuzz
from tests.test_prefix_grade import clean_grade_rubric

pytestmark = pytest.mark.unmeasured  # verdicts of whole grades: unmeasured by --cov (conftest.py MEASURE_ALL)

SEED = os.environ.get("PAGEDCHECK_SEED003") or next(iter(sorted(Path("/work/shared/seeds").glob("003_*.txt"))), "")

# each bug's fix, as (published text, fixed text): a test fails if the seed's text no longer has it
COUNT_NEW_BLOCKS = [
    ("                new_block_id = self.free_blocks.pop()\n                self.blocks[new_block_id].token_ids",
     "                new_block_id = self.free_blocks.pop()\n                self.blocks[new_block_id].ref_cache = 1\n"
     "                self.blocks[new_block_id].token_ids"),
    ("            self.hash_to_block[hash] = sequence.block_list[block_idx]\n"
     "            self.blocks[sequence.block_list[block_idx]].ref_cache += 1\n",
     "            self.hash_to_block[hash] = sequence.block_list[block_idx]\n"),
    ("                new_block_id = self.free_blocks.pop()\n                sequence.num_blocks+=1",
     "                new_block_id = self.free_blocks.pop()\n                self.blocks[new_block_id].ref_cache = 1\n"
     "                sequence.num_blocks+=1"),
]
COUNT_APPENDED_TOKENS = [("        self.last_token = token_id\n",
                          "        self.last_token = token_id\n        self.num_tokens += 1\n")]
# a manager slow in wall-clock time, not in CPU time, as a busy machine makes every one: each BlockManager() waits first
WAITS_AT_START = [("        self.block_size = block_size\n        self.num_blocks = num_blocks\n",
                   "        __import__('time').sleep(0.75)\n"
                   "        self.block_size = block_size\n        self.num_blocks = num_blocks\n")]


@pytest.fixture(scope="module")
def seed003(tmp_path_factory):
    """A function making a package of seed 003's code with the given fixes; returns its module name."""
    if not SEED or not Path(SEED).is_file():
        pytest.skip("seed 003's text is absent (set PAGEDCHECK_SEED003 to the seed file)")
    code = "\n\n".join(re.findall(r"```python\n(.*?)```", Path(SEED).read_text(), re.S))
    folder = tmp_path_factory.mktemp("seed003")
    made = []

    def package(name: str, *fixes: list[tuple[str, str]]) -> str:
        text = code
        for old, new in (pair for fix in fixes for pair in fix):
            assert text.count(old) == 1, f"seed 003's text changed: {old!r}"
            text = text.replace(old, new)
        (folder / name).mkdir(exist_ok=True)
        (folder / name / "__init__.py").write_text(text)
        made.append(name)
        return name

    import sys
    sys.path.insert(0, str(folder))
    yield package
    sys.path.remove(str(folder))
    for name in made:
        sys.modules.pop(name, None)


def fuzzed(module: str, seed: int = 1):
    impl = f"minivllm:{module}"
    return fuzz(FAMILY, impl, load_adapter(impl), examples=200, steps=30, seed=seed)


def test_a_new_block_left_uncounted_is_named_by_its_ref_cache_and_charged_to_allocation(seed003):
    report = fuzzed(seed003("seed003_published"))
    difference = report.failure.difference
    assert (difference.aspect, difference.location) == ("new block ref count", "manager.blocks[0].ref_cache")
    assert rule_of(difference, "admit") == "free_queue"
    assert str(difference) == ("new block ref count: manager.blocks[0].ref_cache: expected 1 (held by "
                               "seq0.block_list), got 0")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_stale_length_is_named_as_len_seq_against_its_tokens_and_charged_to_append(seed003, seed):
    report = fuzzed(seed003("seed003_stale_length", COUNT_NEW_BLOCKS), seed)
    difference = report.failure.difference
    assert difference.aspect == "token count" and rule_of(difference, "append") == "append", report.divergence
    assert re.fullmatch(r"token count: len\(seq(\d+)\) is (\d+), but seq\1\.token_ids holds (\d+) tokens \(a stale "
                        r"length: the pool decides the request's blocks by it\)", str(difference)), str(difference)
    assert difference.got == difference.expected - 1  # one append the manager did not count


def test_the_minimal_program_is_the_calls_seed_003_received(seed003):
    report = fuzzed(seed003("seed003_stale_length", COUNT_NEW_BLOCKS))
    told = FAMILY.describe_failure(report.failure, "minivllm:seed003_stale_length")
    assert told[0] == "Minimal failing program, as the calls the pool received:"
    assert told[2:4] == ["  1  Sequence.block_size = 2", "     manager = BlockManager(block_size=2, num_blocks=1)"]
    assert "  2  seq0 = Sequence([0])" in told and "     manager.allocate_for_sequence(seq0)  # -> accepted" in told
    assert told[-3].endswith("manager.manage_blocks_after_append(seq0)  # -> False  <-- went wrong here")
    assert told[-1].startswith("Call 3: token count: len(seq0) is 1, but seq0.token_ids holds 2 tokens")
    assert told[-1].endswith("[rule: append]")
    assert not any("state." in line or "count=" in line for line in told)  # no machine rule steps


def test_both_fixed_it_conforms(seed003):
    assert fuzzed(seed003("seed003_fixed", COUNT_NEW_BLOCKS, COUNT_APPENDED_TOKENS)).passed


def by_id(report) -> dict:
    return {item.id: item for item in report.items}


def test_graded_as_published_each_bug_fails_its_own_item_in_its_own_words(seed003, tmp_path):
    items = by_id(grade(f"minivllm:{seed003('seed003_published')}", load(), tmp_path))
    assert items["free_queue"].status == "failed" and items["free_queue"].message.startswith(
        "free queue: step 4 admit(req 2, tokens [20..22]): new block ref count: manager.blocks[3].ref_cache: "
        "expected 1 (held by seq2.block_list), got 0 [rule: free_queue]")
    assert items["append"].status == "failed" and items["append"].message == (
        "append: step 3 append(req 0, token 3): token count: len(seq0) is 2, but seq0.token_ids holds 3 tokens "
        "(a stale length: the pool decides the request's blocks by it) [rule: append]")
    # the other items' programs meet the uncounted block first: not graded, never charged
    assert {i for i, item in items.items() if item.status == "failed"} == {"free_queue", "append", "fuzz"}
    assert {i for i, item in items.items() if item.status == "passed"} == set()


def test_graded_with_the_stale_length_alone_only_append_and_fuzz_fail(seed003, tmp_path):
    report = grade(f"minivllm:{seed003('seed003_stale_length', COUNT_NEW_BLOCKS)}", load(), tmp_path)
    failed = {item.id for item in report.items if item.status == "failed"}
    assert failed == {"append", "fuzz"} and report.score == 48 and report.max_score == 68
    assert "[rule: append]" in by_id(report)["fuzz"].message


def test_graded_fixed_it_gets_every_point_that_applies(seed003, tmp_path):
    report = grade(f"minivllm:{seed003('seed003_fixed', COUNT_NEW_BLOCKS, COUNT_APPENDED_TOKENS)}",
                   clean_grade_rubric(tmp_path / "rubric.toml"), tmp_path / "out")
    assert report.score == report.max_score == 68, [(i.id, i.status, i.message) for i in report.items]


FUZZ_ONLY = ('[[item]]\nid = "fuzz"\npoints = 12\n[item.options]\n'
             'seed = 1\nexamples = 20\nsteps = 10\nshrink_replays = 2000\nseconds = 10.0\n')


def test_graded_fixed_but_slow_the_fuzz_time_limit_is_cpu_time_not_the_wall_clock(seed003, tmp_path):
    """The fuzz's `seconds` is a safety net in CPU seconds of the grader's process tree (oracle/run_cpu.py
    SafetyNet), so a correct manager that waits 0.75 s in every BlockManager() (past 10 s of wall clock in its 20
    programs, as a busy machine makes any grade wait) gets the fuzz's points as the same manager does at full
    speed. When it was the wall clock, the fixed seed 003 graded at load 12-16 lost the fuzz's 12 points as
    `incomplete` (56 of 68), and this one did too."""
    rubric = tmp_path / "fuzz.toml"
    rubric.write_text(FUZZ_ONLY)
    fixes = (COUNT_NEW_BLOCKS, COUNT_APPENDED_TOKENS)
    fast = grade(f"minivllm:{seed003('seed003_fixed', *fixes)}", load(rubric), tmp_path / "fast")
    slow = grade(f"minivllm:{seed003('seed003_fixed_slow', *fixes, WAITS_AT_START)}", load(rubric), tmp_path / "slow")
    assert slow.items[0].seconds > 10.0  # it did wait past the limit, in wall-clock time
    assert [(i.id, i.status, i.points, i.message) for i in slow.items] == \
        [(i.id, i.status, i.points, i.message) for i in fast.items] == [("fuzz", "passed", 12, "")]
