"""load_c: a C submission built once, then a fresh CAdapter on its driver at each call of the factory."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build


def load_c(submission: Path | str, workdir: Path | str | None = None, **options: Any) -> "DriverFactory":
    """An adapter factory for a C submission (llm_memory.c or a directory holding one), built once now, in
    the sandbox, into the private build cache (or `workdir`).

    Raises ValueError when the path is bad or the build fails, with the compiler's or linker's words. A
    submission whose only problem is warnings is driven, as `grade` drives it, on the build without -Werror.
    `options` go to CAdapter (timeout, output_limit, sandbox, ...).
    """
    result = build(submission, workdir, options.get("sandbox"))
    driver = result.graded_driver
    if driver is None:
        raise ValueError(result.message)
    return DriverFactory(driver, options)


@dataclass(frozen=True)
class DriverFactory:
    """A new CAdapter on a built driver at each call."""

    driver: Path
    options: dict[str, Any]

    def __call__(self) -> "CAdapter":
        return CAdapter(self.driver, **self.options)
