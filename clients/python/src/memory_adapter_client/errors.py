"""The seed's stable errors (ADR-0093 D3), written from the seed."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ("MemoryAdapterError", "UnsupportedMemoryQuery", "MemoryAdapterUnavailable", "ProblemError")


class MemoryAdapterError(RuntimeError):
    """Base class for an explicit external MemoryStore operation failure."""


class UnsupportedMemoryQuery(MemoryAdapterError):
    """A query used keys (filter keys, or ``limit`` when negative) the adapter does not support."""

    def __init__(self, rejected_keys: Iterable[str]) -> None:
        self.rejected_keys = tuple(sorted(set(rejected_keys)))
        super().__init__("unsupported memory query keys: " + ", ".join(self.rejected_keys))


class MemoryAdapterUnavailable(MemoryAdapterError):
    """Transport or service availability prevented an explicit operation."""


class ProblemError(Exception):
    """The server's problem+json answer; chained as the cause of the typed error a call raises.

    Only the problem's fields are kept, never the request (its URL or token). ``retry_after``
    is the answer's ``Retry-After`` in whole seconds when it carried one as an integer (a 429
    ``rate_limited`` says when to store again), else None.
    """

    def __init__(self, status: int, type_: str, title: str = "", detail: str = "", retry_after: int | None = None) -> None:
        self.status = status
        self.type = type_
        self.title = title
        self.detail = detail
        self.retry_after = retry_after
        text = f"server answered {status} {type_}"
        if detail:
            text += ": " + detail
        super().__init__(text)
