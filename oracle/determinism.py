"""One seed, one run: what Hypothesis draws must not depend on where pagedcheck is started.

Hypothesis (6.131 on) sometimes draws a constant collected from the "local" modules loaded so far (any module
file outside site-packages and the standard library: the current folder's, a submission's, a loaded vLLM
tree's). Which modules those are depends on the folder and on what was imported before, so the same seed
gave different programs. `fixed_constants()` runs a campaign with that pool empty (Hypothesis's global
constants stay); with a Hypothesis that has no such feature it changes nothing. The runner uses it for the
families that ask (`Family.fixed_constants`: prefix).
"""

from contextlib import contextmanager
from typing import Iterator


@contextmanager
def fixed_constants() -> Iterator[None]:
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover  (a Hypothesis without the module)
        yield
        return
    collect, cache = getattr(providers, "_get_local_constants", None), getattr(providers, "CONSTANTS_CACHE", None)
    if collect is None or not hasattr(providers, "Constants"):
        yield
        return
    empty = providers.Constants()
    providers._get_local_constants = lambda: empty
    if cache is not None:
        cache.cache.clear()  # pairs of (global, local) constants computed before
    try:
        yield
    finally:
        providers._get_local_constants = collect
        if cache is not None:
            cache.cache.clear()
