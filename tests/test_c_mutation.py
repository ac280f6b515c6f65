"""The C mutation campaign (mutation/c_mutants.py, mutation/c_campaign.py): the generator on a small C
snippet, and a handful of chosen mutants of the C reference through the whole machinery (real gcc, the real
grader in forked processes): each must be killed, a mutant with the reference's object code must be called
equivalent, one that does not compile must be dropped. The full campaign is `pagedcheck mutation --c`."""

import re
import shutil
from pathlib import Path

import pytest

from mutation import c_campaign, c_result
from mutation.c_mutants import OPERATORS, generate, tokenize

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("objcopy") is None,
                                reason="needs gcc and objcopy")

SNIPPET = r'''#include "snippet.h"
#define LIMIT 16 /* a < b in a comment */
#define SQUARE(x) ((x) * (x))

static int sum(int *values, int count, int step)
{
    int total = 0;
    for (int i = 0; i < count; i += step) {
        if (values[i] == -1)
            continue;
        total = total + values[i] * 2;
    }
    while (count > LIMIT && step != 0)
        count--;
    return total; // "not < this"
}

void fill(char *dst, const char *src, int n)
{
    const char *label = "a <= b, x + 1";
    char c = '<';
    memcpy(dst, src, n);
    (void)label;
    (void)c;
    if (n >= 4)
        return;
    dst[0] = src[0];
    n++;
}
'''


def _mutants():
    return generate(SNIPPET, name="snippet.c")


def test_every_operator_kind_appears_and_every_mutant_differs():
    mutants = _mutants()
    assert {m.operator for m in mutants} == set(OPERATORS)
    assert all(m.source != SNIPPET and m.diff for m in mutants)
    assert len({m.id for m in mutants}) == len(mutants)
    assert all(re.fullmatch(rf"({'|'.join(OPERATORS)})@\d+:\d+#\d+", m.id) for m in mutants)
    assert [m.id for m in mutants] == [m.id for m in _mutants()]  # deterministic
    lines = {m.id: m.mutated_lines for m in mutants}
    expected = {
        "relational": "for (int i = 0; i <= count; i += step) {",
        "logical": "while (count > LIMIT || step != 0)",
        "arithmetic": "total = total - values[i] * 2;",
        "increment": "count++;",
        "assignment": "for (int i = 0; i < count; i -= step) {",
        "constant": "if (values[i] == -2)",
        "negate": "if (!(values[i] == -1))",
        "delete": "{}",
        "jump": "break;",
        "swap_args": "memcpy(src, dst, n);",
    }
    for operator, line in expected.items():
        assert any(i.startswith(operator + "@") and line in mutated for i, mutated in lines.items()), operator
    assert any("for (int i = 0; !(i < count); i += step) {" in mutated for mutated in lines.values())
    assert any("while (count > (LIMIT - 1) && step != 0)" in mutated for mutated in lines.values())
    assert any("if (values[i] == 0)" in mutated for mutated in lines.values())  # -1 -> 0


def test_comments_strings_and_preprocessor_lines_are_left_alone():
    protected = ['#include "snippet.h"', "#define LIMIT 16 /* a < b in a comment */", "#define SQUARE(x) ((x) * (x))",
                 '// "not < this"', '"a <= b, x + 1"', "'<'"]
    for mutant in _mutants():
        for text in protected:
            assert text in mutant.source, (mutant.id, text)
    assert not any(t.text in ("include", "define", "SQUARE") for t in tokenize(SNIPPET))


def test_statement_deletion_skips_declarations_and_value_returns():
    deleted = [m.mutated_lines for m in _mutants() if m.operator == "delete"]
    removed = {line[1:].strip() for m in _mutants() if m.operator == "delete"
               for line in m.diff.splitlines() if line.startswith("-") and not line.startswith("---")}
    assert removed == {"continue;", "total = total + values[i] * 2;", "count--;", "memcpy(dst, src, n);",
                       "(void)label;", "(void)c;", "return;", "dst[0] = src[0];", "n++;"}
    assert all(lines == ["{}"] for lines in deleted)


REFERENCE_LINES = {  # a chosen mutant of the C reference -> the line its diff must show
    "first_fit_starts_at_1": ("constant", "for (int block = 1; block < engine->total_local_blocks; block++) {"),
    # (BLOCK_SIZE - 1) once survived: tests/submissions/broken/cmut_cow_copies_63_bytes.patch, mutation/README.md
    "cow_copies_65_bytes": ("constant", "memcpy(block_addr(engine, copy), block_addr(engine, old), (BLOCK_SIZE + 1));"),
    "free_breaks_at_null_l1": ("jump", "break;"),
    "fork_no_increment": ("delete", "{}"),
}


