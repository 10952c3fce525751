"""The matrix of ADR-0093 D2, in Python (ids and checks as the Go suite's
conformance/cases_*.go; contract.md §2 and §3).

``await run(harness)`` returns a ``Report``. Each case gets a fresh store (``reset``, then
``make_store``) and runs under a timeout; a case that raises unexpectedly or times out is
Failed with the reason and the run goes on. Outcomes are ``Passed``, ``Failed`` and
``NotApplicable`` (always with a reason).

``created_at`` is compared bit-exactly as a double (contract.md §3), and the fixtures carry
what Python's ``time.time()`` makes: sub-microsecond bits.

After the matrix, the four governance profiles (shared-notes/governance-v1.md §3:
``read-only``, ``isolation``, ``retention``, ``quota``) run, each after a reset, against the
stores of the harness's governance tokens; they are NotApplicable unless the manifest's
``governance/v1`` extension claims them, and reported apart from the cases (``Report.profiles``).
"""

from __future__ import annotations

import asyncio
import json
import struct
import time
import traceback
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Awaitable, Callable

from ..errors import MemoryAdapterError, MemoryAdapterUnavailable, ProblemError, UnsupportedMemoryQuery
from ..models import MemoryItem, MemoryQuery, coherence_error, governance_of, manifest_hash
from .harness import MissingCapability, has_capability

__all__ = (
    "CASE_IDS",
    "PROFILE_IDS",
    "Options",
    "Report",
    "CaseResult",
    "ProfileResult",
    "run",
    "json_equal",
    "PASSED",
    "FAILED",
    "NOT_APPLICABLE",
)

PASSED, FAILED, NOT_APPLICABLE = "Passed", "Failed", "NotApplicable"
SUITE_VERSION = "0.1.0"

CASE_IDS = (
    "structural-surface",
    "store-identifier",
    "direct-retrieval",
    "unknown-id",
    "wrong-native-kind",
    "dropped-write-field",
    "typed-search",
    "limit",
    "empty-query",
    "unsupported-filter",
    "supported-filter",
    "tag-projection",
    "metadata-projection",
    "consistency",
    "transport-outage",
    "rejected-write",
    "manifest-accuracy",
)
_READ_ONLY = {"manifest-accuracy"}

BIG_INT = 9007199254740993  # 2^53 + 1: a double cannot hold it
DEFAULT_LIMIT = 20
MAX_FILTER_KEYS_CHECKED = 8
# The Go suite's fixture time (conformance/checks.go): a time.time() value whose sub-microsecond
# bits a store that keeps microseconds loses.
_FIXTURE_TIME = 1764975600.5738423


@dataclass
class Options:
    case_timeout: float = 30.0
    visibility_timeout: float = 10.0
    poll_interval: float = 0.01
    # The manifest-accuracy table; None means the built-in fake table (fake.run_accuracy_table).
    accuracy: Callable[[], Awaitable[Any]] | None = None
    # Set by the accuracy table for its own runs, which must not recurse.
    nested: bool = False
    # Bound on one governance profile, seconds: its stores may wait up to
    # GOVERNANCE_RETRY_BUDGET on Retry-After, plus the calls themselves.
    profile_timeout: float = 120.0
    # One named profile check to skip (PROFILE_CHECKS): only the test proving that every
    # check is needed sets it.
    disabled_check: str = ""


@dataclass
class CaseResult:
    id: str
    outcome: str
    message: str = ""
    missing_capabilities: list[str] = field(default_factory=list)
    duration_ms: int = 0

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "outcome": self.outcome,
            "message": self.message,
            "missing_capabilities": list(self.missing_capabilities),
            "duration_ms": self.duration_ms,
        }


@dataclass
class ProfileResult:
    id: str
    outcome: str
    reason: str = ""
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    missing_capabilities: list[str] = field(default_factory=list)
    duration_ms: int = 0

    @property
    def title(self) -> str:
        return PROFILE_TITLES.get(self.id, self.id)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "outcome": self.outcome,
            "reason": self.reason,
            "failures": list(self.failures),
            "notes": list(self.notes),
        }


@dataclass
class Report:
    cases: list[CaseResult] = field(default_factory=list)
    profiles: list[ProfileResult] = field(default_factory=list)
    adapter_id: str = ""
    manifest_hash: str = ""
    error: str = ""
    result: str = FAILED
    claim: str = "partial"
    missing_capabilities: list[str] = field(default_factory=list)
    suite_version: str = SUITE_VERSION

    def finish(self) -> None:
        seen = [c.id for c in self.cases]
        complete = sorted(seen) == sorted(CASE_IDS) and all(c.outcome in (PASSED, FAILED, NOT_APPLICABLE) for c in self.cases + self.profiles)
        self.missing_capabilities = sorted({m for c in self.cases + self.profiles for m in c.missing_capabilities})
        # A failed profile fails the run; a claimed profile NotApplicable for a missing
        # capability makes the claim partial (through missing_capabilities).
        failed = any(c.outcome == FAILED for c in self.cases + self.profiles)
        self.result = PASSED if complete and not failed and not self.error else FAILED
        self.claim = "full" if complete and not self.missing_capabilities and not self.error else "partial"

    def outcomes(self) -> dict[str, str]:
        return {c.id: c.outcome for c in self.cases}

    def profile_outcomes(self) -> dict[str, str]:
        return {p.id: p.outcome for p in self.profiles}

    def summary(self) -> str:
        if self.result != PASSED:
            return FAILED
        if self.claim == "full":
            return "Passed (full claim)"
        return f"Passed (partial claim: missing harness capabilities {', '.join(self.missing_capabilities)}; not the full ADR-0093 claim)"

    def table(self) -> str:
        lines = [f"adapter {self.adapter_id}  suite {self.suite_version}  result {self.summary()}"]
        if self.error:
            lines.append("error: " + self.error)
        for c in self.cases:
            lines.append(f"{c.id:<20} {c.outcome:<13} {_one_line(c.message)[:300]}")
        for p in self.profiles:
            lines.append(f"profile {p.id:<12} {p.outcome:<13} {_one_line(p.reason or '; '.join(p.failures or p.notes))[:300]}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "adapter_id": self.adapter_id,
            "manifest_hash": self.manifest_hash,
            "suite_version": self.suite_version,
            "result": self.result,
            "claim": self.claim,
            "missing_capabilities": self.missing_capabilities,
            "error": self.error,
            "cases": [c.to_json() for c in self.cases],
            "profiles": [p.to_json() for p in self.profiles],
        }


def _one_line(s: str) -> str:
    return " ".join(s.split())


# ---- value comparison (contract.md §3) ----


