"""Test-wide setup.

The repo root goes on sys.path, so `tests.broken.<variant>` imports by name the way the CLI
(`--impl tests.broken.x`) and the printed repro programs import it, whatever directory pytest runs from.
Under mutmut (MUTANT_UNDER_TEST set) Hypothesis runs derandomized, with no deadline and no example
database, so each mutant meets the same programs and a kill is reproducible. It also skips the shrink phase:
a mutant is killed by the first failing program, and shrinking that program (a 4096-append burst, say)
would only spend the mutant's time budget. The budget itself (examples, steps) is the CI profile's.
"""

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

if os.environ.get("MUTANT_UNDER_TEST"):
    settings.register_profile(
        "mutmut",
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.differing_executors, HealthCheck.too_slow],
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target],  # no shrinking
        report_multiple_bugs=False,
    )
    settings.load_profile("mutmut")
