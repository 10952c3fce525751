"""A deterministic fake service, an adapter over it, a harness with every capability, and
the manifest-accuracy table that the ``manifest-accuracy`` case runs (ADR-0093 D2: "toggling
every fake behaviour makes the suite fail when the manifest says the opposite").

Service knobs change what the fake service does (an eventual index, tags missing from
hits, metadata not kept, created_at rounded to microseconds or seconds, or not kept); ``truthful_manifest``
computes what a correct adapter must then publish. Adapter knobs are adapter defects that
hide a behaviour behind a truthful manifest. The table pairs them with the case meant to
catch each: every truthful configuration must pass and every lie must fail its case.

Governance (shared-notes/governance-v1.md): ``FakeHarness(governance=Governance(...))`` claims
governance/v1 in the manifest and enforces it over three governed sub-scopes G, A and B (one
fake service each, with their own quota and retention on a virtual clock that the suite's
Retry-After waits move), with both governance capabilities; without it the fake is exactly
the ungoverned one. ``GOVERNANCE_KNOBS`` are the governance lies: the contract's five, and
fake-only ones that each break exactly one named profile check, so that the test proving every
check needed has a lie for each.
"""

from __future__ import annotations

import copy
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .. import jsonexact
from ..errors import MemoryAdapterError, MemoryAdapterUnavailable, ProblemError, UnsupportedMemoryQuery
from ..models import Extensions, Governance, MemoryAdapterManifest, MemoryItem, Quota, Retention, manifest_from_wire, manifest_to_wire
from .harness import MissingCapability

__all__ = (
    "FakeHarness",
    "truthful_manifest",
    "run_accuracy_table",
    "AccuracySummary",
    "SERVICE_KNOBS",
    "ADAPTER_KNOBS",
    "GOVERNANCE_KNOBS",
)

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
GOVERNANCE_KNOBS = (
    # The contract's planted lies (§4).
    "read-only-writes",
    "sub-scope-leak",
    "retention-early",
    "retention-ignored",
    "quota-ignored",
    # Fake-only: each breaks exactly one named profile check.
    "read_only_unavailable",
    "read_only_stored_anyway",
    "read_only_blind",
    "search_leak",
    "id_overwrites_owner",
    "retention_age_ignored",
    "retention_items_ignored",
    "bytes_ignored",
    "rate_ignored",
)
# How much earlier than max_age_seconds the fake's retention-early lie removes an item: an
# item younger than max age goes, while one just stored stays (so that only the check meant
# for it, not the max_items one, sees the lie).
EARLY_BY_SECONDS = 120


class _Clock:
    """The governed sub-scopes' time: moved only by the harness's sleep (Retry-After waits),
    so rate limits and retention are exact and no test waits in real time."""

    def __init__(self) -> None:
        self.now = 1_000_000.0


class _Refused(Exception):
    """A governed store refused with the server's problem (507 or 429)."""

    def __init__(self, problem: ProblemError) -> None:
        super().__init__(str(problem))
        self.problem = problem


def _size(rec: dict) -> int:
    # The Go server's memory.ItemSize: content JSON, each metadata key and value JSON, each tag + 3.
    n = len(jsonexact.dumps(rec["content"]))
    n += sum(len(k.encode()) + len(jsonexact.dumps(v)) for k, v in rec["metadata"].items())
    return n + sum(len(t.encode()) + 3 for t in rec["tags"])


