"""A Python client for memory adapter servers: a lionagi ``MemoryStore`` over HTTP/JSON,
the seed's (ADR-0093) types and errors, and the conformance matrix.

Standard library only; lionagi's own ``MemoryItem``/``MemoryQuery``/``MemoryStore`` are
used when lionagi is importable, pydantic 2 models when only pydantic is.
"""

from .client import RemoteMemoryStore, binding_dir, from_binding
from .errors import MemoryAdapterError, MemoryAdapterUnavailable, ProblemError, UnsupportedMemoryQuery
from .models import (
    IMPLEMENTATION,
    ExternalMemoryStore,
    MemoryAdapterManifest,
    MemoryItem,
    MemoryQuery,
    MemoryStore,
    manifest_hash,
)

__version__ = "0.1.0"

__all__ = (
    "IMPLEMENTATION",
    "ExternalMemoryStore",
    "MemoryAdapterError",
    "MemoryAdapterManifest",
    "MemoryAdapterUnavailable",
    "MemoryItem",
    "MemoryQuery",
    "MemoryStore",
    "ProblemError",
    "RemoteMemoryStore",
    "UnsupportedMemoryQuery",
    "binding_dir",
    "from_binding",
    "manifest_hash",
)
