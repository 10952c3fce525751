"""Planted client bugs, for the test that the matrix through the client catches them
(test/pyclient). Test-only subclasses: nothing here ships in the package."""

from memory_adapter_client import MemoryAdapterError, RemoteMemoryStore


class _NotFoundRaises(RemoteMemoryStore):
    def retrieve_blocking(self, item_id):
        got = super().retrieve_blocking(item_id)
        if got is None:
            raise MemoryAdapterError("planted: 404 mapped to an exception")
        return got


class _DropsLastTag(RemoteMemoryStore):
    def retrieve_blocking(self, item_id):
        got = super().retrieve_blocking(item_id)
        if got is not None and got.tags:
            got.tags = got.tags[:-1]
        return got


class _StripsUnsupportedFilters(RemoteMemoryStore):
    def check_query(self, filters, limit):
        supported = self._ensure_manifest().supported_filters
        for k in [k for k in filters if k not in supported]:
            del filters[k]
        super().check_query(filters, limit)


def not_found_raises(url, token):
    return _NotFoundRaises(url, token=token)


def drops_last_tag(url, token):
    return _DropsLastTag(url, token=token)


def strips_unsupported_filters(url, token):
    return _StripsUnsupportedFilters(url, token=token)