class _Limits:
    """One governed sub-scope's quota, write rate and retention (with the governance lies)."""

    def __init__(self, gov: Governance, knobs: frozenset[str], clock: _Clock) -> None:
        self.quota = gov.quota or Quota(max_items=0, max_bytes=0, writes_per_second=0, write_burst=0)
        self.retention = gov.retention
        self.knobs = knobs
        self.clock = clock
        self.burst = self.quota.write_burst or max(1, self.quota.writes_per_second)
        self.reset()

    def reset(self) -> None:
        self.tokens, self.filled = float(self.burst), self.clock.now

    def admit(self, records: dict, meta: dict, rec: dict) -> None:
        q = self.quota
        if q.writes_per_second and "rate_ignored" not in self.knobs:
            now = self.clock.now
            self.tokens = min(float(self.burst), self.tokens + (now - self.filled) * q.writes_per_second)
            self.filled = now
            if self.tokens < 1:
                wait = max(1, math.ceil((1 - self.tokens) / q.writes_per_second))
                raise _Refused(ProblemError(429, "rate_limited", "Rate limited", "over the write rate", wait))
        new = rec["id"] not in records
        if q.max_items and "quota-ignored" not in self.knobs and new and len(records) + 1 > q.max_items:
            raise _Refused(ProblemError(507, "quota_exceeded", "Quota exceeded", f"over max_items {q.max_items}"))
        if q.max_bytes and "bytes_ignored" not in self.knobs:
            used = sum(size for _, size in meta.values()) - (meta[rec["id"]][1] if not new else 0)
            if used + _size(rec) > q.max_bytes:
                raise _Refused(ProblemError(507, "quota_exceeded", "Quota exceeded", f"over max_bytes {q.max_bytes}"))
        if q.writes_per_second and "rate_ignored" not in self.knobs:
            self.tokens -= 1

    def expired(self, meta: dict, after: int) -> set:
        """The ids retention removes now + after: by store time, never created_at."""
        r = self.retention
        if r is None or "retention-ignored" in self.knobs:
            return set()
        gone = set()
        if r.max_age_seconds and "retention_age_ignored" not in self.knobs:
            age = r.max_age_seconds - (EARLY_BY_SECONDS if "retention-early" in self.knobs else 0)
            cutoff = self.clock.now + after - age
            gone |= {id_ for id_, (stored_at, _) in meta.items() if stored_at <= cutoff}
        if r.max_items and "retention_items_ignored" not in self.knobs:
            left = [id_ for id_ in meta if id_ not in gone]  # in store order, newest last
            gone |= set(left[: max(0, len(left) - r.max_items)])
        return gone


class _Down(Exception):
    pass


class _Rejected(Exception):
    pass


class _Service:
    def __init__(self, knobs: frozenset[str], limits: _Limits | None = None) -> None:
        self.knobs = knobs
        self.limits = limits
        self.calls = 0
        self.clear()

    def clear(self) -> None:
        self.records: dict[str, dict] = {}
        # A governed sub-scope's {id: (store time, size)}, in store order (a new store of an id moves it last).
        self.meta: dict[str, tuple[float, int]] = {}
        if self.limits is not None:
            self.limits.reset()
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
        if self.limits is not None:
            self.limits.admit(self.records, self.meta, rec)
            self.meta.pop(rec["id"], None)
            self.meta[rec["id"]] = (self.limits.clock.now, _size(rec))
        rec["kind"] = "memory"
        self.records.pop(rec["id"], None)
        self.records[rec["id"]] = rec
        if "eventual" not in self.knobs:
            self.indexed.add(rec["id"])
        if self.identityless:
            self.identityless = False
            return {}
        return {"id": rec["id"]}

    def sweep(self, after: int) -> None:
        if self.limits is None:
            return
        for id_ in self.limits.expired(self.meta, after):
            self.records.pop(id_, None)
            self.indexed.discard(id_)
            self.meta.pop(id_, None)

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


def truthful_manifest(service_knobs: frozenset[str], governance: Governance | None = None) -> MemoryAdapterManifest:
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
        extensions=None if governance is None else Extensions(governance=governance),
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
        except _Refused as exc:
            raise MemoryAdapterError(f"fake: store refused: {exc.problem.type}") from exc.problem
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


