"""A deterministic fake service, an adapter over it, a harness with every capability, and
the manifest-accuracy table that the ``manifest-accuracy`` case runs (ADR-0093 D2: "toggling
every fake behaviour makes the suite fail when the manifest says the opposite").

Service knobs change what the fake service does (an eventual index, tags missing from
hits, metadata not kept, created_at rounded to microseconds or seconds, or not kept); ``truthful_manifest``
computes what a correct adapter must then publish. Adapter knobs are adapter defects that
hide a behaviour behind a truthful manifest. The table pairs them with the case meant to
catch each: every truthful configuration must pass and every lie must fail its case.
"""

from __future__ import annotations

import copy
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .. import jsonexact
from ..errors import MemoryAdapterError, MemoryAdapterUnavailable, UnsupportedMemoryQuery
from ..models import MemoryAdapterManifest, MemoryItem, manifest_to_wire, manifest_from_wire

__all__ = ("FakeHarness", "truthful_manifest", "run_accuracy_table", "AccuracySummary", "SERVICE_KNOBS", "ADAPTER_KNOBS")

SERVICE_KNOBS = ("eventual", "hits_without_tags", "metadata_dropped", "created_at_seconds", "created_at_microseconds", "created_at_not_kept")
ADAPTER_KNOBS = (
    "coerce_wrong_kind",
    "hide_outage",
    "accept_identityless",
    "ignore_rejection",
    "pass_malformed",
    "send_limit_zero",
    "negative_limit_sliced",
    "ignore_unsupported_filters",
    "ignore_filters",
    "unknown_as_empty",
    "different_id",
    "wildcard_empty_query",
    "manifest_changes",
    "dedupe_tags",
)
FILTERS = frozenset({"branch_id", "source"})


class _Down(Exception):
    pass


class _Rejected(Exception):
    pass


class _Service:
    def __init__(self, knobs: frozenset[str]) -> None:
        self.knobs = knobs
        self.calls = 0
        self.clear()

    def clear(self) -> None:
        self.records: dict[str, dict] = {}
        self.indexed: set[str] = set()
        self.outage = self.malformed = self.identityless = False
        self.rejected: set[str] = set()

    def _enter(self) -> None:
        self.calls += 1
        if self.outage:
            raise _Down("the fake service is cut off")

    def put(self, rec: dict) -> dict:
        self._enter()
        if rec["id"] in self.rejected:
            raise _Rejected("the fake service rejects this write")
        rec = jsonexact.loads(jsonexact.dumps(rec))
        if "created_at_microseconds" in self.knobs:
            # A timestamptz or an integer-microsecond column: lionagi's time.time() comes back altered.
            rec["created_at"] = round(rec["created_at"] * 1e6) / 1e6
        if "created_at_seconds" in self.knobs:
            rec["created_at"] = float(int(rec["created_at"]))
        if "created_at_not_kept" in self.knobs:
            rec["created_at"] = time.time()
        if "metadata_dropped" in self.knobs:
            rec["metadata"] = {}
        rec["kind"] = "memory"
        self.records.pop(rec["id"], None)
        self.records[rec["id"]] = rec
        if "eventual" not in self.knobs:
            self.indexed.add(rec["id"])
        if self.identityless:
            self.identityless = False
            return {}
        return {"id": rec["id"]}

    def get(self, id_: str) -> dict | None:
        self._enter()
        if self.malformed:
            return {"garbage": True}
        rec = self.records.get(id_)
        return copy.deepcopy(rec)

    def query(self, text: str | None, tags: list | None, filters: dict | None, limit: int) -> list[dict]:
        self._enter()
        if self.malformed:
            return [{"garbage": True}]
        out = []
        for rec in self.records.values():
            if rec["id"] not in self.indexed:
                continue
            if text and text.lower() not in jsonexact.dumps(rec["content"]).decode().lower():
                continue
            if tags and not set(tags) & set(rec["tags"]):
                continue
            if filters and not all(k in rec["metadata"] and jsonexact.dumps(rec["metadata"][k]) == jsonexact.dumps(v) for k, v in filters.items()):
                continue
            hit = copy.deepcopy(rec)
            if "hits_without_tags" in self.knobs:
                hit["tags"] = []
            out.append(hit)
        return out[:limit]