def _num(v: Any) -> Decimal:
    return Decimal(repr(v)) if isinstance(v, float) else Decimal(v)


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: key order free, numbers by exact decimal value, strings by code points."""
    num = (int, float, Decimal)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, num) and isinstance(b, num):
        return _num(a) == _num(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return False


def same_double(a: Any, b: Any) -> bool:
    """Bit-exact equality of two created_at doubles."""
    try:
        return struct.pack("<d", float(a)) == struct.pack("<d", float(b))
    except (TypeError, ValueError, OverflowError):
        return False


def _short(v: Any, n: int = 120) -> str:
    try:
        s = json.dumps(v, ensure_ascii=False, default=str, sort_keys=True)
    except (TypeError, ValueError):
        s = repr(v)
    return s if len(s) <= n else s[:n] + "…"


def field_problems(stored: Any, got: Any, *fields: str) -> list[str]:
    out = []
    for f in fields:
        if f == "id" and got.id != stored.id:
            out.append(f"id {got.id}, want {stored.id}")
        elif f == "content" and not json_equal(got.content, stored.content):
            out.append(f"content {_short(got.content)}, want {_short(stored.content)}")
        elif f == "created_at" and not same_double(got.created_at, stored.created_at):
            out.append(f"created_at {got.created_at!r}, want {stored.created_at!r} (bit-exact)")
        elif f == "tags" and list(got.tags) != list(stored.tags):
            out.append(f"tags {list(got.tags)!r}, want {list(stored.tags)!r}")
        elif f == "metadata" and not json_equal(dict(got.metadata), dict(stored.metadata)):
            out.append(f"metadata {_short(got.metadata)}, want {_short(stored.metadata)}")
    return out


def _is_adapter_error(e: BaseException | None) -> bool:
    return isinstance(e, MemoryAdapterError) and not isinstance(e, MemoryAdapterUnavailable)


def _hit_ids(hits: list) -> str:
    ids = [str(h.id)[:8] for h in hits[:5]]
    if len(hits) > 5:
        ids.append(f"…({len(hits)})")
    return "[" + ",".join(ids) + "]"


def _contains_all(hits: list, want: list) -> bool:
    have = {h.id for h in hits}
    return all(w in have for w in want)


def _find_hit(hits: list, id_: uuid.UUID) -> Any:
    for h in hits:
        if h.id == id_:
            return h
    return None


async def _close_store(s: Any) -> None:
    for name in ("aclose", "close"):
        fn = getattr(s, name, None)
        if callable(fn):
            try:
                r = fn()
                if asyncio.iscoroutine(r):
                    await asyncio.wait_for(r, 5)
            except Exception:  # noqa: BLE001 - a store's close is its owner's business
                pass
            return


class _Abort(Exception):
    pass


async def _attempt(f: Callable[[], Awaitable[Any]]) -> tuple[Any, BaseException | None]:
    """Await f(): its result and no error, or no result and the error it raised."""
    try:
        return await f(), None
    except Exception as e:  # noqa: BLE001 - the cases judge every error the store raises
        return None, e


class _CaseRun:
    def __init__(self, h: Any, opts: Options) -> None:
        self.h = h
        self.opts = opts
        self.store: Any = None
        self.m: Any = None
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.na = ""
        self.missing: list[str] = []

    # -- recording --

    def fail(self, msg: str) -> None:
        self.problems.append(msg)

    def fatal(self, msg: str) -> None:
        self.fail(msg)
        raise _Abort()

    def note(self, msg: str) -> None:
        self.notes.append(msg)

    def not_applicable(self, reason: str) -> None:
        self.na = reason
        raise _Abort()

    def lack(self, cap: str) -> None:
        if cap not in self.missing:
            self.missing.append(cap)

    def has(self, cap: str) -> bool:
        return has_capability(self.h, cap)

    def need(self, cap: str, what: str) -> None:
        if not self.has(cap):
            self.lack(cap)
            self.not_applicable(f"missing harness capability {cap}: {what}")

    async def harness(self, call: str, *args: Any) -> Any:
        """A harness call whose failure ends the case (NotApplicable for a missing capability)."""
        try:
            return await getattr(self.h, call)(*args)
        except MissingCapability as e:
            self.lack(e.name)
            self.not_applicable(f"missing harness capability {e.name} ({call})")
        except Exception as e:  # noqa: BLE001
            self.fatal(f"harness {call} failed: {e!r}")

    def result(self) -> CaseResult:
        if self.problems:
            msg = self.problems[:6]
            extra = f"; and {len(self.problems) - 6} more" if len(self.problems) > 6 else ""
            return CaseResult("", FAILED, "; ".join(msg) + extra, self.missing)
        if self.na:
            return CaseResult("", NOT_APPLICABLE, self.na, self.missing)
        return CaseResult("", PASSED, "; ".join(self.notes), self.missing)

    # -- fixtures --

    def fixture(self, n: int) -> Any:
        id_ = uuid.uuid4()
        content = {
            "n": n,
            "big": BIG_INT,
            "text": f"conformance ünïcødé ✓ 𝄞 {id_}",
            "nested": {"list": [1, "two", {"three": 3.25}], "empty": {}, "null": None},
            "micro": 0.000001,
        }
        metadata = {} if "metadata" in self.m.dropped_item_fields else fixture_metadata(n)
        return MemoryItem(
            id=id_,
            created_at=_FIXTURE_TIME + n,
            metadata=metadata,
            content=content,
            tags=["conformance", f"n-{n}", "conformance", "ünï ✓"],
        )

    # -- helpers --

    async def must_store(self, *items: Any) -> None:
        for it in items:
            try:
                await self.store.store(it)
            except Exception as e:  # noqa: BLE001
                self.fatal(f"setup: store of item {it.id} failed: {e!r}")

    async def must_retrieve(self, id_: uuid.UUID) -> Any:
        got, err = await _attempt(lambda: self.store.retrieve(id_))
        if err is not None or got is None:
            self.fatal(f"setup: retrieve after store returned ({got is not None}, {err!r})")
        return got

    async def poll_search(self, q: Any, done: Callable[[list], bool], store: Any = None) -> tuple[list, bool, BaseException | None]:
        store = store if store is not None else self.store
        deadline = time.monotonic() + self.opts.visibility_timeout
        while True:
            try:
                hits = await store.search(q)
            except Exception as e:  # noqa: BLE001 - an error is not "not yet visible"
                return [], False, e
            if done(hits):
                return hits, True, None
            if time.monotonic() >= deadline:
                return hits, False, None
            await asyncio.sleep(self.opts.poll_interval)

    async def visible(self, want: list) -> list:
        await self.harness("make_search_index_visible")
        hits, ok, err = await self.poll_search(MemoryQuery(limit=100), lambda h: _contains_all(h, want))
        if err is not None:
            self.fatal(f"setup: empty-query search failed after make_search_index_visible: {err!r}")
        if not ok:
            self.fatal(
                f"setup: {len(want)} stored items still not all found by an empty query "
                f"{self.opts.visibility_timeout}s after make_search_index_visible; got {_hit_ids(hits)}"
            )
        return hits

    async def request_count(self) -> int | None:
        if not self.has("backend_calls"):
            self.lack("backend_calls")
            return None
        try:
            return int(await self.h.backend_calls())
        except Exception as e:  # noqa: BLE001
            self.fatal(f"harness backend-call count failed: {e!r}")
        return None

    async def silent(self, f: Callable[[], Awaitable[Any]]) -> tuple[Any, BaseException | None, bool, bool]:
        """Run f; its result or error, and whether no call reached the backend (if observable)."""
        before = await self.request_count()
        res, err = await _attempt(f)
        if before is None:
            return res, err, False, False
        after = await self.request_count()
        return res, err, after == before, True

    async def expect_unavailable(self, which: str, s: Any, known: uuid.UUID) -> None:
        it = self.fixture(2)
        for what, call in (
            ("store", lambda: s.store(it)),
            ("retrieve", lambda: s.retrieve(known)),
            ("search", lambda: s.search(MemoryQuery(limit=DEFAULT_LIMIT))),
        ):
            try:
                got = await call()
            except MemoryAdapterUnavailable:
                continue
            except Exception as e:  # noqa: BLE001
                self.fail(f"{which}: {what} during the outage raised {e!r}, want MemoryAdapterUnavailable")
                continue
            self.fail(f"{which}: {what} during the outage returned {_short(str(got) if got is not None else None)}, want MemoryAdapterUnavailable")


def fixture_metadata(n: int) -> dict:
    return {
        "big": BIG_INT,
        "nested": {"list": [1, "two", {"three": 3.25}], "empty": {}},
        "uni": "ünïcødé ✓ 𝄞",
        "null": None,
        "bool": True,
        "seq": n,
    }


# ---- the cases ----


async def case_structural_surface(c: _CaseRun) -> None:
    msg = coherence_error(c.m)
    if msg is not None:
        c.fatal(f"manifest does not validate: {msg}")
    from ..models import ExternalMemoryStore, MemoryStore

    if not isinstance(c.store, MemoryStore) or not isinstance(c.store, ExternalMemoryStore):
        c.fatal("the store does not satisfy MemoryStore and ExternalMemoryStore")
    it = c.fixture(0)
    try:
        await c.store.store(it)
        await c.store.search(MemoryQuery(limit=1))
    except Exception:  # noqa: BLE001 - only the manifest's stability is observed here
        pass
    for i in range(2):
        later = c.store.manifest
        if later != c.m:
            c.fatal(f"manifest changed during the instance's lifetime (read {i + 2}): first {manifest_hash(c.m)}, later {manifest_hash(later)}")
    c.note(f"manifest {manifest_hash(c.m)} validates and is stable")


async def case_store_identifier(c: _CaseRun) -> None:
    for it in (c.fixture(1), c.fixture(2)):
        try:
            got = await c.store.store(it)
        except Exception as e:  # noqa: BLE001
            c.fatal(f"store failed: {e!r}")
        if got != it.id:
            c.fail(f"store returned {got}, want the item's own id {it.id}")
    if not c.has("identityless_write"):
        c.lack("identityless_write")
        c.note("identityless write response not observable (missing harness capability identityless_write)")
        return
    await c.harness("make_next_write_identityless")
    it = c.fixture(3)
    got, err = await _attempt(lambda: c.store.store(it))
    if not _is_adapter_error(err) or got is not None:
        c.fail(f"a write acknowledged without an identity returned ({got}, {err!r}), want MemoryAdapterError and no id")


async def case_direct_retrieval(c: _CaseRun) -> None:
    it = c.fixture(1)
    await c.must_store(it)
    try:
        got = await c.store.retrieve(it.id)
    except Exception as e:  # noqa: BLE001
        c.fatal(f"retrieve right after a successful store raised {e!r}, want the item")
    if got is None:
        c.fatal("retrieve right after a successful store returned None, want the item (retrieve must not wait for a search index)")
    for p in field_problems(it, got, "id", "content"):
        c.fail(f"retrieve: {p}")
    for p in field_problems(it, got, "tags"):
        c.fail(f"retrieve (tags are a direct-retrieval anchor at every fidelity): {p}")
    exact = c.m.retrieve_fidelity != "lossy"
    verified, skipped = ["id", "content", "tags"], []
    for f in ("created_at", "metadata"):
        if f not in c.m.native_item_fields:
            continue
        if exact:
            for p in field_problems(it, got, f):
                c.fail(f"retrieve at {c.m.retrieve_fidelity} fidelity with {f} native: {p}")
            verified.append(f)
        else:
            skipped.append(f)
    c.note(f"retrieve at {c.m.retrieve_fidelity} fidelity returns {', '.join(verified)} exactly")
    if skipped:
        c.note(f"native {', '.join(skipped)} not compared: lossy retrieve fidelity permits normalising them")


async def case_unknown_id(c: _CaseRun) -> None:
    unknown = uuid.uuid4()
    decoy = c.fixture(1)
    decoy.content = {"mentions": str(unknown)}
    await c.must_store(decoy)
    await c.visible([decoy.id])
    try:
        got = await c.store.retrieve(unknown)
    except Exception as e:  # noqa: BLE001
        c.fail(f"retrieve of an unknown id raised {e!r}, want None")
        return
    if got is not None:
        c.fail(f"retrieve of an unknown id returned an item (id {getattr(got, 'id', '?')}), want None (not an empty item, not a search result)")
    c.note("unknown id returns None")


async def case_wrong_native_kind(c: _CaseRun) -> None:
    c.need("wrong_kind_record", "the harness cannot plant a non-memory service record")
    id_ = await c.harness("make_wrong_kind_record")
    try:
        got = await c.store.retrieve(id_)
        if got is not None:
            c.fail(f"retrieve of a non-memory record returned an item, want None")
    except Exception as e:  # noqa: BLE001
        c.fail(f"retrieve of a non-memory record raised {e!r}, want None")
    anchor = c.fixture(1)
    await c.must_store(anchor)
    hits = await c.visible([anchor.id])
    if _find_hit(hits, id_) is not None:
        c.fail(f"search returned the non-memory record {id_} coerced into an item")
    c.note("non-memory record is absent from retrieve and search")


async def case_dropped_write_field(c: _CaseRun) -> None:
    it = c.fixture(1)
    it.metadata = {"probe": {"kept": [1, 2, 3]}, "seq": 1}
    _, err, silent, observable = await c.silent(lambda: c.store.store(it))
    if err is not None:
        if not _is_adapter_error(err):
            c.fatal(f"store of an item with non-default fields raised {err!r}, want success or MemoryAdapterError")
        if not c.m.dropped_item_fields:
            c.fatal(f"store rejected an item although no field is declared dropped: {err!r}")
        if observable and not silent:
            c.fatal(f"store rejected the item only after a call reached the backend (reject before transport): {err!r}")
        if not observable:
            c.note("rejection before transport not observable (missing harness capability backend_calls)")
        c.note(f"item with values in dropped fields {sorted(c.m.dropped_item_fields)} rejected before transport")
        return
    got = await c.must_retrieve(it.id)
    if "metadata" in c.m.dropped_item_fields:
        if got.metadata:
            c.fail(f"metadata is declared dropped but retrieve returned {len(got.metadata)} keys, want the default {{}}")
    else:
        for k in it.metadata:
            if k not in got.metadata:
                c.fail(f"metadata is not declared dropped but key {k!r} did not survive store/retrieve")
    delta = abs(float(got.created_at) - float(it.created_at))
    if "created_at" in c.m.dropped_item_fields:
        if same_double(got.created_at, it.created_at):
            c.fail(f"created_at is declared dropped but retrieve returned the stored value {it.created_at!r}")
    elif not delta <= 86400:
        c.fail(f"created_at is not declared dropped but retrieve returned {got.created_at!r} for a stored {it.created_at!r}")
    c.note(f"dropped fields {sorted(c.m.dropped_item_fields)} come back as defaults; other fields survive")


async def case_typed_search(c: _CaseRun) -> None:
    items = [c.fixture(1), c.fixture(2), c.fixture(3)]
    await c.must_store(*items)
    hits = await c.visible([it.id for it in items])
    ids = {it.id for it in items}
    for h in hits:
        if not isinstance(h, MemoryItem) or h.id not in ids:
            c.fail(f"search returned something that is not a stored item: {type(h).__name__} {getattr(h, 'id', '?')}")
    if c.m.search_fidelity != "lossy":
        fields = ["id", "content"] + (["created_at"] if "created_at" in c.m.native_item_fields else [])
        for it in items:
            h = _find_hit(hits, it.id)
            if h is not None:
                for p in field_problems(it, h, *fields):
                    c.fail(f"hit at {c.m.search_fidelity} search fidelity: {p}")
    if not c.has("responses_malformed"):
        c.lack("responses_malformed")
        c.note("malformed payload handling not observable (missing harness capability responses_malformed)")
        return
    await c.harness("make_responses_malformed")
    got, err = await _attempt(lambda: c.store.search(MemoryQuery(limit=100)))
    if not _is_adapter_error(err) or got:
        c.fail(f"search over malformed service payloads returned ({len(got or [])} hits, {err!r}), want MemoryAdapterError")
    got, err = await _attempt(lambda: c.store.retrieve(items[0].id))
    if not _is_adapter_error(err) or got is not None:
        c.fail(f"retrieve of a malformed service payload returned (item {got is not None}, {err!r}), want MemoryAdapterError")
    c.note(f"hits are stored items at {c.m.search_fidelity} fidelity; malformed payloads raise MemoryAdapterError")


async def case_limit(c: _CaseRun) -> None:
    items = [c.fixture(1), c.fixture(2), c.fixture(3)]
    await c.must_store(*items)
    await c.visible([it.id for it in items])
    for n in (1, 2, 3, 5):
        try:
            hits = await c.store.search(MemoryQuery(limit=n))
        except Exception as e:  # noqa: BLE001
            c.fail(f"search with limit {n} raised {e!r}")
            continue
        want = min(n, len(items))
        if len(hits) != want:
            c.fail(f"search with limit {n} over {len(items)} items returned {len(hits)} hits, want {want} (the first page up to the limit)")
    hits, err, silent, observable = await c.silent(lambda: c.store.search(MemoryQuery(limit=0)))
    if err is not None or hits != []:
        c.fail(f"search with limit 0 returned ({len(hits or [])} hits, {err!r}), want [] and no error")
    if observable and not silent:
        c.fail("search with limit 0 reached the backend; it must answer [] locally")
    hits, err, silent, observable = await c.silent(lambda: c.store.search(MemoryQuery(limit=-1)))
    if not isinstance(err, UnsupportedMemoryQuery) or tuple(err.rejected_keys) != ("limit",) or hits:
        c.fail(f"search with limit -1 returned ({len(hits or [])} hits, {err!r}), want UnsupportedMemoryQuery naming exactly [limit]")
    if observable and not silent:
        c.fail("search with limit -1 reached the backend before rejecting it")
    if not observable:
        c.note("transport silence for limit 0 and -1 not observable (missing harness capability backend_calls)")
    c.note("positive limits cap the first page; 0 is [] and -1 is UnsupportedMemoryQuery[limit]")


async def case_empty_query(c: _CaseRun) -> None:
    items = [c.fixture(1), c.fixture(2), c.fixture(3)]
    await c.must_store(*items)
    await c.harness("make_search_index_visible")
    want = [it.id for it in items]
    for q in (MemoryQuery(limit=DEFAULT_LIMIT), MemoryQuery(text="", tags=[], filters={}, limit=DEFAULT_LIMIT)):
        hits, ok, err = await c.poll_search(q, lambda h: len(h) == len(items) and _contains_all(h, want))
        if err is not None or not ok:
            c.fail(
                f"empty query (text {q.text is not None}) over a scope of {len(items)} items returned {_hit_ids(hits)} "
                f"(error {err!r}) within {c.opts.visibility_timeout}s after make_search_index_visible, want exactly those items"
            )
    c.note("an empty query returns the whole first page")


async def case_unsupported_filter(c: _CaseRun) -> None:
    a, b = "conformance-unsupported-a", "conformance-unsupported-b"
    while a in c.m.supported_filters or b in c.m.supported_filters:
        a, b = a + "x", b + "x"
    filters: dict = {b: 1, a: "x"}
    if c.m.supported_filters:
        filters[sorted(c.m.supported_filters)[0]] = "conformance"
    for limit, want in ((DEFAULT_LIMIT, (a, b)), (-1, (a, b, "limit"))):
        hits, err, silent, observable = await c.silent(lambda: c.store.search(MemoryQuery(filters=filters, limit=limit)))
        if not isinstance(err, UnsupportedMemoryQuery) or tuple(err.rejected_keys) != want or hits:
            c.fail(f"search with unsupported filters (limit {limit}) returned ({len(hits or [])} hits, {err!r}), want UnsupportedMemoryQuery naming exactly {list(want)}")
        if observable and not silent:
            c.fail(f"search with unsupported filters (limit {limit}) reached the backend; validation must precede it")
        if not observable:
            c.note("transport silence not observable (missing harness capability backend_calls)")
    c.note("unsupported keys are rejected together, sorted, before transport")


async def case_supported_filter(c: _CaseRun) -> None:
    if not c.m.supported_filters:
        c.not_applicable("the manifest declares no supported_filters")
    keys = sorted(c.m.supported_filters)
    if len(keys) > MAX_FILTER_KEYS_CHECKED:
        c.note(f"checked the first {MAX_FILTER_KEYS_CHECKED} of {len(keys)} supported keys")
        keys = keys[:MAX_FILTER_KEYS_CHECKED]
    for key in keys:
        match, other, absent = c.fixture(1), c.fixture(2), c.fixture(3)
        match.metadata = {key: 7}
        other.metadata = {key: 8}
        absent.metadata = {}
        await c.must_store(match, other, absent)
        await c.visible([match.id, other.id, absent.id])
        try:
            hits = await c.store.search(MemoryQuery(filters={key: 7}, limit=100))
            if len(hits) != 1 or hits[0].id != match.id:
                c.fail(f"filter {key}=7 returned {_hit_ids(hits)}, want exactly the one matching item {str(match.id)[:8]}")
        except Exception as e:  # noqa: BLE001
            c.fail(f"filter {key}=7: search raised {e!r}")
        await c.harness("reset")
        s = await c.harness("make_store")
        if s is None:
            c.fatal("harness make_store returned None")
        await _close_store(c.store)
        c.store = s
    c.note(f"supported keys {keys} narrow results exactly")


async def case_tag_projection(c: _CaseRun) -> None:
    it = c.fixture(1)
    await c.must_store(it)
    got = await c.must_retrieve(it.id)
    for p in field_problems(it, got, "tags"):
        c.fail(f"retrieve (tags are a required native anchor): {p}")
    hits = await c.visible([it.id])
    h = _find_hit(hits, it.id)
    tags = list(h.tags) if h is not None else []
    if c.m.search_returns_tags:
        if tags != list(it.tags):
            c.fail(f"search_returns_tags is true but the hit carries tags {tags!r}, want {list(it.tags)!r}")
    elif tags:
        c.fail(f"search_returns_tags is false but the hit carries tags {tags!r}; the manifest understates the adapter")
    c.note(f"tags exact on retrieve; hit tags agree with search_returns_tags={c.m.search_returns_tags}")


async def case_metadata_projection(c: _CaseRun) -> None:
    it = c.fixture(1)
    it.metadata = fixture_metadata(1)
    try:
        await c.store.store(it)
    except Exception as e:  # noqa: BLE001
        if "metadata" not in c.m.dropped_item_fields or not _is_adapter_error(e):
            c.fatal(f"store of an item with metadata raised {e!r}")
        it.metadata = {}
        await c.must_store(it)
    got = await c.must_retrieve(it.id)
    hits = await c.visible([it.id])
    h = _find_hit(hits, it.id)
    hit_meta = dict(h.metadata) if h is not None else {}
    if "metadata" in c.m.dropped_item_fields:
        if got.metadata:
            c.fail(f"metadata is declared dropped but retrieve returned {len(got.metadata)} keys")
        if hit_meta:
            c.fail(f"metadata is declared dropped but the search hit carries {len(hit_meta)} keys")
    elif c.m.preserves_metadata:
        for p in field_problems(it, got, "metadata"):
            c.fail(f"preserves_metadata is true but retrieve returned {p}")
        if c.m.search_fidelity != "lossy" and h is not None:
            for p in field_problems(it, h, "metadata"):
                c.fail(f"preserves_metadata is true and search fidelity is {c.m.search_fidelity} but the hit has {p}")
    else:
        c.note("metadata is native but not preserved: exactness is not claimed, so only the classification is checked")
    c.note(f"metadata agrees with preserves_metadata={c.m.preserves_metadata} and the classification")


async def case_consistency(c: _CaseRun) -> None:
    it = c.fixture(1)
    await c.must_store(it)
    want = [it.id]
    if c.m.search_consistency == "immediate":
        try:
            hits = await c.store.search(MemoryQuery(limit=100))
            if not _contains_all(hits, want):
                c.fail(f"search_consistency is immediate but a search right after a successful store returned {_hit_ids(hits)} without it")
        except Exception as e:  # noqa: BLE001
            c.fail(f"search_consistency is immediate but a search right after a successful store raised {e!r}")
        c.note("a stored item is searchable at once")
        return
    try:
        hits = await c.store.search(MemoryQuery(limit=100))
    except Exception as e:  # noqa: BLE001
        c.fatal(f"search before make_search_index_visible raised {e!r} (a miss is allowed, an error is not)")
    missed = not _contains_all(hits, want)
    await c.harness("make_search_index_visible")
    hits, ok, err = await c.poll_search(MemoryQuery(limit=100), lambda h: _contains_all(h, want))
    if err is not None or not ok:
        c.fail(f"search_consistency is eventual but the item was still not found {c.opts.visibility_timeout}s after make_search_index_visible (hits {_hit_ids(hits)}, error {err!r})")
    c.note(f"eventual: missed before index visibility: {missed}; found after")


async def case_transport_outage(c: _CaseRun) -> None:
    stored = c.fixture(1)
    await c.must_store(stored)
    await c.harness("make_transport_unavailable")
    await c.expect_unavailable("existing store", c.store, stored.id)
    s = None
    try:
        s = await c.h.make_store()
    except MemoryAdapterUnavailable:
        c.note("a store made during the outage failed at construction with MemoryAdapterUnavailable")
    except Exception as e:  # noqa: BLE001
        c.fail(f"making a store during the outage raised {e!r}, want MemoryAdapterUnavailable (or success and Unavailable on first use)")
    else:
        if s is None:
            c.fail("harness make_store returned None")
        else:
            await c.expect_unavailable("store created during the outage", s, stored.id)
    if s is not None:
        await _close_store(s)
    c.note("explicit calls raise MemoryAdapterUnavailable during the outage")


async def case_rejected_write(c: _CaseRun) -> None:
    c.need("write_rejected", "the harness cannot make the service reject a write")
    it = await c.harness("make_write_rejected")
    got, err = await _attempt(lambda: c.store.store(it))
    if not _is_adapter_error(err) or got is not None:
        c.fail(f"a write the service rejected returned ({got}, {err!r}), want MemoryAdapterError and no id")
    c.note("a rejected write raises MemoryAdapterError and returns no id")


async def case_manifest_accuracy(c: _CaseRun) -> None:
    if c.opts.accuracy is None:
        from .fake import run_accuracy_table

        summary = await run_accuracy_table()
    else:
        summary = await c.opts.accuracy()
    if not summary.ok():
        c.fail(
            f"the suite caught {summary.caught} of {summary.total} (knob, lie) pairs and passed {summary.truthful_passed} "
            f"of {summary.truthful} truthful configurations: {'; '.join(summary.problems)}"
        )
    c.note(
        f"the built-in fake table caught {summary.caught} of {summary.total} (knob, lie) pairs; "
        f"{summary.truthful_passed} of {summary.truthful} truthful configurations passed"
    )


CASES: dict[str, Callable[[_CaseRun], Awaitable[None]]] = {
    "structural-surface": case_structural_surface,
    "store-identifier": case_store_identifier,
    "direct-retrieval": case_direct_retrieval,
    "unknown-id": case_unknown_id,
    "wrong-native-kind": case_wrong_native_kind,
    "dropped-write-field": case_dropped_write_field,
    "typed-search": case_typed_search,
    "limit": case_limit,
    "empty-query": case_empty_query,
    "unsupported-filter": case_unsupported_filter,
    "supported-filter": case_supported_filter,
    "tag-projection": case_tag_projection,
    "metadata-projection": case_metadata_projection,
    "consistency": case_consistency,
    "transport-outage": case_transport_outage,
    "rejected-write": case_rejected_write,
    "manifest-accuracy": case_manifest_accuracy,
}
assert tuple(CASES) == CASE_IDS


async def _run_case(h: Any, case_id: str, opts: Options) -> CaseResult:
    cr = _CaseRun(h, opts)

    async def body() -> None:
        try:
            if case_id not in _READ_ONLY:
                await cr.harness("reset")
            s = await cr.harness("make_store")
            if s is None:
                cr.fatal("harness make_store returned None")
            cr.store = s
            cr.m = await _manifest_of(s)
            await CASES[case_id](cr)
        except _Abort:
            pass
        except Exception as e:  # noqa: BLE001 - a crash is a failure of the case, not of the run
            tb = traceback.extract_tb(e.__traceback__)[-3:]
            where = " <- ".join(f"{f.name}:{f.lineno}" for f in reversed(tb))
            cr.fail(f"case raised {e!r} ({where})")
        finally:
            if cr.store is not None:
                await _close_store(cr.store)

    start = time.monotonic()
    try:
        await asyncio.wait_for(body(), opts.case_timeout)
        res = cr.result()
    except asyncio.TimeoutError:
        res = CaseResult("", FAILED, f"case timed out after {opts.case_timeout}s", cr.missing)
    res.id = case_id
    res.duration_ms = int((time.monotonic() - start) * 1000)
    return res


# ---- the governance profiles (shared-notes/governance-v1.md §3) ----

PROFILE_IDS = ("read-only", "isolation", "retention", "quota")
PROFILE_TITLES = {
    "read-only": "A read-only token reads and never stores",
    "isolation": "Sub-scopes never see each other's items",
    "retention": "Retention removes items on time, never early",
    "quota": "Quotas refuse with typed problems and store nothing",
}
# The governance tokens' stores, as POST /harness/v1/governance-tokens names them.
GOVERNANCE_STORES = ("read_write", "read_only", "sub_scope_a", "sub_scope_b")
# A profile's stores that answer 429 rate_limited are tried again after Retry-After, up to
# this many seconds of waiting in all: a small claimed write rate slows a profile, never fails it.
GOVERNANCE_RETRY_BUDGET = 30.0
# Bounds of the limits a profile exercises (larger ones would make a run store too much).
MAX_EXERCISED_ITEMS = 200
MAX_EXERCISED_BYTES = 1 << 20
MAX_BYTES_STORES = 16
SEARCH_LIMIT = 50
# The names of the profiles' checks, filled as they run (Options.disabled_check skips one).
PROFILE_CHECKS: set[str] = set()


def problem_of(e: BaseException | None) -> ProblemError | None:
    """The server's problem behind a typed error (chained as its cause), if any."""
    cause = getattr(e, "__cause__", None)
    return cause if isinstance(cause, ProblemError) else None


