"""A correct but unusual blockspace submission (review12; appended to our engine's block_manager.py, no bug): the
manager stamps its debug lines with the course's time zone, which it loads once, at import, from the system's time
zone database (the standard library's zoneinfo reads /usr/share/zoneinfo). Nothing else changes: every call is our
engine's. It must get full marks wherever it is graded, with bubblewrap and without."""

import datetime as _datetime
import zoneinfo as _zoneinfo

_COURSE_TZ = _zoneinfo.ZoneInfo("America/New_York")


def _stamp() -> str:
    """When a debug line was written, in the course's time zone."""
    return _datetime.datetime.now(_COURSE_TZ).isoformat(timespec="seconds")
