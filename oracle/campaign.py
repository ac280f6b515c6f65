"""Long campaigns: a family's state machine against one implementation under HypoFuzz, for hours, on as many
workers (and machines) as there are, all sharing one Hypothesis example database; any failure a worker finds
replays anywhere with `pagedcheck fuzz --replay DIR`.

A campaign is a folder (`pagedcheck campaign --db DIR`):

    DIR/campaign.json               the family, the implementation and the calls per program
    DIR/test_pagedcheck_campaign.py the machine as a pytest test HypoFuzz collects (it calls campaign_test_case)
    DIR/pytest.ini                  so pytest takes no configuration from the folders above DIR
    DIR/examples/                   the example database every worker reads and writes

HypoFuzz (`pip install 'pagedcheck[campaign]'`) fuzzes the Hypothesis tests pytest collects, each worker saving
what it finds in the test's settings' database under the test's key. Every campaign machine of a family has one
key: its class's name and a digest of the family's name (`campaign_machine`), the same in the test module and
in the replay, on any machine with the same Hypothesis. One folder per implementation.
"""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

MACHINE = "PagedcheckCampaign"  # never defined as a class in this file: its digest is its name's (stable)
FILE = "campaign.json"
TEST_MODULE = "test_pagedcheck_campaign.py"
EXAMPLES = "examples"
_MODULE_TEXT = '''"""Written by `pagedcheck campaign`: the {family} family's state machine for {impl}, a test for HypoFuzz
(oracle/campaign.py). Replay what it finds with: pagedcheck fuzz --replay {folder}"""

from pathlib import Path

from oracle.campaign import campaign_test_case

TestPagedcheckCampaign = campaign_test_case(Path(__file__).resolve().parent)
'''


@dataclass(frozen=True)
class Campaign:
    family: str
    impl: str
    steps: int  # calls per program, at most: a stored example replays only with the same count

    def write(self, folder: Path) -> list[Path]:
        """The campaign's files in `folder` (made if needed); the paths written."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / EXAMPLES).mkdir(exist_ok=True)
        files = {FILE: json.dumps(asdict(self), indent=1) + "\n", "pytest.ini": "[pytest]\n",
                 TEST_MODULE: _MODULE_TEXT.format(family=self.family, impl=self.impl, folder=folder)}
        for name, text in files.items():
            (folder / name).write_text(text)
        return [folder / name for name in files]

    @staticmethod
    def read(folder: Path) -> "Campaign":
        """The campaign in `folder`; ValueError with a one-line reason when it holds none."""
        try:
            fields = json.loads((folder / FILE).read_text())
            return Campaign(str(fields["family"]), str(fields["impl"]), int(fields["steps"]))
        except FileNotFoundError:
            raise ValueError(f"{folder} holds no {FILE}: not a folder `pagedcheck campaign --db` made") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{folder / FILE} is not a campaign's description ({exc})") from None


def campaign_machine(machine: type, family: str) -> type:
    """`machine` under the name and digest every campaign of `family` shares: Hypothesis keys a stateful test's
    examples by its machine class (hypothesis.internal.reflection.function_digest)."""
    return type(MACHINE, (machine,), {"__module__": __name__,
                                      "_hypothesis_internal_add_digest": f"pagedcheck campaign {family}".encode()})


def database(folder: Path, read_only: bool = False):  # type: ignore[no-untyped-def]
    from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

    shared = DirectoryBasedExampleDatabase(str(folder / EXAMPLES))
    return ReadOnlyDatabase(shared) if read_only else shared


def campaign_test_case(folder: Path) -> type:
    """The campaign's machine as a unittest TestCase, with the folder's example database as every test's
    (HypoFuzz takes only tests whose database is the default one)."""
    from hypothesis import HealthCheck, settings

    from oracle.family import family_named
    from oracle.stats import RunStats

    campaign = Campaign.read(folder)
    quiet = [check for check in HealthCheck if check is not HealthCheck.nested_given]  # HypoFuzz skips a test
    settings.register_profile("pagedcheck-campaign", database=database(folder), deadline=None, print_blob=False,
                              suppress_health_check=quiet, stateful_step_count=campaign.steps)  # that suppresses it
    settings.load_profile("pagedcheck-campaign")
    family = family_named(campaign.family)
    machine = family.machine_for(family.load_adapter(campaign.impl), RunStats())
    case = campaign_machine(machine, family.name).TestCase
    case.settings = settings(deadline=None, suppress_health_check=quiet)  # its own suppresses every check
    return case


def stored_failures(folder: Path, machine: type, family: str) -> int:
    """How many failing examples of the campaign's machine its database holds: those HypoFuzz shrank (under the
    test's key, where Hypothesis's own reuse phase reads them first) and those it did not (`.secondary`)."""
    from hypothesis.internal.reflection import function_digest
    from hypothesis.stateful import get_state_machine_test

    key = function_digest(get_state_machine_test(campaign_machine(machine, family)).hypothesis.inner_test)
    shared = database(folder, read_only=True)
    return sum(1 for name in (key, key + b".secondary") for _ in shared.fetch(name))


def hypofuzz_missing() -> str | None:
    """Why HypoFuzz cannot run here, or None."""
    try:
        import hypofuzz  # noqa: F401
    except ImportError:
        return "HypoFuzz is not installed: pip install 'pagedcheck[campaign]' (or pip install hypofuzz)"
    return None


def hypofuzz_command(folder: Path, workers: int) -> list[str]:
    """HypoFuzz on the campaign's test module alone, with `workers` processes and no dashboard."""
    return [sys.executable, "-c", "from hypofuzz.entrypoint import fuzz; fuzz()", "-n", str(workers),
            "--no-dashboard", "--", str(folder / TEST_MODULE), "-c", str(folder / "pytest.ini"),
            "--rootdir", str(folder), "-p", "no:cacheprovider", "-q"]


def run(folder: Path, workers: int, seconds: float | None, log: Path) -> tuple[int | None, float]:  # pragma: no cover
    # (needs HypoFuzz, an optional extra: tests/test_campaign.py runs it where it is installed)
    """Runs HypoFuzz until every test has a failure (it then exits) or `seconds` pass (it is stopped, with all
    its workers); its output goes to `log`. HypoFuzz's exit status (None: stopped) and the seconds it ran."""
    from oracle.hypothesis_home import STORAGE_VARIABLE, keep_hypothesis_files_in_cache

    start = time.monotonic()  # no litter: no .hypothesis/, __pycache__ or .pytest_cache where it runs
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", STORAGE_VARIABLE: str(keep_hypothesis_files_in_cache())}
    with log.open("w") as out:
        proc = subprocess.Popen(hypofuzz_command(folder, workers), stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=folder, start_new_session=True)
        try:
            status: int | None = proc.wait(seconds)
        except subprocess.TimeoutExpired:
            status = None
        except KeyboardInterrupt:
            status = None
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)  # HypoFuzz and its workers: the session it leads
            except ProcessLookupError:
                pass
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return status, time.monotonic() - start