def _is_problem(e: BaseException | None, status: int, type_: str) -> bool:
    p = problem_of(e)
    return _is_adapter_error(e) and p is not None and p.status == status and p.type == type_


def _describe_error(e: BaseException) -> str:
    p = problem_of(e)
    return f"{type(e).__name__} (problem {p.status} {p.type})" if p is not None else repr(e)


class _ProfileRun(_CaseRun):
    def __init__(self, h: Any, opts: Options, gov: Any) -> None:
        super().__init__(h, opts)
        self.gov = gov
        self.stores: dict[str, Any] = {}
        self.waited = 0.0
        self.rate_limited = 0

    def check(self, name: str) -> bool:
        """Whether the named check runs (registered for the test that disables each in turn)."""
        PROFILE_CHECKS.add(name)
        return self.opts.disabled_check != name

    async def begin(self, *caps: str) -> dict[str, Any]:
        """The profile's start: the capabilities it needs, a reset, the governance stores."""
        for cap in ("governance_tokens", *caps):
            self.need(cap, "the governance profiles need it")
        await self.harness("reset")
        got = await self.harness("make_governance_stores")
        if not isinstance(got, dict) or set(got) != set(GOVERNANCE_STORES) or any(s is None for s in got.values()):
            self.fatal(f"harness make_governance_stores returned {sorted(got) if isinstance(got, dict) else type(got).__name__}, want {list(GOVERNANCE_STORES)}")
        self.stores = got
        return got

    async def gov_store(self, s: Any, it: Any) -> BaseException | None:
        """Store it, trying again after each 429's Retry-After within the run's budget; the
        error of the last attempt, or None once stored."""
        while True:
            _, err = await _attempt(lambda: s.store(it))
            if err is None or not _is_problem(err, 429, "rate_limited"):
                return err
            self.rate_limited += 1
            wait = max(1, problem_of(err).retry_after or 1)  # type: ignore[union-attr]
            if self.waited + wait > GOVERNANCE_RETRY_BUDGET:
                return err
            self.waited += wait
            sleep = getattr(self.h, "sleep", None)  # a fake's virtual clock
            await (sleep(wait) if callable(sleep) else asyncio.sleep(wait))

    async def must_gov_store(self, what: str, s: Any, it: Any) -> None:
        err = await self.gov_store(s, it)
        if err is not None:
            self.fatal(f"setup: {what} failed: {_describe_error(err)}")

    async def sweep(self, after: int) -> None:
        await self.harness("retention_sweep", after)

    async def retrieve_equal(self, what: str, s: Any, it: Any) -> None:
        got, err = await _attempt(lambda: s.retrieve(it.id))
        if err is not None or got is None:
            self.fail(f"{what}: retrieve returned ({got is not None}, {err!r}), want the item")
            return
        for prob in field_problems(it, got, "id", "content", "tags"):
            self.fail(f"{what}: {prob}")

    async def retrieve_none(self, what: str, s: Any, id_: uuid.UUID) -> None:
        got, err = await _attempt(lambda: s.retrieve(id_))
        if err is not None or got is not None:
            self.fail(f"{what}: retrieve returned ({'an item' if got is not None else None}, {err!r}), want None")

    async def search_ids(self, what: str, s: Any, q: Any) -> set | None:
        hits, err = await _attempt(lambda: s.search(q))
        if err is not None:
            self.fail(f"{what}: search raised {err!r}")
            return None
        return {h.id for h in hits}

    def result(self) -> ProfileResult:  # type: ignore[override]
        if self.rate_limited:
            self.note(f"{self.rate_limited} stores answered 429 rate_limited and were tried again after Retry-After ({self.waited:g} s)")
        if self.problems:
            return ProfileResult("", FAILED, "", list(self.problems), list(self.notes), self.missing)
        if self.na:
            return ProfileResult("", NOT_APPLICABLE, self.na, [], list(self.notes), self.missing)
        return ProfileResult("", PASSED, "", [], list(self.notes), self.missing)


