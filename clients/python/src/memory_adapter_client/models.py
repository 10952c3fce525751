"""The seed's types and lionagi's memory types, as this environment allows.

* With lionagi importable, ``MemoryItem``, ``MemoryQuery`` and ``MemoryStore`` *are*
  lionagi's (``lionagi.protocols.memory``), so a store of this package is a lionagi
  ``MemoryStore`` and ``Branch(memory=store)`` takes it.
* Without lionagi, they are models of the same shape: pydantic 2 models when pydantic is
  importable, small standard-library classes otherwise (an agent image with only Debian's
  python3).
* ``MemoryAdapterManifest`` is the seed's (ADR-0093 D1): a frozen pydantic model with
  ``extra="forbid"`` and the ``coherent_projection`` validator when pydantic is importable,
  a frozen standard-library class with the same fields, checks and messages otherwise.

``IMPLEMENTATION`` says which of the three was chosen: ``"lionagi"``, ``"pydantic"`` or
``"stdlib"``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = (
    "ITEM_FIELDS",
    "IMPLEMENTATION",
    "MemoryAdapterManifest",
    "MemoryItem",
    "MemoryQuery",
    "MemoryStore",
    "ExternalMemoryStore",
    "coherence_error",
    "manifest_from_wire",
    "manifest_to_wire",
    "manifest_hash",
)

ITEM_FIELDS = frozenset({"id", "created_at", "metadata", "content", "tags"})
_CONSISTENCY = ("immediate", "eventual")
_FIDELITY = ("full", "native_fields", "lossy")
# The manifest's members in the wire schema's order (conformance/README.md, "The manifest hash").
_MANIFEST_ORDER = (
    "adapter",
    "native_item_fields",
    "dropped_item_fields",
    "supported_filters",
    "search_consistency",
    "retrieve_fidelity",
    "search_fidelity",
    "search_returns_tags",
    "preserves_metadata",
)
_SETS = ("native_item_fields", "dropped_item_fields", "supported_filters")


def coherence_error(m: Any) -> str | None:
    """The seed's ``coherent_projection``: its six rules in order, with its messages word for word."""
    fields = {"id", "created_at", "metadata", "content", "tags"}
    if m.native_item_fields & m.dropped_item_fields:
        return "native and dropped item fields must be disjoint"
    if m.native_item_fields | m.dropped_item_fields != fields:
        return "every MemoryItem field must be classified"
    if not {"id", "content", "tags"} <= m.native_item_fields:
        return "id, content, and tags are required native fields"
    if m.preserves_metadata and "metadata" not in m.native_item_fields:
        return "preserved metadata must be a native field"
    if m.retrieve_fidelity == "full" and (m.dropped_item_fields or not m.preserves_metadata):
        return "full retrieve fidelity must preserve every item field"
    if m.search_fidelity == "full" and (
        m.dropped_item_fields or not m.search_returns_tags or not m.preserves_metadata
    ):
        return "full search fidelity must preserve all fields and tags"
    return None


try:  # pydantic 2 when importable
    from pydantic import BaseModel, ConfigDict, Field, model_validator

    _HAVE_PYDANTIC = True
except ImportError:  # pragma: no cover - exercised on Debian's python3
    _HAVE_PYDANTIC = False


if _HAVE_PYDANTIC:
    from typing import Literal

    MemoryItemField = Literal["id", "created_at", "metadata", "content", "tags"]
    SearchConsistency = Literal["immediate", "eventual"]
    Fidelity = Literal["full", "native_fields", "lossy"]

    class MemoryAdapterManifest(BaseModel):
        """ADR-0093 D1's immutable fidelity manifest."""

        model_config = ConfigDict(frozen=True, extra="forbid")

        adapter: str = Field(min_length=1)
        native_item_fields: frozenset[MemoryItemField]
        dropped_item_fields: frozenset[MemoryItemField]
        supported_filters: frozenset[str]
        search_consistency: SearchConsistency
        retrieve_fidelity: Fidelity
        search_fidelity: Fidelity
        search_returns_tags: bool
        preserves_metadata: bool

        @model_validator(mode="after")
        def coherent_projection(self) -> "MemoryAdapterManifest":
            msg = coherence_error(self)
            if msg is not None:
                raise ValueError(msg)
            return self

