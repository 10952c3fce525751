"""A test-only stand-in for lionagi (which cannot be installed here), minimal and written to
the shape of lionagi's lionagi/protocols/memory.py and Branch's memory parameter: only what
the client's "lionagi installed" path touches."""

from .protocols.memory import MemoryItem, MemoryQuery, MemoryStore


class Branch:
    """lionagi's Branch, reduced to its keyword-only ``memory`` parameter."""

    def __init__(self, *, memory=None):
        if memory is not None and not isinstance(memory, MemoryStore):
            raise TypeError("memory must satisfy MemoryStore")
        self._memory = memory

    @property
    def memory(self):
        return self._memory


__all__ = ("Branch", "MemoryItem", "MemoryQuery", "MemoryStore")