def gov_item(label: str) -> Any:
    """A profile's item: content whose text is unique (a text query finds it and nothing else)."""
    id_ = uuid.uuid4()
    return MemoryItem(id=id_, created_at=_FIXTURE_TIME, metadata={}, content={"text": f"governance {label} {id_}"}, tags=["governance", label])


async def profile_read_only(p: _ProfileRun) -> None:
    if not p.gov.read_only:
        p.not_applicable("the manifest does not claim read_only")
    s = await p.begin()
    rw, ro = s["read_write"], s["read_only"]
    x, y = gov_item("read-only-x"), gov_item("read-only-y")
    await p.must_gov_store("the read-write token's store of X in G", rw, x)
    await p.harness("make_search_index_visible")
    if p.check("read-only/reads"):
        await p.retrieve_equal("the read-only token's retrieve of X", ro, x)
        hits, ok, err = await p.poll_search(MemoryQuery(limit=SEARCH_LIMIT), lambda h: _contains_all(h, [x.id]), ro)
        if err is not None or not ok:
            p.fail(f"the read-only token's empty-query search returned {_hit_ids(hits)} (error {err!r}), want it to hold X")
    err = await p.gov_store(ro, y)
    if p.check("read-only/refused"):
        if err is None:
            p.fail("the read-only token's store of Y succeeded, want MemoryAdapterError with problem 403 forbidden")
        elif not _is_problem(err, 403, "forbidden"):
            p.fail(f"the read-only token's store of Y raised {_describe_error(err)}, want MemoryAdapterError with problem 403 forbidden")
    if p.check("read-only/nothing-stored"):
        await p.retrieve_none("after the read-only store, the read-write token's retrieve of Y", rw, y.id)
        await p.harness("make_search_index_visible")
        ids = await p.search_ids("the read-write token", rw, MemoryQuery(limit=SEARCH_LIMIT))
        if ids is not None and ids != {x.id}:
            p.fail(f"the read-write token's search holds {len(ids)} items, want exactly X (the one it stored)")
    p.note("a read-only token retrieves and searches G; its store is 403 forbidden and stores nothing")