else:

    class MemoryAdapterManifest:  # type: ignore[no-redef]
        """ADR-0093 D1's immutable fidelity manifest (standard library form).

        Same fields, checks and messages as the pydantic model; invalid input raises
        ``ValueError`` (pydantic's ``ValidationError`` is a ``ValueError`` too).
        """

        __slots__ = _MANIFEST_ORDER

        def __init__(
            self,
            *,
            adapter: str,
            native_item_fields: Iterable[str],
            dropped_item_fields: Iterable[str],
            supported_filters: Iterable[str],
            search_consistency: str,
            retrieve_fidelity: str,
            search_fidelity: str,
            search_returns_tags: bool,
            preserves_metadata: bool,
        ) -> None:
            if not isinstance(adapter, str) or not adapter:
                raise ValueError("adapter: a string of at least 1 character")
            sets = {}
            for name, value in (
                ("native_item_fields", native_item_fields),
                ("dropped_item_fields", dropped_item_fields),
                ("supported_filters", supported_filters),
            ):
                if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                    raise ValueError(f"{name}: a set of strings")
                s = frozenset(value)
                if not all(isinstance(x, str) for x in s):
                    raise ValueError(f"{name}: a set of strings")
                if name != "supported_filters" and not s <= ITEM_FIELDS:
                    raise ValueError(f"{name}: only {sorted(ITEM_FIELDS)}")
                sets[name] = s
            for name, value, allowed in (
                ("search_consistency", search_consistency, _CONSISTENCY),
                ("retrieve_fidelity", retrieve_fidelity, _FIDELITY),
                ("search_fidelity", search_fidelity, _FIDELITY),
            ):
                if value not in allowed:
                    raise ValueError(f"{name}: one of {', '.join(allowed)}")
            for name, value in (("search_returns_tags", search_returns_tags), ("preserves_metadata", preserves_metadata)):
                if not isinstance(value, bool):
                    raise ValueError(f"{name}: a bool")
            values = dict(
                adapter=adapter,
                search_consistency=search_consistency,
                retrieve_fidelity=retrieve_fidelity,
                search_fidelity=search_fidelity,
                search_returns_tags=search_returns_tags,
                preserves_metadata=preserves_metadata,
                **sets,
            )
            for k, v in values.items():
                object.__setattr__(self, k, v)
            msg = coherence_error(self)
            if msg is not None:
                raise ValueError(msg)

        def __setattr__(self, name: str, value: Any) -> None:
            raise TypeError("MemoryAdapterManifest is frozen")

        def __eq__(self, other: object) -> bool:
            if not isinstance(other, MemoryAdapterManifest):
                return NotImplemented
            return all(getattr(self, k) == getattr(other, k) for k in _MANIFEST_ORDER)

        def __hash__(self) -> int:
            return hash(tuple(getattr(self, k) for k in _MANIFEST_ORDER))

        def __repr__(self) -> str:
            return "MemoryAdapterManifest(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in _MANIFEST_ORDER) + ")"

        def model_dump(self, mode: str = "python") -> dict:
            out = {k: getattr(self, k) for k in _MANIFEST_ORDER}
            if mode == "json":
                for k in _SETS:
                    out[k] = sorted(out[k])
            return out


def manifest_from_wire(data: Any) -> MemoryAdapterManifest:
    """The manifest of a ``GET /v1/manifest`` answer, decoded strictly.

    Exactly the nine members, lists of strings (never null), strings and bools of the right
    kind; then the model's own validation (enums, the six coherence rules). ``ValueError``
    when anything is off.
    """
    if not isinstance(data, dict):
        raise ValueError("the manifest is not a JSON object")
    if set(data) != set(_MANIFEST_ORDER):
        extra = sorted(set(data) - set(_MANIFEST_ORDER))
        missing = sorted(set(_MANIFEST_ORDER) - set(data))
        raise ValueError(f"manifest members: unknown {extra}, missing {missing}")
    for k in _SETS:
        v = data[k]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ValueError(f"manifest {k}: want a list of strings")
    for k in ("adapter", "search_consistency", "retrieve_fidelity", "search_fidelity"):
        if not isinstance(data[k], str):
            raise ValueError(f"manifest {k}: want a string")
    for k in ("search_returns_tags", "preserves_metadata"):
        if not isinstance(data[k], bool):
            raise ValueError(f"manifest {k}: want a bool")
    kwargs = dict(data)
    for k in _SETS:
        kwargs[k] = frozenset(data[k])
    return MemoryAdapterManifest(**kwargs)


def manifest_to_wire(m: Any) -> dict:
    """The manifest as wire JSON: the nine members in order, sets as lists in UTF-8 byte order."""
    out = {k: getattr(m, k) for k in _MANIFEST_ORDER}
    for k in _SETS:
        out[k] = sorted(set(out[k]), key=lambda s: s.encode("utf-8", "surrogatepass"))
    return out


def manifest_hash(m: Any) -> str:
    """``sha256:<hex>`` of the manifest's canonical string (conformance/README.md, "The manifest hash")."""
    import hashlib
    import json

    text = json.dumps(manifest_to_wire(m), ensure_ascii=False, separators=(",", ":"))
    for ch in "<>&\u2028\u2029":
        text = text.replace(ch, "\\u%04x" % ord(ch))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---- MemoryItem, MemoryQuery, MemoryStore ----

try:  # lionagi's own types when importable
    from lionagi.protocols.memory import MemoryItem, MemoryQuery, MemoryStore  # type: ignore[import-not-found]

    IMPLEMENTATION = "lionagi"
