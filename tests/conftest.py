import sys

import hypothesis_profiles

hypothesis_profiles.load()  # derandomized under `make test`, random and longer under `make fuzz`


def pytest_terminal_summary(terminalreporter) -> None:
    """The differential harness's tally (test_differential.py): kernels compared, refused fixtures, and
    each expected failure with its reason."""
    summary = next(
        (m.DIFFERENTIAL_SUMMARY for m in list(sys.modules.values()) if hasattr(m, "DIFFERENTIAL_SUMMARY")), None
    )
    if summary is None or not (summary["compared"] or summary["expected"]):
        return
    write = terminalreporter.write_line
    write(
        f"differential harness: {summary['compared']} kernel(s) bit-identical on the CPU backend and the simulator, "
        f"{summary['refused']} refused fixture(s) (test_negative.py), {len(summary['expected'])} expected failure(s)"
    )
    for identity, reason in sorted(summary["expected"].items()):
        write(f"  expected failure: {identity}: {reason}")