async def profile_isolation(p: _ProfileRun) -> None:
    if not p.gov.isolation:
        p.not_applicable("the manifest does not claim isolation")
    s = await p.begin()
    a, b, g = s["sub_scope_a"], s["sub_scope_b"], s["read_write"]
    x = gov_item("isolation-x")
    await p.must_gov_store("sub-scope A's store of X", a, x)
    got, err = await _attempt(lambda: a.retrieve(x.id))
    if err is not None or got is None or field_problems(x, got, "id", "content", "tags"):
        p.fatal(f"setup: sub-scope A's retrieve of its own X returned ({got is not None}, {err!r}) or another item")
    await p.harness("make_search_index_visible")
    if p.check("isolation/hidden"):
        await p.retrieve_none("sub-scope B's retrieve of A's X", b, x.id)
        for q in (MemoryQuery(limit=SEARCH_LIMIT), MemoryQuery(text=x.content["text"], limit=SEARCH_LIMIT)):
            ids = await p.search_ids("sub-scope B", b, q)
            if ids is not None and x.id in ids:
                p.fail(f"sub-scope B's search (text {q.text is not None}) returned A's X")
        await p.retrieve_none("G's read-write retrieve of A's X", g, x.id)
    other = MemoryItem(id=x.id, created_at=_FIXTURE_TIME, metadata={}, content={"text": f"governance isolation-b {uuid.uuid4()}"}, tags=["governance", "isolation-b"])
    err = await p.gov_store(b, other)
    if p.check("isolation/own-id"):
        if err is not None:
            p.fail(f"sub-scope B's store under X's id raised {_describe_error(err)}, want success (B's own item)")
        await p.retrieve_equal("after B stored under X's id, A's retrieve of X", a, x)
    p.note("sub-scopes A and B and G see none of each other's items, even under one id")


