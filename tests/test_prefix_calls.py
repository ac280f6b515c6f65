"""oracle/prefix/calls.py and the false hit's wording: a failing fuzz prints the calls the pool received, in
its own API (each adapter's `written`), and a false hit names the block, the prefix its KV was computed for
and the prefix asked for, whichever adapter drove the pool."""

import re

import pytest

from oracle.prefix import FAMILY, load_adapter, shapes
from oracle.prefix.calls import listing
from oracle.prefix.compare import false_hit
from oracle.prefix.observation import Observation
from oracle.prefix.rules import rule_of
from oracle.program import Step
from oracle.runner import fuzz
from tests.conftest import ROOT
from tests.test_prefix_teeth import broken_engine  # noqa: F401 (a fixture)

MADE = [(Step("start", (3, 2)), None), (Step("admit", (0, [1, 1, 2])), (True, 0)), (Step("append", (0, 5)), False),
        (Step("free", (0,)), None)]

WRITTEN = {
    "lab": ["  1  manager = KVCacheManager(block_size=2, num_blocks=3)",
            "  2  req0 = Request('req-0', [1, 1, 2])",
            "     hits, num_cached = manager.get_computed_blocks(req0)",
            "     if num_cached < 3: manager.allocate_slots(req0, 3 - num_cached, hits)  # -> accepted, 0 hits",
            "  3  req0.all_token_ids.append(5)",
            "     manager.allocate_slots(req0, req0.num_tokens - req0.num_computed_tokens)  # -> False"
            "  <-- went wrong here",
            "  4  manager.free(req0)"],
    "minivllm": ["  1  Sequence.block_size = 2",
                 "     manager = BlockManager(block_size=2, num_blocks=3)",
                 "  2  seq0 = Sequence([1, 1, 2])",
                 "     manager.allocate_for_sequence(seq0)  # -> accepted, 0 hits",
                 "  3  seq0.append_token(5)",
                 "     manager.manage_blocks_after_append(seq0)  # -> False  <-- went wrong here",
                 "  4  manager.deallocate_for_sequence(seq0)"],
}


@pytest.mark.parametrize("shape", sorted(WRITTEN))
def test_a_shape_writes_the_calls_its_adapter_makes(shape):
    assert listing(shapes()[shape], MADE, 3) == WRITTEN[shape]


@pytest.mark.parametrize("shape, first", [
    ("nanovllm", "  1  Sequence.block_size = 2"),
    ("vllm", "  1  manager = KVCacheManager(KVCacheConfig(num_blocks=3, one FullAttentionSpec(block_size=2) group), "
             "enable_caching=True, hash_block_size=2)"),
    ("yaie", "  1  pool.start(num_blocks=3, block_size=2)"),  # no `written`: the adapter protocol's calls
])
def test_every_shape_writes_a_line_for_every_call(shape, first):
    lines = listing(shapes()[shape], MADE, 3)
    assert lines[0] == first and sum(line[:5].strip().isdigit() for line in lines) == 4
    assert [line for line in lines if "<-- went wrong here" in line] == [line for line in lines if "# -> False" in line]


def test_a_users_adapter_is_shown_as_the_contract_calls_made_on_it():
    factory = load_adapter("tests/prefix_contract/toy_pools.py:PowerOfTwoPool")
    adapter = factory()
    assert listing(adapter, MADE, 2)[:3] == ["  1  pool = PowerOfTwoPool(num_blocks=3, block_size=2)",
                                             "  2  pool.admit(0, [1, 1, 2])  # -> accepted, 0 hits  <-- went wrong here",
                                             "  3  pool.append(0, 5)  # -> False"]


FALSE_HIT = re.compile(r"no false hit: (?P<where>.+) \(block (?P<block>\d+)\) holds the KV computed for the prefix "
                       r"(?P<holds>\[[\d, ]*\]), not the KV of the prefix asked for, (?P<asked>\[[\d, ]*\])")


@pytest.mark.parametrize("shape, where", [("lab", "req 4 block_table[1]"), ("minivllm", "seq4.block_list[1]"),
                                          ("nanovllm", "req 4 block_table[1]"), ("vllm", "req 4 block_table[1]"),
                                          ("contract", "req 4 block_table[1]")])
