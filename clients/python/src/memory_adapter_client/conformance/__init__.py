"""The ADR-0093 D2 conformance matrix in Python: the seed's ``MemoryAdapterHarness``, the
matrix's cases (``run``), a harness over the HTTP harness protocol (``WireHarness``) and the
deterministic fake with its manifest-accuracy table (``fake``).

Run it in-process against your own adapter::

    report = await run(MyHarness())      # MyHarness: make_store, reset, ... (the seed's shape)
    print(report.table())
    assert report.result == "Passed"
"""

from .harness import CAPABILITIES, MemoryAdapterHarness, MissingCapability, has_capability
from .suite import CASE_IDS, FAILED, NOT_APPLICABLE, PASSED, CaseResult, Options, Report, json_equal, run
from .wire import WireHarness

__all__ = (
    "CAPABILITIES",
    "CASE_IDS",
    "CaseResult",
    "FAILED",
    "MemoryAdapterHarness",
    "MissingCapability",
    "NOT_APPLICABLE",
    "Options",
    "PASSED",
    "Report",
    "WireHarness",
    "has_capability",
    "json_equal",
    "run",
)
