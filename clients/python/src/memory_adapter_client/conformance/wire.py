"""A MemoryAdapterHarness over the HTTP harness protocol (/harness/v1, conformance/README.md).

It drives a server in harness mode (``memory-adapter serve --harness``, or any server that
speaks the protocol) and hands out this package's ``RemoteMemoryStore`` as the store under
test, so a run judges the server *through the client*: the client's own rules (limit 0 and
rejected filter keys answered locally, 404 -> None, error mapping) are part of what passes
or fails.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Callable

from .. import jsonexact
from ..client import RemoteMemoryStore, item_from_wire
from .harness import CAPABILITIES, MissingCapability

__all__ = ("WireHarness",)


class WireHarness:
    """The seed's harness shape over /harness/v1, with every optional capability the target
    declares. ``store_factory(url, token)`` makes the store under test (default
    ``RemoteMemoryStore``)."""

    def __init__(
        self,
        target_url: str,
        token: str | None,
        harness_url: str,
        harness_token: str,
        *,
        store_factory: Callable[[str, str | None], Any] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.target_url = target_url
        self._token = token
        self._factory = store_factory or (lambda url, tok: RemoteMemoryStore(url, token=tok))
        self._h = RemoteMemoryStore(harness_url, token=harness_token, timeout=timeout)
        self._caps: set[str] | None = None
        self.duplicate_id_behaviour = ""

    async def _request(self, method: str, path: str, payload: Any = None) -> Any:
        body = (jsonexact.dumps({} if payload is None else payload)) if method == "POST" else None
        status, _ctype, data = await asyncio.to_thread(self._h._exchange, method, path, body, self._h._token)
        if status // 100 != 2:
            raise RuntimeError(f"harness {method} {path} answered HTTP {status}: {data[:300]!r}")
        return jsonexact.loads(data) if data.strip() else None

    async def load_capabilities(self) -> set[str]:
        if self._caps is None:
            got = await self._request("GET", "/harness/v1/capabilities")
            if not isinstance(got, dict) or not isinstance(got.get("capabilities"), list):
                raise RuntimeError("harness capabilities: not {\"capabilities\": [...]}")
            self._caps = {c for c in got["capabilities"] if isinstance(c, str)}
            d = got.get("duplicate_id_behaviour")
            self.duplicate_id_behaviour = d if isinstance(d, str) else ""
        return self._caps

    def has_capability(self, name: str) -> bool:
        if self._caps is None:
            raise RuntimeError("call load_capabilities() first")
        return name in self._caps

    async def _call(self, cap: str, method: str, path: str, payload: Any = None) -> Any:
        caps = await self.load_capabilities()
        if cap not in caps:
            raise MissingCapability(cap)
        return await self._request(method, path, payload)

    # -- the seed's five methods --

    async def make_store(self) -> Any:
        s = self._factory(self.target_url, self._token)
        await s.load_manifest()
        return s

    async def reset(self) -> None:
        await self._call("reset", "POST", "/harness/v1/reset")

    async def make_search_index_visible(self) -> None:
        await self._call("search_index_visible", "POST", "/harness/v1/search-index-visible")

    async def make_transport_unavailable(self) -> None:
        await self._call("transport_unavailable", "POST", "/harness/v1/transport-unavailable")

    async def close(self) -> None:
        self._h.close()

    # -- optional capabilities --

    async def make_wrong_kind_record(self) -> uuid.UUID:
        got = await self._call("wrong_kind_record", "POST", "/harness/v1/wrong-kind-record")
        if not isinstance(got, dict) or not isinstance(got.get("id"), str):
            raise RuntimeError("harness wrong-kind-record: no id")
        return uuid.UUID(got["id"])

    async def make_write_rejected(self) -> Any:
        got = await self._call("write_rejected", "POST", "/harness/v1/write-rejected")
        return item_from_wire(got)

    async def make_responses_malformed(self) -> None:
        await self._call("responses_malformed", "POST", "/harness/v1/responses-malformed")

    async def make_next_write_identityless(self) -> None:
        await self._call("identityless_write", "POST", "/harness/v1/identityless-write")

    async def backend_calls(self) -> int:
        got = await self._call("backend_calls", "GET", "/harness/v1/backend-calls")
        if not isinstance(got, dict) or isinstance(got.get("count"), bool) or not isinstance(got.get("count"), int):
            raise RuntimeError("harness backend-calls: no count")
        return got["count"]

    async def make_governance_stores(self) -> dict[str, Any]:
        """The stores of the four data tokens POST /harness/v1/governance-tokens hands out."""
        got = await self._call("governance_tokens", "POST", "/harness/v1/governance-tokens")
        names = ("read_write", "read_only", "sub_scope_a", "sub_scope_b")
        if not isinstance(got, dict) or set(got) != set(names) or not all(isinstance(got[n], str) and got[n] for n in names):
            raise RuntimeError(f"harness governance-tokens: want the tokens {list(names)}")
        stores = {}
        for n in names:
            s = self._factory(self.target_url, got[n])
            await s.load_manifest()
            stores[n] = s
        return stores

    async def retention_sweep(self, after_seconds: int) -> None:
        if isinstance(after_seconds, bool) or not isinstance(after_seconds, int) or after_seconds < 0:
            raise ValueError("after_seconds: a non-negative int")
        await self._call("retention_sweep", "POST", "/harness/v1/retention-sweep", {"after_seconds": after_seconds})


assert all(m is None or hasattr(WireHarness, m) for m in CAPABILITIES.values())