def truthful_manifest(service_knobs: frozenset[str]) -> MemoryAdapterManifest:
    dropped = set()
    if "metadata_dropped" in service_knobs:
        dropped.add("metadata")
    if "created_at_not_kept" in service_knobs:
        dropped.add("created_at")
    rounded = "created_at_seconds" in service_knobs or "created_at_microseconds" in service_knobs
    exact = not dropped and not rounded
    retrieve = "full" if exact else ("lossy" if rounded else "native_fields")
    search = retrieve if "hits_without_tags" not in service_knobs or retrieve == "lossy" else "native_fields"
    return MemoryAdapterManifest(
        adapter="python-fake",
        native_item_fields=frozenset({"id", "created_at", "metadata", "content", "tags"} - dropped),
        dropped_item_fields=frozenset(dropped),
        supported_filters=frozenset() if "metadata_dropped" in service_knobs else FILTERS,
        search_consistency="eventual" if "eventual" in service_knobs else "immediate",
        retrieve_fidelity=retrieve,
        search_fidelity=search,
        search_returns_tags="hits_without_tags" not in service_knobs,
        preserves_metadata="metadata_dropped" not in service_knobs,
    )


class FakeStore:
    """The fake's adapter: a correct ExternalMemoryStore unless adapter knobs are set."""

    def __init__(self, service: _Service, manifest: MemoryAdapterManifest, knobs: frozenset[str]) -> None:
        self._svc = service
        self._m = manifest
        self._knobs = knobs
        self._searched = False

    @property
    def manifest(self) -> MemoryAdapterManifest:
        if "manifest_changes" in self._knobs and self._searched:
            wire = manifest_to_wire(self._m)
            wire["adapter"] = "python-fake-changed"
            return manifest_from_wire(wire)
        return self._m

    def _project(self, rec: dict) -> Any:
        try:
            return MemoryItem(
                id=uuid.UUID(rec["id"]),
                created_at=rec["created_at"],
                metadata=rec["metadata"],
                content=rec["content"],
                tags=rec["tags"],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise MemoryAdapterError("fake: malformed service record") from exc

    async def store(self, item: Any) -> uuid.UUID:
        tags = list(item.tags)
        if "dedupe_tags" in self._knobs:
            tags = list(dict.fromkeys(tags))
        rec = {"id": str(item.id), "created_at": item.created_at, "metadata": dict(item.metadata), "content": item.content, "tags": tags}
        try:
            ack = self._svc.put(rec)
        except _Down as exc:
            if "hide_outage" in self._knobs:
                return item.id
            raise MemoryAdapterUnavailable("fake: store") from exc
        except _Rejected as exc:
            if "ignore_rejection" in self._knobs:
                return item.id
            raise MemoryAdapterError("fake: the service rejected the write") from exc
        if "id" not in ack and "accept_identityless" not in self._knobs:
            raise MemoryAdapterError("fake: the service acknowledged the write without an identity")
        return uuid.uuid4() if "different_id" in self._knobs else item.id

    async def retrieve(self, item_id: uuid.UUID) -> Any:
        try:
            rec = self._svc.get(str(item_id))
        except _Down as exc:
            if "hide_outage" in self._knobs:
                return None
            raise MemoryAdapterUnavailable("fake: retrieve") from exc
        if rec is None:
            return MemoryItem(id=item_id) if "unknown_as_empty" in self._knobs else None
        if "garbage" in rec:
            if "pass_malformed" in self._knobs:
                return None
            raise MemoryAdapterError("fake: malformed service record")
        if rec.get("kind") != "memory" and "coerce_wrong_kind" not in self._knobs:
            return None
        return self._project(rec)

    async def search(self, query: Any) -> list:
        self._searched = True
        filters = dict(query.filters or {})
        rejected = [k for k in filters if k not in self._m.supported_filters]
        if "ignore_unsupported_filters" in self._knobs:
            filters = {k: v for k, v in filters.items() if k not in rejected}
            rejected = []
        limit = query.limit
        if limit < 0 and "negative_limit_sliced" not in self._knobs:
            rejected.append("limit")
        if rejected:
            raise UnsupportedMemoryQuery(rejected)
        if limit == 0 and "send_limit_zero" not in self._knobs:
            return []
        text = query.text
        if not text and not query.tags and not filters and "wildcard_empty_query" in self._knobs:
            text = "*"
        if "ignore_filters" in self._knobs:
            filters = {}
        try:
            recs = self._svc.query(text, query.tags, filters, limit)
        except _Down as exc:
            if "hide_outage" in self._knobs:
                return []
            raise MemoryAdapterUnavailable("fake: search") from exc
        out = []
        for rec in recs:
            if "garbage" in rec:
                if "pass_malformed" in self._knobs:
                    continue
                raise MemoryAdapterError("fake: malformed service record")
            if rec.get("kind") != "memory" and "coerce_wrong_kind" not in self._knobs:
                continue
            out.append(self._project(rec))
        return out[:0] if limit == 0 else out


class FakeHarness:
    """The seed's harness over the fake, with every optional capability."""

    def __init__(self, service_knobs: frozenset[str] = frozenset(), adapter_knobs: frozenset[str] = frozenset(), manifest: MemoryAdapterManifest | None = None) -> None:
        self.service = _Service(frozenset(service_knobs))
        self.adapter_knobs = frozenset(adapter_knobs)
        self.manifest = manifest or truthful_manifest(self.service.knobs)

    async def make_store(self) -> FakeStore:
        return FakeStore(self.service, self.manifest, self.adapter_knobs)

    async def reset(self) -> None:
        self.service.clear()

    async def make_search_index_visible(self) -> None:
        self.service.indexed = set(self.service.records)

    async def make_transport_unavailable(self) -> None:
        self.service.outage = True

    async def close(self) -> None:
        self.service.clear()

    async def make_wrong_kind_record(self) -> uuid.UUID:
        id_ = str(uuid.uuid4())
        self.service.records[id_] = {"id": id_, "kind": "note", "created_at": 1.0, "metadata": {}, "content": "a note, not a memory", "tags": []}
        self.service.indexed.add(id_)
        return uuid.UUID(id_)

    async def make_write_rejected(self) -> Any:
        it = MemoryItem(content={"rejected": True}, tags=["rejected"])
        self.service.rejected.add(str(it.id))
        return it

    async def make_responses_malformed(self) -> None:
        self.service.malformed = True

    async def make_next_write_identityless(self) -> None:
        self.service.identityless = True

    async def backend_calls(self) -> int:
        return self.service.calls


def _lie(m: MemoryAdapterManifest, **changes: Any) -> MemoryAdapterManifest:
    wire = manifest_to_wire(m)
    wire.update({k: sorted(v) if isinstance(v, (set, frozenset)) else v for k, v in changes.items()})
    return manifest_from_wire(wire)


def _full() -> MemoryAdapterManifest:
    return truthful_manifest(frozenset())


# (name, service knobs, adapter knobs, manifest or None for the truthful one, the case meant to catch it)
_LIES: list[tuple[str, frozenset, frozenset, Any, str]] = [
    ("eventual index claimed immediate", frozenset({"eventual"}), frozenset(), lambda: _lie(truthful_manifest(frozenset({"eventual"})), search_consistency="immediate"), "consistency"),
    ("tagless hits claimed to carry tags", frozenset({"hits_without_tags"}), frozenset(), lambda: _lie(truthful_manifest(frozenset({"hits_without_tags"})), search_returns_tags=True), "tag-projection"),
    ("tagged hits claimed tagless", frozenset(), frozenset(), lambda: _lie(_full(), search_returns_tags=False, search_fidelity="native_fields"), "tag-projection"),
    ("dropped metadata claimed preserved", frozenset({"metadata_dropped"}), frozenset(), lambda: _full(), "metadata-projection"),
    ("kept metadata claimed dropped", frozenset(), frozenset(), lambda: _lie(_full(), native_item_fields={"id", "created_at", "content", "tags"}, dropped_item_fields={"metadata"}, preserves_metadata=False, retrieve_fidelity="native_fields", search_fidelity="native_fields"), "dropped-write-field"),
    ("second-resolution created_at claimed full", frozenset({"created_at_seconds"}), frozenset(), lambda: _full(), "direct-retrieval"),
    ("microsecond created_at claimed full", frozenset({"created_at_microseconds"}), frozenset(), lambda: _full(), "direct-retrieval"),
    ("created_at not kept claimed native", frozenset({"created_at_not_kept"}), frozenset(), lambda: _lie(truthful_manifest(frozenset({"created_at_not_kept"})), native_item_fields={"id", "created_at", "metadata", "content", "tags"}, dropped_item_fields=set()), "dropped-write-field"),
    ("wrong-kind record coerced", frozenset(), frozenset({"coerce_wrong_kind"}), None, "wrong-native-kind"),
    ("outage hidden", frozenset(), frozenset({"hide_outage"}), None, "transport-outage"),
    ("identityless write accepted", frozenset(), frozenset({"accept_identityless"}), None, "store-identifier"),
    ("rejected write ignored", frozenset(), frozenset({"ignore_rejection"}), None, "rejected-write"),
    ("malformed payload passed", frozenset(), frozenset({"pass_malformed"}), None, "typed-search"),
    ("limit 0 sent to the service", frozenset(), frozenset({"send_limit_zero"}), None, "limit"),
    ("negative limit sliced", frozenset(), frozenset({"negative_limit_sliced"}), None, "limit"),
    ("unsupported filter ignored", frozenset(), frozenset({"ignore_unsupported_filters"}), None, "unsupported-filter"),
    ("supported filter not applied", frozenset(), frozenset({"ignore_filters"}), None, "supported-filter"),
    ("unknown id as an empty item", frozenset(), frozenset({"unknown_as_empty"}), None, "unknown-id"),
    ("generated id returned", frozenset(), frozenset({"different_id"}), None, "store-identifier"),
    ("wildcard for the empty query", frozenset(), frozenset({"wildcard_empty_query"}), None, "empty-query"),
    ("manifest changes after use", frozenset(), frozenset({"manifest_changes"}), None, "structural-surface"),
    ("tags de-duplicated", frozenset(), frozenset({"dedupe_tags"}), None, "tag-projection"),
]

_TRUTHFUL = [frozenset(), *(frozenset({k}) for k in SERVICE_KNOBS), frozenset({"eventual", "hits_without_tags", "metadata_dropped"})]


@dataclass
class AccuracySummary:
    caught: int = 0
    total: int = 0
    truthful_passed: int = 0
    truthful: int = 0
    problems: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return self.total > 0 and self.caught == self.total and self.truthful > 0 and self.truthful_passed == self.truthful and not self.problems


async def run_accuracy_table() -> AccuracySummary:
    from .suite import FAILED, PASSED, Options, run

    opts = Options(nested=True, visibility_timeout=0.05, poll_interval=0.005, case_timeout=10)
    s = AccuracySummary()
    for knobs in _TRUTHFUL:
        s.truthful += 1
        r = await run(FakeHarness(knobs), opts)
        if r.result == PASSED:
            s.truthful_passed += 1
        else:
            bad = [f"{c.id}: {c.message}" for c in r.cases if c.outcome != PASSED and c.id != "manifest-accuracy"]
            s.problems.append(f"truthful {sorted(knobs)} did not pass: {'; '.join(bad)[:300]}")
    for name, sk, ak, manifest, want in _LIES:
        s.total += 1
        r = await run(FakeHarness(sk, ak, manifest() if manifest else None), opts)
        if r.outcomes().get(want) == FAILED:
            s.caught += 1
        else:
            s.problems.append(f"lie {name!r} was not caught by {want} ({r.outcomes().get(want)})")
    return s
