"""The seed's MemoryAdapterHarness (ADR-0093 D2) and the optional capabilities.

A harness owns the test-side controls over a disposable scope; the adapter never exposes
them. The five methods are the seed's. The optional capabilities carry the same names as
the Go suite's (conformance/README.md) and the HTTP harness protocol's; a harness that lacks
one gets a weaker check (the case says what it could not observe) or NotApplicable naming
it, and the run's claim is ``partial``.
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol, runtime_checkable

from ..models import ExternalMemoryStore

__all__ = (
    "MemoryAdapterHarness",
    "MissingCapability",
    "CAPABILITIES",
    "has_capability",
)

# Capability names, as GET /harness/v1/capabilities spells them.
CAPABILITIES = {
    "reset": None,
    "search_index_visible": None,
    "transport_unavailable": None,
    "wrong_kind_record": "make_wrong_kind_record",
    "write_rejected": "make_write_rejected",
    "responses_malformed": "make_responses_malformed",
    "identityless_write": "make_next_write_identityless",
    "backend_calls": "backend_calls",
    # governance/v1 (shared-notes/governance-v1.md §2), for the governance profiles.
    "governance_tokens": "make_governance_stores",
    "retention_sweep": "retention_sweep",
}


@runtime_checkable
class MemoryAdapterHarness(Protocol):
    """The seed's harness shape."""

    async def make_store(self) -> ExternalMemoryStore: ...

    async def reset(self) -> None: ...

    async def make_search_index_visible(self) -> None: ...

    async def make_transport_unavailable(self) -> None: ...

    async def close(self) -> None: ...


# Optional methods, found by name (all async):
#   make_wrong_kind_record() -> UUID        plant a non-memory record under an identity
#   make_write_rejected() -> MemoryItem     an item whose write the service rejects
#   make_responses_malformed() -> None      reads answer malformed until reset
#   make_next_write_identityless() -> None  the next write is acknowledged without identity
#   backend_calls() -> int                  calls that reached the service so far
#   make_governance_stores() -> dict        stores of the four governance tokens, keyed
#                                           read_write, read_only (both in sub-scope G),
#                                           sub_scope_a, sub_scope_b (read-write in A and B)
#   retention_sweep(after_seconds) -> None  run the retention sweep of G, A and B as if
#                                           after_seconds had passed since now
#   sleep(seconds) -> None                  wait on Retry-After (a fake's virtual clock);
#                                           without it the suite waits in real time
#   has_capability(name) -> bool            (sync) capabilities discovered at run time


class MissingCapability(Exception):
    """Raised by a harness method whose capability is absent at run time (the case is then
    NotApplicable naming it, not Failed)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"the harness does not offer capability {name}")


def has_capability(h: Any, name: str) -> bool:
    """Whether harness ``h`` offers capability ``name``: its method (where there is one) and,
    when it reports capabilities at run time, its answer."""
    reporter = getattr(h, "has_capability", None)
    if callable(reporter) and not reporter(name):
        return False
    method = CAPABILITIES.get(name)
    return method is None or callable(getattr(h, method, None))


def new_uuid() -> uuid.UUID:
    return uuid.uuid4()
