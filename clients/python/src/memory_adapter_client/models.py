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
    "GOVERNANCE_V1",
    "Extensions",
    "Governance",
    "Quota",
    "Retention",
    "coherence_error",
    "extensions_from_wire",
    "governance_of",
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


# ---- the manifest's extensions (governance/v1, shared-notes/governance-v1.md §1) ----

GOVERNANCE_V1 = "governance/v1"
# Every governance number is a non-negative integer within the Go side's bounds
# (api/memory/extensions.go: seconds at most 100 years of 366 days, counts at most 2^50): a
# larger one is refused here rather than accepted by one side and refused by the other.
_MAX_GOV_SECONDS = 100 * 366 * 24 * 3600
_MAX_GOV_INT = 1 << 50
_RETENTION_ORDER = ("max_age_seconds", "max_items", "sweep_period_seconds")
_QUOTA_ORDER = ("max_items", "max_bytes", "writes_per_second", "write_burst")
_GOVERNANCE_ORDER = ("read_only", "isolation", "retention", "quota")


def _gov_int(where: str, name: str, v: Any) -> int:
    # bool is an int in Python and 1.0/Decimal are numbers in JSON: the contract allows
    # neither ("no floats anywhere"), so only a plain int passes.
    if type(v) is not int:
        raise ValueError(f"{where}.{name}: want a non-negative integer, got {type(v).__name__}")
    bound = _MAX_GOV_SECONDS if name.endswith("_seconds") else _MAX_GOV_INT
    if v < 0 or v > bound:
        raise ValueError(f"{where}.{name}: want an integer from 0 to {bound}")
    return v


def _gov_object(where: str, data: Any, order: tuple[str, ...], required: tuple[str, ...]) -> dict:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: want a JSON object")
    unknown = sorted(set(data) - set(order))
    missing = sorted(set(required) - set(data))
    if unknown or missing:
        # Unknown members are refused: a claim the client cannot check is not accepted.
        raise ValueError(f"{where} members: unknown {unknown[:8]}, missing {missing}")
    return data


class _Frozen:
    """A small immutable value: equality, hash and repr over ``_fields``."""

    _fields: tuple[str, ...] = ()
    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError(f"{type(self).__name__} is frozen")

    def _values(self) -> tuple:
        return tuple(getattr(self, k) for k in self._fields)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields) + ")"


class Retention(_Frozen):
    """governance/v1 ``retention``: 0 means no limit of that kind (sweep period 0: the server's default)."""

    _fields = _RETENTION_ORDER
    __slots__ = _RETENTION_ORDER

    def __init__(self, *, max_age_seconds: int, max_items: int, sweep_period_seconds: int) -> None:
        for k, v in zip(_RETENTION_ORDER, (max_age_seconds, max_items, sweep_period_seconds)):
            object.__setattr__(self, k, _gov_int("retention", k, v))

    def empty(self) -> bool:
        # The sweep period alone limits nothing: such a retention is dropped by normalization.
        return self.max_age_seconds == 0 and self.max_items == 0  # type: ignore[attr-defined]

    def to_wire(self) -> dict:
        return {k: getattr(self, k) for k in _RETENTION_ORDER}


class Quota(_Frozen):
    """governance/v1 ``quota``: 0 means no limit of that kind."""

    _fields = _QUOTA_ORDER
    __slots__ = _QUOTA_ORDER

    def __init__(self, *, max_items: int, max_bytes: int, writes_per_second: int, write_burst: int) -> None:
        for k, v in zip(_QUOTA_ORDER, (max_items, max_bytes, writes_per_second, write_burst)):
            object.__setattr__(self, k, _gov_int("quota", k, v))

    def empty(self) -> bool:
        return all(getattr(self, k) == 0 for k in _QUOTA_ORDER)

    def to_wire(self) -> dict:
        return {k: getattr(self, k) for k in _QUOTA_ORDER}


class Governance(_Frozen):
    """The ``governance/v1`` extension, normalized: an empty retention or quota is ``None``."""

    _fields = _GOVERNANCE_ORDER
    __slots__ = _GOVERNANCE_ORDER

    def __init__(self, *, read_only: bool, isolation: bool, retention: Retention | None = None, quota: Quota | None = None) -> None:
        for k, v in (("read_only", read_only), ("isolation", isolation)):
            if not isinstance(v, bool):
                raise ValueError(f"{GOVERNANCE_V1}.{k}: want a bool")
            object.__setattr__(self, k, v)
        if retention is not None and not isinstance(retention, Retention):
            raise ValueError(f"{GOVERNANCE_V1}.retention: want a Retention")
        if quota is not None and not isinstance(quota, Quota):
            raise ValueError(f"{GOVERNANCE_V1}.quota: want a Quota")
        object.__setattr__(self, "retention", None if retention is None or retention.empty() else retention)
        object.__setattr__(self, "quota", None if quota is None or quota.empty() else quota)

    def empty(self) -> bool:
        return not self.read_only and not self.isolation and self.retention is None and self.quota is None  # type: ignore[attr-defined]

    def to_wire(self) -> dict:
        out: dict = {"read_only": self.read_only, "isolation": self.isolation}  # type: ignore[attr-defined]
        if self.retention is not None:  # type: ignore[attr-defined]
            out["retention"] = self.retention.to_wire()  # type: ignore[attr-defined]
        if self.quota is not None:  # type: ignore[attr-defined]
            out["quota"] = self.quota.to_wire()  # type: ignore[attr-defined]
        return out

    @classmethod
    def from_wire(cls, data: Any) -> "Governance":
        """Strict: exactly the known members, bools and non-negative integers of the right kind."""
        where = GOVERNANCE_V1
        data = _gov_object(where, data, _GOVERNANCE_ORDER, ("read_only", "isolation"))
        retention = quota = None
        if "retention" in data:
            r = _gov_object(where + ".retention", data["retention"], _RETENTION_ORDER, _RETENTION_ORDER)
            retention = Retention(**r)
        if "quota" in data:
            q = _gov_object(where + ".quota", data["quota"], _QUOTA_ORDER, _QUOTA_ORDER)
            quota = Quota(**q)
        return cls(read_only=data["read_only"], isolation=data["isolation"], retention=retention, quota=quota)