async def profile_retention(p: _ProfileRun) -> None:
    r = p.gov.retention
    if r is None:
        p.not_applicable("the manifest does not claim retention")
    s = await p.begin("retention_sweep")
    rw, a = s["read_write"], s["sub_scope_a"]
    skipped = []
    if r.max_age_seconds > 0:
        x = gov_item("retention-x")
        await p.must_gov_store("the read-write token's store of X in G", rw, x)
        early = max(0, r.max_age_seconds - 60)
        await p.sweep(early)
        got, err = await _attempt(lambda: rw.retrieve(x.id))
        if p.check("retention/not-early") and (err is not None or got is None):
            what = f"raised {err!r}" if err is not None else "returned None"
            p.fail(f"a sweep {early} s after the store (max_age_seconds {r.max_age_seconds}): the retrieve of X {what}, want X: removed early")
        late = r.max_age_seconds + r.sweep_period_seconds + 1
        await p.sweep(late)
        if p.check("retention/removed"):
            await p.retrieve_none(f"a sweep {late} s after the store: X", rw, x.id)
            await p.harness("make_search_index_visible")
            ids = await p.search_ids(f"a sweep {late} s after the store", rw, MemoryQuery(limit=SEARCH_LIMIT))
            if ids is not None and x.id in ids:
                p.fail(f"a sweep {late} s after the store left X in the empty-query search")
        p.note(f"max_age_seconds {r.max_age_seconds}: kept {early} s, removed {late} s after the store")
    m = r.max_items
    q = p.gov.quota
    if m > 0 and (m > MAX_EXERCISED_ITEMS or (q is not None and 0 < q.max_items <= m)):
        masked = f" (masked by the quota's max_items {q.max_items})" if m <= MAX_EXERCISED_ITEMS else f" (over {MAX_EXERCISED_ITEMS})"
        skipped.append(f"max_items {m} not exercised{masked}")
        p.note(skipped[-1])
    elif m > 0:
        items = [gov_item(f"retention-{i}") for i in range(m + 1)]
        for it in items:  # one by one: the store order is the age order
            await p.must_gov_store("sub-scope A's store", a, it)
        await p.sweep(0)
        if p.check("retention/max-items"):
            await p.retrieve_none(f"max_items {m}: after {m + 1} stores and a sweep, the first", a, items[0].id)
            for it in items[1:]:
                await p.retrieve_equal(f"max_items {m}: after {m + 1} stores and a sweep, one of the newest", a, it)
        p.note(f"max_items {m}: the oldest of {m + 1} removed, the newest {m} kept")
    if r.max_age_seconds == 0 and (m == 0 or skipped):
        p.not_applicable("; ".join(skipped) or "the retention claim limits nothing")


