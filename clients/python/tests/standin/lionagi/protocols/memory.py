"""Stand-in for lionagi.protocols.memory (test-only): MemoryItem is an Element (id and
created_at frozen, metadata dict, unknown fields rejected) whose to_dict() adds lion_class to
metadata; MemoryQuery has text/tags/filters/limit=20; MemoryStore is a runtime-checkable
Protocol of three async methods. pydantic when importable (as lionagi), else plain classes."""

from __future__ import annotations

import time
import uuid
from typing import Any, Protocol, runtime_checkable

try:
    from pydantic import BaseModel, ConfigDict, Field

    class MemoryItem(BaseModel):
        model_config = ConfigDict(extra="forbid")
        id: uuid.UUID = Field(default_factory=uuid.uuid4, frozen=True)
        created_at: float = Field(default_factory=time.time, frozen=True)
        metadata: dict = Field(default_factory=dict)
        content: Any = None
        tags: list[str] = Field(default_factory=list)

        def to_dict(self) -> dict:
            d = self.model_dump()
            d["metadata"]["lion_class"] = f"{type(self).__module__}.{type(self).__qualname__}"
            return d

    class MemoryQuery(BaseModel):
        text: str | None = None
        tags: list[str] | None = None
        filters: dict[str, Any] | None = None
        limit: int = 20

except ImportError:

    class MemoryItem:  # type: ignore[no-redef]
        def __init__(self, *, id=None, created_at=None, metadata=None, content=None, tags=None):
            self.__dict__["id"] = id if isinstance(id, uuid.UUID) else (uuid.uuid4() if id is None else uuid.UUID(str(id)))
            self.__dict__["created_at"] = time.time() if created_at is None else float(created_at)
            self.metadata = dict(metadata or {})
            self.content = content
            self.tags = list(tags or [])

        def __setattr__(self, name, value):
            if name in ("id", "created_at"):
                raise TypeError(f"{name} is frozen")
            self.__dict__[name] = value

        def to_dict(self) -> dict:
            d = {k: self.__dict__[k] for k in ("id", "created_at", "metadata", "content", "tags")}
            d["metadata"] = dict(d["metadata"], lion_class=f"{type(self).__module__}.{type(self).__qualname__}")
            return d

    class MemoryQuery:  # type: ignore[no-redef]
        def __init__(self, *, text=None, tags=None, filters=None, limit=20):
            self.text, self.tags, self.filters, self.limit = text, tags, filters, limit


@runtime_checkable
class MemoryStore(Protocol):
    async def store(self, item: MemoryItem) -> uuid.UUID: ...

    async def retrieve(self, item_id: uuid.UUID) -> MemoryItem | None: ...

    async def search(self, query: MemoryQuery) -> list[MemoryItem]: ...
