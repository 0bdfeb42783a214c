"""The N slowest tests of one or more pytest runs, from their JUnit XML (``--junitxml``).

    python scripts/slowest_tests.py N RESULTS.xml [RESULTS.xml ...]

A test's time is pytest's "total" (setup + call + teardown), so a module's first test carries the
start of the server its module shares: where CI's time goes, across the runs scripts/test.sh makes.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path


def test_times(report: Path) -> list[tuple[float, str]]:
    times = []
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}".lstrip(":")
        times.append((float(case.get("time") or 0.0), name))
    return times


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    count, reports = int(argv[0]), [Path(a) for a in argv[1:] if Path(a).is_file()]
    times = sorted((t for report in reports for t in test_times(report)), reverse=True)
    total = sum(t for t, _ in times)
    print(f"the {min(count, len(times))} slowest of {len(times)} tests ({total:.0f} s in all):")
    for seconds, name in times[:count]:
        print(f"{seconds:8.1f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