class _GovernedStore(FakeStore):
    """A governance token's store over one governed sub-scope, with the token's grant."""

    def __init__(self, service: _Service, manifest: MemoryAdapterManifest, knobs: frozenset[str], *, read_only: bool = False,
                 reads: _Service | None = None, leak_from: list[_Service] = (), id_owners: list[_Service] = ()) -> None:  # type: ignore[assignment]
        super().__init__(reads or service, manifest, frozenset())
        self._writes = service
        self._read_only = read_only
        self._gov_knobs = knobs
        self._leak_from = list(leak_from)
        self._id_owners = list(id_owners)

    async def store(self, item: Any) -> uuid.UUID:
        if self._read_only and "read-only-writes" not in self._gov_knobs:
            if "read_only_unavailable" in self._gov_knobs:
                raise MemoryAdapterUnavailable("fake: store (read-only token)")
            if "read_only_stored_anyway" in self._gov_knobs:
                await self._store_in(self._writes, item)
            raise MemoryAdapterError("fake: store refused: forbidden") from ProblemError(403, "forbidden", "Forbidden", "read-only token")
        target = self._writes
        for owner in self._id_owners:  # id_overwrites_owner: ids are one namespace
            if str(item.id) in owner.records:
                target = owner
        return await self._store_in(target, item)

    async def _store_in(self, svc: _Service, item: Any) -> uuid.UUID:
        reads, self._svc = self._svc, svc
        try:
            return await FakeStore.store(self, item)
        finally:
            self._svc = reads

    async def search(self, query: Any) -> list:
        hits = await FakeStore.search(self, query)
        for other in self._leak_from:  # search_leak: other sub-scopes' items in the hits
            reads, self._svc = self._svc, other
            try:
                hits += await FakeStore.search(self, query)
            finally:
                self._svc = reads
        return hits[: max(query.limit, 0)]


class FakeHarness:
    """The seed's harness over the fake, with every optional capability; with ``governance``,
    the manifest claims it and the governance capabilities enforce it (``governance_knobs``:
    GOVERNANCE_KNOBS lies)."""

    def __init__(
        self,
        service_knobs: frozenset[str] = frozenset(),
        adapter_knobs: frozenset[str] = frozenset(),
        manifest: MemoryAdapterManifest | None = None,
        *,
        governance: Governance | None = None,
        governance_knobs: frozenset[str] = frozenset(),
    ) -> None:
        self.service = _Service(frozenset(service_knobs))
        self.adapter_knobs = frozenset(adapter_knobs)
        self.manifest = manifest or truthful_manifest(self.service.knobs, governance)
        self.governance = governance
        self.governance_knobs = frozenset(governance_knobs)
        unknown = self.governance_knobs - set(GOVERNANCE_KNOBS)
        if unknown:
            raise ValueError(f"unknown governance knobs {sorted(unknown)}")
        self.clock = _Clock()
        self.subscopes: dict[str, _Service] = {}
        if governance is not None:
            for name in ("g", "a", "b"):
                if "sub-scope-leak" in self.governance_knobs and self.subscopes:
                    self.subscopes[name] = self.subscopes["g"]  # one store for every sub-scope
                else:
                    self.subscopes[name] = _Service(self.service.knobs, _Limits(governance, self.governance_knobs, self.clock))

    def _governed(self, capability: str) -> dict[str, _Service]:
        if self.governance is None:
            raise MissingCapability(capability)
        return self.subscopes

    async def make_governance_stores(self) -> dict[str, Any]:
        sc, k, m = self._governed("governance_tokens"), self.governance_knobs, self.manifest
        blind = _Service(self.service.knobs) if "read_only_blind" in k else None
        leak = [sc["a"]] if "search_leak" in k else []
        owners = [sc["a"]] if "id_overwrites_owner" in k else []
        return {
            "read_write": _GovernedStore(sc["g"], m, k),
            "read_only": _GovernedStore(sc["g"], m, k, read_only=True, reads=blind),
            "sub_scope_a": _GovernedStore(sc["a"], m, k),
            "sub_scope_b": _GovernedStore(sc["b"], m, k, leak_from=leak, id_owners=owners),
        }

    async def retention_sweep(self, after_seconds: int) -> None:
        for svc in {id(s): s for s in self._governed("retention_sweep").values()}.values():
            svc.sweep(after_seconds)

    async def sleep(self, seconds: float) -> None:
        self.clock.now += seconds

    async def make_store(self) -> FakeStore:
        return FakeStore(self.service, self.manifest, self.adapter_knobs)

    async def reset(self) -> None:
        self.service.clear()
        for svc in self.subscopes.values():
            svc.clear()

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