def test_a_false_hit_names_the_block_the_prefix_its_kv_holds_and_the_prefix_asked_for(shape, where):
    names = getattr(shapes().get(shape), "names", {})
    difference = false_hit(Observation({4: (3, 2)}, (), names=names), 4, 1, 2, (1, 2, 3, 4), (9, 9, 3, 4))
    assert str(difference) == (f"no false hit: {where} (block 2) holds the KV computed for the prefix [9, 9, 3, 4], "
                               "not the KV of the prefix asked for, [1, 2, 3, 4]")
    assert rule_of(difference, "admit") == rule_of(difference, "append") == "no_false_hit"


def found_false_hit(impl: str, seeds=range(1, 4), examples: int = 200):
    for seed in seeds:
        report = fuzz(FAMILY, impl, load_adapter(impl), examples=examples, steps=30, seed=seed)
        if not report.passed and report.failure.difference.aspect == "no false hit":
            return report
    pytest.fail(f"{impl}: no false hit on seeds {list(seeds)}")


def test_a_false_hit_in_a_lab_pool_is_worded_and_its_calls_printed(broken_engine):  # noqa: F811
    report = found_false_hit(f"lab:{broken_engine('eviction_keeps_index')}@any")
    match = FALSE_HIT.fullmatch(str(report.failure.difference))
    assert match and match["holds"] != match["asked"], str(report.failure.difference)
    told = FAMILY.describe_failure(report.failure, "lab")
    assert told[2] == "  1  manager = KVCacheManager(block_size=2, num_blocks=3)" or told[2].startswith(
        "  1  manager = KVCacheManager(")
    assert any("manager.get_computed_blocks(" in line for line in told)
    assert told[-1].startswith("Call ") and told[-1].endswith("[rule: no_false_hit]")
    assert not any("state." in line for line in told)


def test_a_false_hit_through_the_nanovllm_shape_is_worded():
    report = found_false_hit("nanovllm:tests.prefix_shapes.nanovllm_shape", seeds=[0, 1, 2])
    assert FALSE_HIT.fullmatch(str(report.failure.difference)), str(report.failure.difference)


def test_a_false_hit_through_a_users_adapter_is_worded(broken_engine, tmp_path, monkeypatch):  # noqa: F811
    """Our lab adapter-contract example (tests/prefix_contract/lab_as_contract.py) over the broken engine."""
    source = (ROOT / "tests" / "prefix_contract" / "lab_as_contract.py").read_text()
    package = broken_engine("eviction_keeps_index")
    adapter = tmp_path / "broken_lab_adapter.py"
    adapter.write_text(source.replace("from engine.prefix.", f"from {package}."))
    report = found_false_hit(f"{adapter}:LabPool@any")
    assert FALSE_HIT.fullmatch(str(report.failure.difference)), str(report.failure.difference)
    told = FAMILY.describe_failure(report.failure, str(adapter))
    assert told[2].startswith("  1  pool = LabPool(num_blocks=") and any("pool.admit(" in line for line in told)


def test_a_users_adapter_names_its_own_fields_and_a_stale_length_is_caught_in_its_words():
    impl = "tests/prefix_contract/toy_pools.py:StaleLengthPool"
    report = fuzz(FAMILY, impl, load_adapter(impl), examples=100, steps=20, seed=1)
    difference = report.failure.difference
    assert re.fullmatch(r"token count: pool\.lengths\[(\d+)\] is (\d+), but request \1 holds (\d+) tokens \(a stale "
                        r"length: the pool decides the request's blocks by it\)", str(difference)), str(difference)
    assert rule_of(difference, "append") == "append"


def test_a_users_names_that_are_not_templates_of_rid_or_block_are_one_line():
    with pytest.raises(ValueError, match=r"^BadNames.names\['table'\]: expected one of table, ref_count, length, "
                                         r"tokens, naming \{rid\} or \{block\}, not 'pool.tables\[\{request\}\]'$"):
        load_adapter("tests/prefix_contract/toy_pools.py:BadNames")