def _chosen(mutant) -> str | None:
    for name, (operator, line) in REFERENCE_LINES.items():
        if mutant.operator == operator and line in mutant.mutated_lines:
            if name == "fork_no_increment" and "engine->ref_count[to[j]]++;" not in mutant.diff:
                continue
            if name == "free_breaks_at_null_l1" and mutant.line > 100:  # the L1 walk in destroy_block_table
                continue
            return name
    return None


IDENTICAL = "for (int i = 0; i != L2_PT_SIZE; i++)"  # new_l2_table's fill loop: gcc emits the same code
NOT_COMPILING = "Sequence *seq = container_of(Sequence, pos, node);"


@pytest.mark.unmeasured
def test_chosen_reference_mutants_are_killed_end_to_end():
    def only(m):
        return _chosen(m) is not None or IDENTICAL in m.mutated_lines or NOT_COMPILING in m.mutated_lines

    result = c_campaign.run_campaign(c_campaign.REFERENCE, jobs=2, triage={}, only=only)
    names = {_chosen(o.mutant): o for o in result.outcomes}
    assert set(names) == set(REFERENCE_LINES), [o.mutant.id for o in result.outcomes]
    for name, outcome in names.items():
        assert outcome.status == "killed", (name, outcome.status, outcome.message)
        assert outcome.item, name
    assert [m.mutated_lines for m in result.identical] == [[IDENTICAL]]
    assert [m.mutated_lines for m in result.not_compiling] == [[NOT_COMPILING]]
    assert result.score == 1.0 and result.passed(0.95)
    data = result.as_dict(0.95)
    assert data["killed"] == 4 and data["identical_object"] == 1 and data["not_compiling"] == 1
    assert data["equivalent"][0]["reason"] == "identical object code"


def test_a_survivor_is_equivalent_only_when_its_triage_line_matches(tmp_path):
    path = tmp_path / "triage.toml"
    path.write_text('[equivalent]\n"relational@1:1#0" = { line = "x < y", reason = "why" }\n')
    assert c_campaign.load_triage(path)["relational@1:1#0"].reason == "why"
    path.write_text('[equivalent]\n"relational@1:1#0" = { reason = "no line" }\n')
    with pytest.raises(c_campaign.CampaignError, match="needs a `line`"):
        c_campaign.load_triage(path)
    assert all(Path(c_result.TRIAGE_FILE).read_text().count(entry.line) for entry in c_campaign.load_triage().values())


def test_quick_rubric_orders_cheapest_first_with_zero_point_items_last():
    from oracle.hw3 import grade as hw3

    rubric = hw3.load()
    quick = c_campaign.quick_rubric(rubric)
    ids = [item.id for item in quick.items]
    assert sorted(ids) == sorted(item.id for item in rubric.items)
    assert ids.index("fuzz") < ids.index("memory_safety") and ids[-1] == "alloc_failure"
    assert ids.index("create_free") < ids.index("fuzz")
    fuzz = next(item for item in quick.items if item.id == "fuzz")
    assert fuzz.options["examples"] <= 60 and fuzz.options["shrink_replays"] <= 100 and fuzz.options["seed"] == 110


def test_grade_mutant_stops_at_the_first_failed_item(tmp_path):
    """In this process (the campaign forks it): the quick rubric stops at the first failure."""
    from oracle.hw3 import grade as hw3

    mutant = next(m for m in generate(c_campaign.REFERENCE.read_text(), header_dirs=(c_campaign.REFERENCE.parent,))
                  if _chosen(m) == "fork_no_increment")
    (tmp_path / "llm_memory.c").write_text(mutant.source)
    verdict = c_campaign.grade_mutant(tmp_path / "llm_memory.c", c_campaign.quick_rubric(hw3.load()), tmp_path / "out",
                                      tmp_path / "build", stop_early=True)
    assert verdict["status"] == "killed", verdict
    order = [item.id for item in c_campaign.quick_rubric(hw3.load()).items]
    assert order.index(verdict["item"]) < order.index("fuzz"), verdict  # a fixed scenario, not the fuzz
    assert "ref_count" in verdict["message"]


def test_cli_c_option_defaults_to_the_familys_reference_and_refuses_a_missing_file(tmp_path, capsys):
    from oracle.cli import build_parser, main
    from oracle.family import family_named

    assert family_named("hw3").mutation.c_reference == c_campaign.REFERENCE  # what a bare --c mutates
    assert build_parser().parse_args(["mutation", "--c"]).c == ""
    assert build_parser().parse_args(["mutation"]).c is None
    assert main(["mutation", "--c", str(tmp_path / "nope.c")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["mutation", "--c", "--family", "prefix"]) == 2
    assert "--family prefix: this family grades no C" in capsys.readouterr().err