class Extensions(_Frozen):
    """The manifest's ``extensions``: one member per known extension name (only governance/v1)."""

    _fields = ("governance",)
    __slots__ = ("governance",)

    def __init__(self, *, governance: Governance | None = None) -> None:
        if governance is not None and not isinstance(governance, Governance):
            raise ValueError("extensions.governance: want a Governance")
        object.__setattr__(self, "governance", None if governance is None or governance.empty() else governance)

    def empty(self) -> bool:
        return self.governance is None  # type: ignore[attr-defined]

    def to_wire(self) -> dict:
        return {} if self.governance is None else {GOVERNANCE_V1: self.governance.to_wire()}  # type: ignore[attr-defined]


def extensions_from_wire(data: Any) -> Extensions | None:
    """The wire ``extensions`` member decoded strictly and normalized; ``None`` when nothing is
    left (so a manifest whose extensions normalize away equals, and hashes as, one without)."""
    if not isinstance(data, dict):
        raise ValueError("manifest extensions: want a JSON object")
    unknown = sorted(set(data) - {GOVERNANCE_V1})
    if unknown:
        raise ValueError(f"manifest extensions: unknown extension names {unknown[:8]} (only {GOVERNANCE_V1})")
    gov = Governance.from_wire(data[GOVERNANCE_V1]) if GOVERNANCE_V1 in data else None
    ext = Extensions(governance=gov)
    return None if ext.empty() else ext


def _extensions_value(v: Any) -> Extensions | None:
    """The manifest's ``extensions`` argument: None, an ``Extensions``, or its wire form."""
    if v is None:
        return None
    if isinstance(v, Extensions):
        return None if v.empty() else v
    if isinstance(v, dict):
        return extensions_from_wire(v)
    raise ValueError("extensions: want an Extensions, its wire object, or None")


def governance_of(m: Any) -> Governance | None:
    """The manifest's governance/v1 claim, or None when it claims none."""
    ext = getattr(m, "extensions", None)
    return None if ext is None else ext.governance


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
    from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, model_validator

    _HAVE_PYDANTIC = True
except ImportError:  # pragma: no cover - exercised on Debian's python3
    _HAVE_PYDANTIC = False


if _HAVE_PYDANTIC:
    from typing import Annotated, Literal

    # Validated by the package's own strict decoder (never pydantic's lax int coercion) and
    # written back as the wire object.
    ExtensionsField = Annotated[
        Extensions | None,
        PlainValidator(_extensions_value),
        PlainSerializer(lambda e: None if e is None else e.to_wire()),
    ]
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
        extensions: ExtensionsField = None

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

        __slots__ = _MANIFEST_ORDER + ("extensions",)

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
            extensions: Extensions | dict | None = None,
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
                extensions=_extensions_value(extensions),
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
            return all(getattr(self, k) == getattr(other, k) for k in _MANIFEST_ORDER + ("extensions",))

        def __hash__(self) -> int:
            return hash(tuple(getattr(self, k) for k in _MANIFEST_ORDER + ("extensions",)))

        def __repr__(self) -> str:
            fields = _MANIFEST_ORDER + ("extensions",)
            return "MemoryAdapterManifest(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in fields) + ")"

        def model_dump(self, mode: str = "python") -> dict:
            out = {k: getattr(self, k) for k in _MANIFEST_ORDER}
            out["extensions"] = self.extensions
            if mode == "json":
                for k in _SETS:
                    out[k] = sorted(out[k])
                out["extensions"] = None if self.extensions is None else self.extensions.to_wire()
            return out


def manifest_from_wire(data: Any) -> MemoryAdapterManifest:
    """The manifest of a ``GET /v1/manifest`` answer, decoded strictly.

    Exactly the nine members and optionally ``extensions`` (decoded strictly, see
    ``extensions_from_wire``), lists of strings (never null), strings and bools of the right
    kind; then the model's own validation (enums, the six coherence rules). ``ValueError``
    when anything is off.
    """
    if not isinstance(data, dict):
        raise ValueError("the manifest is not a JSON object")
    if set(data) - {"extensions"} != set(_MANIFEST_ORDER):
        extra = sorted(set(data) - set(_MANIFEST_ORDER) - {"extensions"})
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
    if "extensions" in data:
        kwargs["extensions"] = extensions_from_wire(data["extensions"])
    return MemoryAdapterManifest(**kwargs)


def manifest_to_wire(m: Any) -> dict:
    """The manifest as wire JSON: the nine members in order, sets as lists in UTF-8 byte order,
    then ``extensions`` (normalized) only when one is left: the canonical form's order."""
    out = {k: getattr(m, k) for k in _MANIFEST_ORDER}
    for k in _SETS:
        out[k] = sorted(set(out[k]), key=lambda s: s.encode("utf-8", "surrogatepass"))
    ext = getattr(m, "extensions", None)
    if ext is not None and not ext.empty():
        out["extensions"] = ext.to_wire()
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