async def profile_quota(p: _ProfileRun) -> None:
    q = p.gov.quota
    if q is None:
        p.not_applicable("the manifest does not claim quota")
    s = await p.begin()
    rw, a, b = s["read_write"], s["sub_scope_a"], s["sub_scope_b"]
    skipped: list[str] = []
    exercised = 0
    m = q.max_items
    if 1 <= m <= MAX_EXERCISED_ITEMS:
        exercised += 1
        items = [gov_item(f"quota-{i}") for i in range(m)]
        errs = [await p.gov_store(a, it) for it in items]
        over = gov_item("quota-over")
        err = await p.gov_store(a, over)
        if p.check("quota/items"):
            for i, e in enumerate(errs):
                if e is not None:
                    p.fail(f"max_items {m}: store {i + 1} of {m} in sub-scope A raised {_describe_error(e)}, want success")
            if err is None:
                p.fail(f"max_items {m}: store {m + 1} in sub-scope A succeeded, want problem 507 quota_exceeded")
            elif not _is_problem(err, 507, "quota_exceeded"):
                p.fail(f"max_items {m}: store {m + 1} in sub-scope A raised {_describe_error(err)}, want problem 507 quota_exceeded")
            for it, e in zip(items, errs):
                if e is None:
                    await p.retrieve_equal(f"max_items {m}: an acknowledged item after the refusal", a, it)
        p.note(f"max_items {m}: store {m + 1} refused 507 quota_exceeded, the {m} kept")
    elif m:
        skipped.append(f"max_items {m} not exercised (outside 1..{MAX_EXERCISED_ITEMS})")
    nbytes = q.max_bytes
    if 1 <= nbytes <= MAX_EXERCISED_BYTES:
        exercised += 1
        size = max(1, nbytes // 8)
        acked, refusal = [], None
        for i in range(MAX_BYTES_STORES):
            it = MemoryItem(id=uuid.uuid4(), created_at=_FIXTURE_TIME, metadata={}, content="b" * size, tags=[])
            err = await p.gov_store(b, it)
            if err is not None:
                refusal = err
                break
            acked.append(it)
        if p.check("quota/bytes"):
            if refusal is None:
                p.fail(f"max_bytes {nbytes}: {MAX_BYTES_STORES} stores of a {size}-character string in sub-scope B all succeeded, want a 507 quota_exceeded")
            elif not _is_problem(refusal, 507, "quota_exceeded"):
                p.fail(f"max_bytes {nbytes}: store {len(acked) + 1} in sub-scope B raised {_describe_error(refusal)}, want problem 507 quota_exceeded")
            for it in acked:
                await p.retrieve_equal(f"max_bytes {nbytes}: an acknowledged item", b, it)
        p.note(f"max_bytes {nbytes}: {len(acked)} stores of {size} characters kept, the next refused")
    elif nbytes:
        skipped.append(f"max_bytes {nbytes} not exercised (outside 1..{MAX_EXERCISED_BYTES})")
    w, u = q.writes_per_second, q.write_burst
    n = 2 * u + 2
    if w > 0 and 1 <= u <= MAX_EXERCISED_ITEMS and not (0 < m < n):
        # Up to twice the burst, as fast as one client can, until the first refusal. A
        # truthful bucket admits at most burst + rate x elapsed of them (and one for the
        # clock's grain); a run whose stores came slower than the bucket refills proves
        # nothing either way, and says so.
        results = []
        start = time.monotonic()
        for i in range(n):
            it = gov_item(f"quota-rate-{i}")
            err = (await _attempt(lambda: rw.store(it)))[1]
            results.append((it, err))
            if err is not None:
                break
        elapsed = time.monotonic() - start
        acked = [it for it, e in results if e is None]
        admissible = u + w * elapsed + 1
        if len(acked) < len(results) or len(acked) > admissible:
            exercised += 1
        if p.check("quota/rate"):
            limited = [e for _, e in results if _is_problem(e, 429, "rate_limited")]
            refused = [e for _, e in results if e is not None]
            if refused and not limited:
                p.fail(f"write rate {w}/s, burst {u}: store {len(acked) + 1} raised {_describe_error(refused[0])}, want problem 429 rate_limited")
            elif not refused and len(acked) > admissible:
                p.fail(f"write rate {w}/s, burst {u}: {len(acked)} stores in {elapsed:.3f} s were all acknowledged; the bucket admits at most {admissible:.0f}")
            elif not refused:
                p.note(f"write rate {w}/s not exercised: {len(acked)} stores took {elapsed:.3f} s, as slow as the bucket refills")
            for e in limited:
                ra = problem_of(e).retry_after  # type: ignore[union-attr]
                if ra is None or ra < 1:
                    p.fail(f"write rate {w}/s: a 429 carried Retry-After {ra!r}, want whole seconds >= 1")
                    break
            for it, e in results:
                if e is None:
                    await p.retrieve_equal(f"write rate {w}/s: an acknowledged store", rw, it)
                else:
                    await p.retrieve_none(f"write rate {w}/s: a refused store ({_describe_error(e)})", rw, it.id)
        p.note(f"write rate {w}/s, burst {u}: {len(acked)} of {len(results)} immediate stores acknowledged")
    elif w > 0:
        masked = f" (masked by max_items {m})" if 1 <= u <= MAX_EXERCISED_ITEMS else f" (burst outside 1..{MAX_EXERCISED_ITEMS})"
        skipped.append(f"write rate {w}/s with burst {u} not exercised{masked}")
    for n in skipped:
        p.note(n)
    if not exercised:
        p.not_applicable("; ".join(skipped) or "the quota claim limits nothing")


PROFILES: dict[str, Callable[[_ProfileRun], Awaitable[None]]] = {
    "read-only": profile_read_only,
    "isolation": profile_isolation,
    "retention": profile_retention,
    "quota": profile_quota,
}
assert tuple(PROFILES) == PROFILE_IDS


async def _run_profile(h: Any, profile_id: str, gov: Any, opts: Options) -> ProfileResult:
    p = _ProfileRun(h, opts, gov)

    async def body() -> None:
        try:
            if gov is None:
                p.not_applicable("the manifest claims no governance/v1")
            await PROFILES[profile_id](p)
        except _Abort:
            pass
        except Exception as e:  # noqa: BLE001 - a crash fails the profile, not the run
            tb = traceback.extract_tb(e.__traceback__)[-3:]
            where = " <- ".join(f"{f.name}:{f.lineno}" for f in reversed(tb))
            p.fail(f"profile raised {e!r} ({where})")
        finally:
            for st in p.stores.values():
                await _close_store(st)

    start = time.monotonic()
    try:
        await asyncio.wait_for(body(), opts.profile_timeout)
        res = p.result()
    except asyncio.TimeoutError:
        res = ProfileResult("", FAILED, "", [f"profile timed out after {opts.profile_timeout}s", *p.problems], list(p.notes), p.missing)
    res.id = profile_id
    res.duration_ms = int((time.monotonic() - start) * 1000)
    return res


async def _manifest_of(store: Any) -> Any:
    loader = getattr(store, "load_manifest", None)
    if callable(loader):
        return await loader()
    return store.manifest


async def run(h: Any, opts: Options | None = None, progress: Callable[[str], None] | None = None) -> Report:
    """Run the matrix's cases, then the governance profiles, against harness ``h``; the caller
    owns (and closes) the harness."""
    opts = opts or Options()
    r = Report()
    try:
        try:
            await h.reset()
        except MissingCapability:
            pass
        probe = await h.make_store()
        m = await _manifest_of(probe)
        await _close_store(probe)
    except Exception as e:  # noqa: BLE001
        r.error = f"making a probe store failed: {e!r}"
        r.cases = [CaseResult(cid, FAILED, "not run: " + r.error) for cid in CASE_IDS]
        r.profiles = [ProfileResult(pid, FAILED, "", ["not run: " + r.error]) for pid in PROFILE_IDS]
        r.finish()
        return r
    r.adapter_id = m.adapter
    r.manifest_hash = manifest_hash(m)
    bad = coherence_error(m)
    for cid in CASE_IDS:
        if bad is not None and cid != "structural-surface":
            res = CaseResult(cid, FAILED, "not run: the manifest does not validate (see structural-surface): " + bad)
        elif cid == "manifest-accuracy" and opts.nested:
            res = CaseResult(cid, NOT_APPLICABLE, "nested run inside the manifest-accuracy table")
        else:
            res = await _run_case(h, cid, opts)
        r.cases.append(res)
        if progress is not None:
            progress(f"{res.id:<20} {res.outcome:<13} {_one_line(res.message)[:160]}")
    gov = governance_of(m)
    for pid in PROFILE_IDS:
        if bad is not None:
            pres = ProfileResult(pid, FAILED, "", ["not run: the manifest does not validate (see structural-surface): " + bad])
        else:
            pres = await _run_profile(h, pid, gov, opts)
        r.profiles.append(pres)
        if progress is not None:
            progress(f"profile {pid:<12} {pres.outcome:<13} {_one_line(pres.reason or '; '.join(pres.failures))[:160]}")
    r.finish()
    return r
