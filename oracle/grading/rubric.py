"""The rubric: which checks count, for how many points, and who sees them. Loaded from TOML.

    title = "Paged KV-cache allocator"
    site = "deps"                   # optional: packages every submission needs (pip install --target), beside it

    [gradescope]                    # optional
    visibility = "after_published"  # results.json's top-level visibility: when students see the whole result
    test_visibility = "hidden"      # the visibility of every item that sets none (default: visible)

    [[item]]
    id = "compiles"                 # a check the family defines
    name = "Compiles with the official flags"
    points = 5
    visibility = "visible"          # Gradescope: hidden, after_due_date, after_published, visible
    [item.options]                  # optional; only the options the check declares
    seconds = 8

Every mistake is a RubricError naming the file, the item and what is wrong, so a course finds it at once.
Points are finite and >= 0; a float option is finite; a check declares the bounds of its options as
OptionRules (`at_least(1)`, `positive`), checked here, so a bad value fails at load, not mid-grading.
"""

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

OptionRule = Callable[[Any], str | None]  # what is wrong with an option's value, or None


def at_least(low: int) -> OptionRule:
    """A whole-number option of `low` or more (examples, steps)."""
    return lambda value: None if value >= low else f"must be >= {low}"


def positive(value: float) -> str | None:
    """A finite number > 0 (seconds, timeouts)."""
    return None if math.isfinite(value) and value > 0 else "must be a finite number > 0"

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
_ITEM_KEYS = {"id", "name", "points", "visibility", "options"}
_GRADESCOPE_KEYS = {"visibility", "test_visibility"}


class RubricError(ValueError):
    """The rubric file cannot be used; the message says where and why."""


@dataclass(frozen=True)
class RubricItem:
    id: str
    name: str
    points: float
    visibility: str = "visible"
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Rubric:
    title: str
    items: tuple[RubricItem, ...]
    source: str  # the file it came from
    visibility: str | None = None  # Gradescope's top-level visibility; None: not set (Gradescope shows it)
    site: Path | None = None  # a folder of packages every submission needs (`site = "..."`, beside the rubric)

    @property
    def max_score(self) -> float:
        return sum(item.points for item in self.items)


def load_rubric(
    path: Path | str, checks: Mapping[str, Mapping[str, Any]], rules: Mapping[str, Mapping[str, OptionRule]] | None = None
) -> Rubric:
    """Reads and validates a rubric. `checks` maps each check id the family knows to its default options,
    `rules` each check id to the rules of its options; an item naming another id, or an option its check
    does not take, of another type, or outside its rule, is an error."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise RubricError(f"rubric {path}: cannot read it: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RubricError(f"rubric {path}: not valid TOML: {exc}") from None
    return parse_rubric(data, checks, str(path), rules)


def parse_rubric(
    data: Mapping[str, Any],
    checks: Mapping[str, Mapping[str, Any]],
    source: str,
    rules: Mapping[str, Mapping[str, OptionRule]] | None = None,
) -> Rubric:
    def fail(message: str) -> RubricError:
        return RubricError(f"rubric {source}: {message}")

    unknown = set(data) - {"title", "item", "gradescope", "site"}
    if unknown:
        raise fail(f"unknown top-level key(s) {', '.join(sorted(unknown))}; expected title, site, [gradescope] and "
                   "[[item]]")
    site = data.get("site")
    if site is not None and (not isinstance(site, str) or not site):
        raise fail("site must be a folder's path (relative to the rubric's folder)")
    title = data.get("title", "")
    if not isinstance(title, str):
        raise fail("title must be a string")
    gradescope = data.get("gradescope", {})
    if not isinstance(gradescope, dict):
        raise fail("gradescope must be a table ([gradescope])")
    extra = set(gradescope) - _GRADESCOPE_KEYS
    if extra:
        raise fail(f"[gradescope]: unknown key(s) {', '.join(sorted(extra))}; expected {', '.join(sorted(_GRADESCOPE_KEYS))}")
    for key, value in gradescope.items():
        if value not in VISIBILITIES:
            raise fail(f"[gradescope]: {key} must be one of {', '.join(VISIBILITIES)}, got {value!r}")
    default_visibility = gradescope.get("test_visibility", "visible")
    raw_items = data.get("item")
    if not isinstance(raw_items, list) or not raw_items:
        raise fail("no [[item]] tables: a rubric needs at least one item")
    items: list[RubricItem] = []
    for number, raw in enumerate(raw_items, 1):
        where = f"item {number}" + (f" ({raw['id']!r})" if isinstance(raw.get("id"), str) else "")
        extra = set(raw) - _ITEM_KEYS
        if extra:
            raise fail(f"{where}: unknown key(s) {', '.join(sorted(extra))}; expected {', '.join(sorted(_ITEM_KEYS))}")
        check_id = raw.get("id")
        if not isinstance(check_id, str):
            raise fail(f"{where}: id must be a string naming a check")
        if check_id not in checks:
            raise fail(f"{where}: no check named {check_id!r}; known checks: {', '.join(checks)}")
        if any(item.id == check_id for item in items):
            raise fail(f"{where}: check {check_id!r} appears twice")
        points = raw.get("points")
        if isinstance(points, bool) or not isinstance(points, (int, float)) or not 0 <= points < math.inf:
            raise fail(f"{where}: points must be a number >= 0 and finite, got {points!r}")
        visibility = raw.get("visibility", default_visibility)
        if visibility not in VISIBILITIES:
            raise fail(f"{where}: visibility must be one of {', '.join(VISIBILITIES)}, got {visibility!r}")
        name = raw.get("name", check_id)
        if not isinstance(name, str):
            raise fail(f"{where}: name must be a string")
        options = raw.get("options", {})
        if not isinstance(options, dict):
            raise fail(f"{where}: options must be a table")
        defaults = checks[check_id]
        for key, value in options.items():
            if key not in defaults:
                takes = ", ".join(defaults) or "no options"
                raise fail(f"{where}: check {check_id!r} has no option {key!r} (it takes {takes})")
            if not _fits(value, defaults[key]):
                raise fail(f"{where}: option {key!r} must be {type(defaults[key]).__name__}, got {value!r}")
            wrong = "must be finite" if isinstance(value, float) and not math.isfinite(value) else None
            rule = (rules or {}).get(check_id, {}).get(key)
            wrong = wrong or (rule(value) if rule else None)
            if wrong:
                raise fail(f"{where}: option {key!r} {wrong}, got {value!r}")
        items.append(RubricItem(check_id, name, points, visibility, {**defaults, **options}))
    rubric = Rubric(title, tuple(items), source, gradescope.get("visibility"),
                    Path(source).parent / site if site is not None else None)
    if not math.isfinite(rubric.max_score):
        raise fail("the points add up to more than a float holds")
    return rubric


def _fits(value: Any, default: Any) -> bool:
    """Whether an option value has its default's type (an int does for a float; a bool is no number)."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    return isinstance(value, type(default))