# Governance claims the table runs truthfully: every profile exercised in full (a write rate
# small enough to make the profiles wait on Retry-After, on the fake's virtual clock), and a
# read-only claim alone (the other three profiles NotApplicable). Quota max_items 20 leaves
# room for retention's max_items (5) and the rate's burst (3); max_bytes 4096 refuses the
# bytes part's eighth 514-byte store before max_items could.
GOV_FULL = Governance(
    read_only=True,
    isolation=True,
    retention=Retention(max_age_seconds=3600, max_items=5, sweep_period_seconds=60),
    quota=Quota(max_items=20, max_bytes=4096, writes_per_second=2, write_burst=3),
)
_GOV_TRUTHFUL = [GOV_FULL, Governance(read_only=True, isolation=False)]
# (governance lie, the profile meant to catch it), each run with the GOV_FULL claim.
_GOV_LIES: list[tuple[str, str]] = [
    ("read-only-writes", "read-only"),
    ("read_only_unavailable", "read-only"),
    ("read_only_stored_anyway", "read-only"),
    ("read_only_blind", "read-only"),
    ("sub-scope-leak", "isolation"),
    ("search_leak", "isolation"),
    ("id_overwrites_owner", "isolation"),
    ("retention-early", "retention"),
    ("retention-ignored", "retention"),
    ("retention_age_ignored", "retention"),
    ("retention_items_ignored", "retention"),
    ("quota-ignored", "quota"),
    ("bytes_ignored", "quota"),
    ("rate_ignored", "quota"),
]
assert sorted(k for k, _ in _GOV_LIES) == sorted(GOVERNANCE_KNOBS)


def _claimed_profiles(g: Governance) -> list[str]:
    return [pid for pid, on in (("read-only", g.read_only), ("isolation", g.isolation), ("retention", g.retention is not None), ("quota", g.quota is not None)) if on]


@dataclass
class AccuracySummary:
    caught: int = 0
    total: int = 0
    truthful_passed: int = 0
    truthful: int = 0
    problems: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return self.total > 0 and self.caught == self.total and self.truthful > 0 and self.truthful_passed == self.truthful and not self.problems


async def run_accuracy_table(disabled_check: str = "", governance_only: bool = False) -> AccuracySummary:
    """The table: truthful configurations must pass, every lie must fail its case or profile.
    ``disabled_check`` skips one named profile check and ``governance_only`` runs only the
    governance rows: the test proving each profile check needed sets both."""
    from .suite import FAILED, PASSED, Options, run

    opts = Options(nested=True, visibility_timeout=0.05, poll_interval=0.005, case_timeout=10, profile_timeout=20, disabled_check=disabled_check)
    s = AccuracySummary()
    for g in _GOV_TRUTHFUL:
        s.truthful += 1
        r = await run(FakeHarness(governance=g), opts)
        claimed = _claimed_profiles(g)
        not_passed = {pid: o for pid, o in r.profile_outcomes().items() if pid in claimed and o != PASSED}
        if r.result == PASSED and r.claim == "full" and not not_passed:
            s.truthful_passed += 1
        else:
            bad = [f"{p.id}: {p.outcome} {p.reason} {'; '.join(p.failures)}" for p in r.profiles if p.id in not_passed or p.outcome == FAILED]
            s.problems.append(f"truthful governance {g!r} did not pass ({r.result}, {r.claim}): {'; '.join(bad)[:400]}")
    for knob, want in _GOV_LIES:
        s.total += 1
        r = await run(FakeHarness(governance=GOV_FULL, governance_knobs=frozenset({knob})), opts)
        if r.profile_outcomes().get(want) == FAILED and r.result == FAILED:
            s.caught += 1
        else:
            s.problems.append(f"governance lie {knob!r} was not caught by profile {want} ({r.profile_outcomes().get(want)})")
    if governance_only:
        return s
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