except ImportError:
    IMPLEMENTATION = "pydantic" if _HAVE_PYDANTIC else "stdlib"

    @runtime_checkable
    class MemoryStore(Protocol):  # type: ignore[no-redef]
        """lionagi's structural store contract (ADR-0092): three async methods."""

        async def store(self, item: "MemoryItem") -> uuid.UUID: ...

        async def retrieve(self, item_id: uuid.UUID) -> "MemoryItem | None": ...

        async def search(self, query: "MemoryQuery") -> "list[MemoryItem]": ...

    if _HAVE_PYDANTIC:

        class MemoryItem(BaseModel):  # type: ignore[no-redef]
            """lionagi's MemoryItem shape: id and created_at frozen, unknown fields rejected."""

            model_config = ConfigDict(extra="forbid")

            id: uuid.UUID = Field(default_factory=uuid.uuid4, frozen=True)
            created_at: float = Field(default_factory=time.time, frozen=True)
            metadata: dict = Field(default_factory=dict)
            content: Any = None
            tags: list[str] = Field(default_factory=list)

        class MemoryQuery(BaseModel):  # type: ignore[no-redef]
            """lionagi's MemoryQuery shape."""

            text: str | None = None
            tags: list[str] | None = None
            filters: dict[str, Any] | None = None
            limit: int = 20

    else:

        class MemoryItem:  # type: ignore[no-redef]
            """lionagi's MemoryItem shape in the standard library: id and created_at read-only."""

            __slots__ = ("_id", "_created_at", "metadata", "content", "tags")

            def __init__(
                self,
                *,
                id: uuid.UUID | str | None = None,  # noqa: A002 - lionagi's field name
                created_at: float | None = None,
                metadata: Mapping[str, Any] | None = None,
                content: Any = None,
                tags: Iterable[str] | None = None,
            ) -> None:
                self._id = id if isinstance(id, uuid.UUID) else (uuid.uuid4() if id is None else uuid.UUID(str(id)))
                if created_at is None:
                    created_at = time.time()
                if isinstance(created_at, bool) or not isinstance(created_at, (int, float)):
                    raise ValueError("created_at: a float of Unix seconds")
                self._created_at = float(created_at)
                if metadata is None:
                    metadata = {}
                if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
                    raise ValueError("metadata: a dict with string keys")
                self.metadata = dict(metadata)
                self.content = content
                tags = [] if tags is None else tags
                if isinstance(tags, (str, bytes)) or not all(isinstance(t, str) for t in tags):
                    raise ValueError("tags: a list of strings")
                self.tags = list(tags)

            @property
            def id(self) -> uuid.UUID:
                return self._id

            @property
            def created_at(self) -> float:
                return self._created_at

            def model_dump(self, mode: str = "python") -> dict:
                return {
                    "id": str(self._id) if mode == "json" else self._id,
                    "created_at": self._created_at,
                    "metadata": self.metadata,
                    "content": self.content,
                    "tags": self.tags,
                }

            def __eq__(self, other: object) -> bool:
                if not isinstance(other, MemoryItem):
                    return NotImplemented
                return self.model_dump() == other.model_dump()

            __hash__ = None  # type: ignore[assignment]

            def __repr__(self) -> str:
                return (
                    f"MemoryItem(id={self._id!r}, created_at={self._created_at!r}, metadata={self.metadata!r}, "
                    f"content={self.content!r}, tags={self.tags!r})"
                )

        class MemoryQuery:  # type: ignore[no-redef]
            """lionagi's MemoryQuery shape in the standard library."""

            __slots__ = ("text", "tags", "filters", "limit")

            def __init__(
                self,
                *,
                text: str | None = None,
                tags: Iterable[str] | None = None,
                filters: Mapping[str, Any] | None = None,
                limit: int = 20,
            ) -> None:
                if text is not None and not isinstance(text, str):
                    raise ValueError("text: a string or None")
                if tags is not None and (isinstance(tags, (str, bytes)) or not all(isinstance(t, str) for t in tags)):
                    raise ValueError("tags: a list of strings or None")
                if filters is not None and (not isinstance(filters, Mapping) or not all(isinstance(k, str) for k in filters)):
                    raise ValueError("filters: a dict with string keys or None")
                if isinstance(limit, bool) or not isinstance(limit, int):
                    raise ValueError("limit: an int")
                self.text = text
                self.tags = None if tags is None else list(tags)
                self.filters = None if filters is None else dict(filters)
                self.limit = limit

            def model_dump(self, mode: str = "python") -> dict:
                return {"text": self.text, "tags": self.tags, "filters": self.filters, "limit": self.limit}

            def __eq__(self, other: object) -> bool:
                if not isinstance(other, MemoryQuery):
                    return NotImplemented
                return self.model_dump() == other.model_dump()

            __hash__ = None  # type: ignore[assignment]

            def __repr__(self) -> str:
                return f"MemoryQuery(text={self.text!r}, tags={self.tags!r}, filters={self.filters!r}, limit={self.limit!r})"


@runtime_checkable
class ExternalMemoryStore(MemoryStore, Protocol):
    """ADR-0093 D1: a MemoryStore with one immutable manifest property."""

    @property
    def manifest(self) -> MemoryAdapterManifest: ...
