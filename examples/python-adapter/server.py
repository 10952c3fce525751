#!/usr/bin/env python3
"""A small memory adapter server in Python, standard library only.

It implements the memory adapter wire (api/memory/openapi.yaml: /v1 and the health routes)
over an in-memory store, and the conformance harness protocol (/harness/v1) on a second
listener, so that `memory-adapter conformance --target` can judge it. It is an example of an
adapter written independently of the Go code, not a production server: its store lives in
one process and is lost at exit.

    python3 server.py --listen 127.0.0.1:0 --token-file token \
        --harness-listen 127.0.0.1:0 --harness-token-file harness-token

prints LISTEN=host:port and HARNESS_LISTEN=host:port once it serves.

--lie NAME switches on one planted lie (see LIES): the conformance suite must catch each.

--governance JSON claims the manifest extension governance/v1 (shared-notes/governance-v1.md)
with that object, e.g. '{"read_only":true,"isolation":true,"quota":{"max_items":6,"max_bytes":0,
"writes_per_second":0,"write_burst":0}}', publishes it in the manifest and enforces it: see
"Governance" in README.md.
"""

import argparse
import datetime
import hashlib
import hmac
import json
import math
import os
import platform
import re
import secrets
import ssl
import sys
import threading
import time
import uuid
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ADAPTER_VERSION = "python-example 0.1.0"
MAX_BODY = 16 << 20
MAX_DEPTH = 32
MAX_LIMIT = 1_000_000
DEFAULT_LIMIT = 20
ITEM_FIELDS = ["content", "created_at", "id", "metadata", "tags"]

# Every planted lie, with what it does. The Go test (conformance/wire_accuracy_test.go) names
# the case that must catch each.
LIES = {
    "nested-metadata-dropped": "metadata values that are objects or arrays are dropped on store",
    "created-at-seconds": "created_at is rounded down to whole seconds on store",
    "tags-deduplicated": "duplicate tags are removed on store",
    "filter-ignored": "a supported filter is ignored by search",
    "empty-on-outage": "search answers [] instead of unavailable while the backend is cut",
    "limit-ignored": "search returns every match whatever the limit",
    "different-id": "store acknowledges a fresh id instead of the item's own",
    "retrieve-via-text": "retrieve is a text search for the id",
    "unsupported-filter-ignored": "filter keys outside the manifest are ignored",
    "first-rejected-key-only": "unsupported_query names only the first rejected key",
    "unsorted-rejected-keys": "unsupported_query names the rejected keys in reverse order",
    "negative-limit-accepted": "a negative limit is a Python slice",
    "negative-limit-generic-error": "a negative limit is answered 400 invalid_request",
    "negative-limit-after-backend": "a negative limit is rejected only after a backend call",
    "unsupported-after-backend": "unsupported filter keys are rejected only after a backend call",
    "limit-zero-items": "limit 0 returns the first page from a cache",
    "limit-zero-backend-call": "limit 0 is answered [] after a backend call",
    "manifest-changes": "the manifest gains a supported filter after a few reads",
    "wrong-manifest-hash": "the evidence hashes a non-canonical serialisation of the manifest",
    "no-token-check": "data routes accept any or no token",
    "string-content-truncated": "plain-string content is cut to 64 characters in search hits",
    "duplicate-id-differs": "a second store under an id keeps both records while Overwrite is declared",
    "version-drift": "the service version moves (an upgrade) after the run's first evidence reads, the manifest still valid",
    "malformed-answered-200": "a malformed backend answer to a read is passed on as a 200 whose body does not decode",
    "rejected-write-400": "a write the backend rejected is answered 400 invalid_request instead of 502 adapter_error",
    # governance/v1 (with --governance): each is caught by its conformance profile.
    "read-only-writes": "a read-only token's store succeeds and stores the item",
    "sub-scope-leak": "every sub-scope shares one store",
    "retention-early": "a retention sweep removes items max_age_seconds early (its clock moves by after + max_age)",
    "retention-ignored": "a retention sweep removes nothing",
    "quota-ignored": "a store over the max_items quota is accepted",
}


class Unavailable(Exception):
    """The backend cannot be reached."""


class Rejected(Exception):
    """The backend refused the operation or answered something malformed."""


class BadRequest(Exception):
    """The request does not follow the wire."""


class Forbidden(Exception):
    """The token's grant does not allow the operation (a read-only token's store)."""


class QuotaExceeded(Exception):
    """A store would take a governed scope over its max_items or max_bytes quota."""


class RateLimited(Exception):
    """A store beyond a governed scope's write rate; retry_after is whole seconds, at least 1."""

    def __init__(self, detail, retry_after):
        super().__init__(detail)
        self.retry_after = retry_after


# ---- JSON, exactly ----

def reject_constant(name):
    raise ValueError("not JSON: " + name)


def loads(data):
    """Decodes JSON text keeping every number exact (ints as int, others as Decimal)."""
    try:
        text = data.decode("utf-8")
        return json.loads(text, parse_float=Decimal, parse_constant=reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise BadRequest("the body is not valid JSON: %s" % e) from None


def dumps(v):
    """Encodes a decoded value back to compact JSON without changing any number."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, Decimal)):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(dumps(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + dumps(x) for k, x in v.items()) + "}"
    raise TypeError("cannot encode %r" % type(v))


def depth(v):
    if isinstance(v, list):
        return 1 + max((depth(x) for x in v), default=0)
    if isinstance(v, dict):
        return 1 + max((depth(x) for x in v.values()), default=0)
    return 0


def is_number(v):
    return isinstance(v, (int, Decimal)) and not isinstance(v, bool)


def json_equal(a, b):
    """JSON equality: numbers by value, true is not 1, objects by members."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if is_number(a) and is_number(b):
        return Decimal(a) == Decimal(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


# ---- the manifest and its hash ----

LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def canonical(manifest):
    """The manifest's canonical string (conformance/README.md, "The manifest hash")."""
    def text(s):
        # json.loads joins escaped surrogate pairs; what is left is unpaired: U+FFFD.
        return LONE_SURROGATE.sub("\ufffd", s)

    def norm(lst):
        return sorted({text(x) for x in lst}, key=lambda s: s.encode("utf-8"))
    m = {
        "adapter": text(manifest["adapter"]),
        "native_item_fields": norm(manifest["native_item_fields"]),
        "dropped_item_fields": norm(manifest["dropped_item_fields"]),
        "supported_filters": norm(manifest["supported_filters"]),
        "search_consistency": manifest["search_consistency"],
        "retrieve_fidelity": manifest["retrieve_fidelity"],
        "search_fidelity": manifest["search_fidelity"],
        "search_returns_tags": manifest["search_returns_tags"],
        "preserves_metadata": manifest["preserves_metadata"],
    }
    gov = normalize_governance((manifest.get("extensions") or {}).get(GOVERNANCE))
    if gov is not None:
        m["extensions"] = {GOVERNANCE: gov}
    s = json.dumps(m, ensure_ascii=False, separators=(",", ":"))
    # Go's HTML-safe escaping; these characters occur only inside strings.
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        s = s.replace(ch, esc)
    return s


def manifest_hash(manifest):
    return "sha256:" + hashlib.sha256(canonical(manifest).encode("utf-8")).hexdigest()


# ---- governance/v1: the claim (shared-notes/governance-v1.md §1) ----

GOVERNANCE = "governance/v1"
RETENTION_MEMBERS = ("max_age_seconds", "max_items", "sweep_period_seconds")
QUOTA_MEMBERS = ("max_items", "max_bytes", "writes_per_second", "write_burst")
# The Go side's bounds (api/memory/extensions.go): seconds at most 100 years of 366 days,
# counts at most 2^50.
MAX_GOVERNANCE_SECONDS = 100 * 366 * 24 * 3600
MAX_GOVERNANCE_INT = 1 << 50
MAX_GOVERNANCE_TEXT = 4096
DEFAULT_SWEEP_PERIOD = 60
# after_seconds of POST /harness/v1/retention-sweep: at most a longest max age plus a longest
# sweep period and a second (openapi.yaml), which is all a suite sends.
MAX_SWEEP_AFTER = 2 * MAX_GOVERNANCE_SECONDS + 1


def governance_object(where, v, members, required):
    if not isinstance(v, dict):
        raise ValueError("%s: want a JSON object" % where)
    unknown, missing = sorted(set(v) - set(members)), sorted(set(required) - set(v))
    if unknown or missing:
        raise ValueError("%s: unknown members %s, missing %s" % (where, unknown[:8], missing))
    return v


def governance_int(where, v):
    # bool is an int in Python and the JSON decoder gives Decimal for 1.0 or 1e3: the claim
    # has no floats, so only a plain int is taken.
    bound = MAX_GOVERNANCE_SECONDS if where.endswith("_seconds") else MAX_GOVERNANCE_INT
    if type(v) is not int or v < 0 or v > bound:
        raise ValueError("%s: want an integer from 0 to %d" % (where, bound))
    return v


def parse_governance(v):
    """The governance/v1 object, checked strictly (unknown or missing members, wrong kinds,
    floats and negatives refused: ValueError), in the contract's member order."""
    governance_object(GOVERNANCE, v, ("read_only", "isolation", "retention", "quota"), ("read_only", "isolation"))
    out = {}
    for k in ("read_only", "isolation"):
        if not isinstance(v[k], bool):
            raise ValueError("%s.%s: want true or false" % (GOVERNANCE, k))
        out[k] = v[k]
    for part, members in (("retention", RETENTION_MEMBERS), ("quota", QUOTA_MEMBERS)):
        if part in v:
            where = GOVERNANCE + "." + part
            o = governance_object(where, v[part], members, members)
            out[part] = {k: governance_int(where + "." + k, o[k]) for k in members}
    return out


def normalize_governance(g):
    """The normalized claim, or None when nothing is left: a retention whose max age and max
    items are both 0 and a quota of zeros are dropped, and then a claim with neither, nor
    read_only, nor isolation. The manifest publishes (and the hash covers) this form only."""
    if not g:
        return None
    out = {"read_only": g["read_only"], "isolation": g["isolation"]}
    r, q = g.get("retention"), g.get("quota")
    if r and (r["max_age_seconds"] or r["max_items"]):
        out["retention"] = {k: r[k] for k in RETENTION_MEMBERS}
    if q and any(q[k] for k in QUOTA_MEMBERS):
        out["quota"] = {k: q[k] for k in QUOTA_MEMBERS}
    if not out["read_only"] and not out["isolation"] and len(out) == 2:
        return None
    return out


def item_size(item):
    """What an item counts against max_bytes: its content's JSON, each metadata key and value
    JSON, and each tag plus 3 bytes (the Go server's memory.ItemSize), in UTF-8 bytes."""
    n = len(dumps(item["content"]).encode("utf-8"))
    for k, x in item["metadata"].items():
        n += len(k.encode("utf-8")) + len(dumps(x).encode("utf-8"))
    for t in item["tags"]:
        n += len(t.encode("utf-8")) + 3
    return n


class Limits:
    """A governed scope's retention, quota and write-rate state. Its methods run under the
    scope's Backend lock, so an admission and the store it admits are one step."""

    def __init__(self, claim, lie, clock=time.time):
        self.lie, self.clock = lie, clock
        self.retention = claim.get("retention")
        self.quota = claim.get("quota") or {k: 0 for k in QUOTA_MEMBERS}
        rate = self.quota["writes_per_second"]
        # The bucket holds write_burst tokens (0: one second's worth of the rate, at least 1).
        self.burst = self.quota["write_burst"] or max(1, rate)
        self.reset()

    def reset(self):
        self.tokens, self.filled = float(self.burst), self.clock()

    def admit(self, records, item):
        """Raises RateLimited or QuotaExceeded when the store of item may not happen; a
        refused store changes nothing (nor does a store the quota refuses take a token)."""
        rate = self.quota["writes_per_second"]
        if rate:
            now = self.clock()
            self.tokens = min(float(self.burst), self.tokens + (now - self.filled) * rate)
            self.filled = now
            if self.tokens < 1:
                wait = max(1, math.ceil((1 - self.tokens) / rate))
                raise RateLimited("over the write rate of %d stores per second (burst %d)" % (rate, self.burst), wait)
        replaced = [r for r in records if r["item"]["id"] == item["id"]]
        max_items, max_bytes = self.quota["max_items"], self.quota["max_bytes"]
        if max_items and self.lie != "quota-ignored" and len(records) - len(replaced) + 1 > max_items:
            raise QuotaExceeded("the scope holds %d items, its quota is %d" % (len(records), max_items))
        if max_bytes:
            used = sum(r["size"] for r in records) - sum(r["size"] for r in replaced)
            if used + item_size(item) > max_bytes:
                raise QuotaExceeded("the store would take the scope to %d bytes, its quota is %d" % (used + item_size(item), max_bytes))
        if rate:
            self.tokens -= 1

    def sweep(self, records, after=0):
        """The records retention keeps, the sweep's clock moved forward by after seconds. Age is
        the server's store time (stored_at), never the client's created_at."""
        r = self.retention
        if r is None or self.lie == "retention-ignored":
            return records
        now = self.clock() + after
        if r["max_age_seconds"]:
            if self.lie == "retention-early":
                now += r["max_age_seconds"]
            # Stored at or before now - max age: never before max age has passed.
            records = [x for x in records if x["stored_at"] > now - r["max_age_seconds"]]
        if r["max_items"] and len(records) > r["max_items"]:
            # Records are in store order (a new store of an id moves it last): keep the newest.
            records = records[-r["max_items"]:]
        return records


# ---- the backend: an in-memory store of native records ----

class Backend:
    """The service behind the adapter: native records of several kinds, a call counter and
    the faults the harness plants."""

    def __init__(self, keep_duplicates, limits=None):
        self.lock = threading.Lock()
        self.keep_duplicates = keep_duplicates
        # A governed sub-scope's Limits (retention, quota, write rate); None: ungoverned.
        self.limits = limits
        self.calls = 0
        self.reset()

    def reset(self):
        self.records = []  # in store order: {"kind": ..., "item": {...}}
        self.cut = False
        self.malformed = False
        self.identityless = False
        self.rejected = set()
        if self.limits is not None:
            self.limits.reset()

    def _enter(self):
        self.calls += 1
        if self.cut:
            raise Unavailable("backend unreachable (cut by the harness)")

    def store(self, item):
        with self.lock:
            self._enter()
            if item["id"] in self.rejected:
                raise Rejected("the backend rejected the write (planted by the harness)")
            rec = {"kind": "memory", "item": item}
            if self.limits is not None:
                self.limits.admit(self.records, item)
                rec["stored_at"], rec["size"] = self.limits.clock(), item_size(item)
            if not self.keep_duplicates:
                self.records = [r for r in self.records if r["item"]["id"] != item["id"]]
            self.records.append(rec)
            if self.identityless:
                self.identityless = False
                return None
            return item["id"]

    def get(self, item_id):
        with self.lock:
            self._enter()
            for r in reversed(self.records):
                if r["item"]["id"] == item_id:
                    return self._out(r)
            return None

    def scan(self):
        with self.lock:
            self._enter()
            return [self._out(r) for r in self.records]

    def sweep(self, after=0):
        """Retention over this scope now (or as if after seconds had passed); the count removed."""
        with self.lock:
            if self.limits is None:
                return 0
            kept = self.limits.sweep(self.records, after)
            removed = len(self.records) - len(kept)
            self.records = kept
            return removed

    def cached(self):
        """The records without a counted call (only the limit-zero-items lie reads this)."""
        with self.lock:
            return [self._out(r) for r in self.records]

    def _out(self, r):
        if self.malformed:
            return {"kind": "memory", "item": {"id": r["item"]["id"]}}
        return r


# ---- the adapter: wire rules over the backend ----

class Adapter:
    def __init__(self, adapter_id, lie, governance=None):
        self.lie = lie
        self.backend = Backend(keep_duplicates=(lie == "duplicate-id-differs"))
        # The normalized governance/v1 claim, or None. Retention and quotas govern the
        # sub-scopes (the harness's G, A and B and the token file's); the scope itself is the
        # matrix's disposable scope and stays ungoverned, as the contract allows.
        self.governance = normalize_governance(governance)
        self.subscopes = {}
        self.subscopes_lock = threading.Lock()
        self.minted = None  # the harness's governance tokens: {sha256 digest: Grant}
        self.manifest = {
            "adapter": adapter_id,
            "native_item_fields": list(ITEM_FIELDS),
            "dropped_item_fields": [],
            "supported_filters": ["branch_id", "source"],
            "search_consistency": "immediate",
            "retrieve_fidelity": "full",
            "search_fidelity": "full",
            "search_returns_tags": True,
            "preserves_metadata": True,
        }
        if self.governance is not None:
            self.manifest["extensions"] = {GOVERNANCE: self.governance}
        self.manifest_reads = 0
        self.evidence_reads = 0
        self.lock = threading.Lock()

    def subscope(self, name):
        """The Backend of a sub-scope (made on first use), governed by the claim. Names come from
        grants only (the token file's, at most MAX_TOKENS, and the harness's three), so the map
        stays small; MAX_SUBSCOPES bounds it even across many token rotations."""
        if self.lie == "sub-scope-leak":
            name = ("leak",)
        with self.subscopes_lock:
            b = self.subscopes.get(name)
            if b is None:
                if len(self.subscopes) >= MAX_SUBSCOPES:
                    raise Unavailable("too many sub-scopes in this process")
                limits = Limits(self.governance, self.lie) if self.governance is not None else None
                b = self.subscopes[name] = Backend(keep_duplicates=self.backend.keep_duplicates, limits=limits)
            return b

    def harness_subscopes(self):
        return [self.subscope(("harness", n)) for n in ("g", "a", "b")]

    def governance_tokens(self):
        """The four data tokens of POST /harness/v1/governance-tokens, made once and valid for
        the process's life: read-write and read-only in G, read-write in A and in B."""
        with self.subscopes_lock:
            if self.minted is None:
                grants = {"read_write": (False, ("harness", "g")), "read_only": (True, ("harness", "g")),
                          "sub_scope_a": (False, ("harness", "a")), "sub_scope_b": (False, ("harness", "b"))}
                tokens = {k: secrets.token_urlsafe(32) for k in grants}
                self.minted = (tokens, [Grant(hashlib.sha256(tokens[k].encode()).digest(), ro, sub)
                                        for k, (ro, sub) in grants.items()])
            return self.minted[0]

    def minted_grant(self, presented):
        with self.subscopes_lock:
            minted = self.minted
        return match_grant(presented, minted[1]) if minted else None

    def sweep_all(self, after=0):
        with self.subscopes_lock:
            scopes = list(self.subscopes.values())
        for b in scopes:
            b.sweep(after)

    def sweeper(self):
        """Runs the retention sweep of every sub-scope each sweep period, for the process's life."""
        period = self.governance["retention"]["sweep_period_seconds"] or DEFAULT_SWEEP_PERIOD
        while True:
            time.sleep(period)
            self.sweep_all()

    def current_manifest(self, count=True):
        with self.lock:
            if count:
                self.manifest_reads += 1
            m = dict(self.manifest)
            if self.lie == "manifest-changes" and self.manifest_reads > 6:
                m["supported_filters"] = ["branch_id", "kind", "source"]
            return m

    def evidence(self):
        m = self.current_manifest(count=False)
        h = manifest_hash(m)
        with self.lock:
            self.evidence_reads += 1
            reads = self.evidence_reads
        service_version = "python " + platform.python_version()
        if self.lie == "version-drift" and reads > 2:
            service_version += " (upgraded)"
        if self.lie == "wrong-manifest-hash":
            h = "sha256:" + hashlib.sha256(json.dumps(m).encode("utf-8")).hexdigest()
        return {
            "adapter": m["adapter"],
            "adapter_version": ADAPTER_VERSION,
            "manifest_hash": h,
            "service_version": service_version,
            "initial_service_version": "python " + platform.python_version(),
            "probes": [{"name": "reachable", "ok": True}],
            "index_lag": None,
            "manifest_valid": True,
            "reason": "",
            "observed_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }

    @staticmethod
    def parse_id(s):
        try:
            u = uuid.UUID(s)
        except (ValueError, AttributeError, TypeError):
            raise BadRequest("invalid UUID") from None
        if len(s) != 36:
            raise BadRequest("invalid UUID")
        return str(u)

    def decode_item(self, v):
        if not isinstance(v, dict):
            raise BadRequest("the body must be one JSON object")
        extra = set(v) - set(ITEM_FIELDS)
        if extra:
            raise BadRequest("unknown fields: " + ", ".join(sorted(extra)))
        if "id" not in v or not isinstance(v["id"], str):
            raise BadRequest("id: required UUID string")
        if "created_at" not in v or not is_number(v["created_at"]):
            raise BadRequest("created_at: required number")
        meta = v.get("metadata", {})
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise BadRequest("metadata: must be an object")
        tags = v.get("tags", [])
        if tags is None or not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise BadRequest("tags: must be an array of strings")
        content = v.get("content")
        if depth(content) > MAX_DEPTH:
            raise BadRequest("content: nested deeper than 32 levels of arrays and objects (the contract's limit)")
        if depth(meta) > MAX_DEPTH:
            raise BadRequest("metadata: nested deeper than 32 levels of arrays and objects (the contract's limit)")
        return {"id": self.parse_id(v["id"]), "created_at": v["created_at"], "metadata": meta, "content": content, "tags": list(tags)}

    def store(self, v, backend=None):
        item = self.decode_item(v)
        if self.lie == "nested-metadata-dropped":
            item["metadata"] = {k: x for k, x in item["metadata"].items() if not isinstance(x, (dict, list))}
        if self.lie == "created-at-seconds":
            item["created_at"] = int(item["created_at"])
        if self.lie == "tags-deduplicated":
            item["tags"] = list(dict.fromkeys(item["tags"]))
        got = (backend or self.backend).store(item)
        if got != item["id"]:
            raise Rejected("the backend acknowledged the write without the item's id")
        if self.lie == "different-id":
            return str(uuid.uuid4())
        return got

    @staticmethod
    def check_record(rec):
        """A native record becomes an item only when it is a well-formed memory item."""
        if rec is None or rec.get("kind") != "memory":
            return None
        it = rec.get("item", {})
        if not all(k in it for k in ITEM_FIELDS):
            raise Rejected("the backend answered a malformed record")
        return it

    def retrieve(self, item_id, backend=None):
        item_id = self.parse_id(item_id)
        if self.lie == "retrieve-via-text":
            hits = self.search({"text": item_id, "limit": 1}, backend)
            return hits[0] if hits else None
        return self.check_record((backend or self.backend).get(item_id))

    def decode_query(self, v):
        if not isinstance(v, dict):
            raise BadRequest("the body must be one JSON object")
        extra = set(v) - {"text", "tags", "filters", "limit"}
        if extra:
            raise BadRequest("unknown fields: " + ", ".join(sorted(extra)))
        text, tags, filters = v.get("text"), v.get("tags"), v.get("filters")
        limit = v.get("limit", DEFAULT_LIMIT)
        if text is not None and not isinstance(text, str):
            raise BadRequest("text: must be a string")
        if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
            raise BadRequest("tags: must be an array of strings")
        if filters is not None and not isinstance(filters, dict):
            raise BadRequest("filters: must be an object")
        if filters is not None and depth(filters) > MAX_DEPTH:
            raise BadRequest("filters: nested deeper than 32 levels of arrays and objects (the contract's limit)")
        if not isinstance(limit, int) or isinstance(limit, bool) or abs(limit) > MAX_LIMIT:
            raise BadRequest("limit: must be an integer within ±1000000")
        return {"text": text or "", "tags": tags or [], "filters": filters or {}, "limit": limit}

    def search(self, v, backend=None):
        backend = backend or self.backend
        q = self.decode_query(v)
        supported = set(self.manifest["supported_filters"])
        unsupported = sorted((k for k in q["filters"] if k not in supported), key=lambda s: s.encode("utf-8"))
        limit = q["limit"]
        if unsupported and self.lie == "unsupported-after-backend":
            backend.scan()
        if limit < 0 and self.lie == "negative-limit-after-backend":
            backend.scan()
        if limit < 0 and self.lie == "negative-limit-generic-error":
            raise BadRequest("limit: must not be negative")
        if self.lie == "unsupported-filter-ignored":
            for k in unsupported:
                del q["filters"][k]
            unsupported = []
        rejected = list(unsupported)
        if limit < 0 and self.lie != "negative-limit-accepted":
            rejected = sorted(rejected + ["limit"], key=lambda s: s.encode("utf-8"))
        if rejected:
            if self.lie == "first-rejected-key-only":
                rejected = rejected[:1]
            if self.lie == "unsorted-rejected-keys":
                rejected = list(reversed(rejected))
            raise Unsupported(rejected)
        if limit == 0:
            if self.lie == "limit-zero-items":
                return [r["item"] for r in backend.cached() if r.get("kind") == "memory"][:DEFAULT_LIMIT]
            if self.lie == "limit-zero-backend-call":
                backend.scan()
            return []
        hits = []
        for rec in backend.scan():
            it = self.check_record(rec)
            if it is None or not self.matches(it, q):
                continue
            if self.lie == "string-content-truncated" and isinstance(it["content"], str) and len(it["content"]) > 64:
                it = dict(it, content=it["content"][:64])
            hits.append(it)
        if self.lie == "limit-ignored":
            return hits
        return hits[:limit]

    def matches(self, it, q):
        if q["text"] and q["text"].lower() not in dumps(it["content"]).lower():
            return False
        if any(t not in it["tags"] for t in q["tags"]):
            return False
        if self.lie != "filter-ignored":
            for k, want in q["filters"].items():
                if k not in it["metadata"] or not json_equal(it["metadata"][k], want):
                    return False
        return True


class Unsupported(Exception):
    def __init__(self, keys):
        super().__init__("unsupported memory query keys: " + ", ".join(keys))
        self.keys = keys


def item_json(it):
    return ('{"id":' + json.dumps(it["id"]) + ',"created_at":' + dumps(it["created_at"]) +
            ',"metadata":' + dumps(it["metadata"]) + ',"content":' + dumps(it["content"]) +
            ',"tags":' + dumps(it["tags"]) + "}")


TITLES = {
    "invalid_request": "Invalid request", "unauthorized": "Unauthorized", "not_found": "Not found",
    "method_not_allowed": "Method not allowed", "payload_too_large": "Payload too large",
    "unsupported_media_type": "Unsupported media type", "unsupported_query": "Unsupported memory query",
    "adapter_error": "Memory adapter error", "unavailable": "Memory adapter unavailable",
    "forbidden": "Forbidden", "quota_exceeded": "Quota exceeded", "rate_limited": "Rate limited",
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "python-adapter"
    # Small request/response exchanges on keep-alive connections: without this every
    # response waits for the client's delayed ACK.
    disable_nagle_algorithm = True
    adapter = None  # set per server class
    tokens = None  # a TokenFile, or None for no authentication
    harness = False

    def log_message(self, fmt, *args):  # quiet: the test reads stdout only
        pass

    def send(self, status, body, ctype="application/json", headers=()):
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if data:
            self.wfile.write(data)

    def problem(self, status, typ, detail="", rejected=None, headers=()):
        p = {"type": typ, "title": TITLES[typ], "status": status}
        if detail:
            p["detail"] = detail[:512]
        if rejected:
            p["rejected_keys"] = rejected
        if status == 401:
            self.send_response(401)
            body = json.dumps(p).encode("utf-8")
            self.send_header("WWW-Authenticate", 'Bearer realm="python-adapter"')
            self.send_header("Content-Type", "application/problem+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send(status, json.dumps(p), "application/problem+json", headers)

    def body(self):
        """The request body, read once: also before an early answer (401, 415), so that the
        next request on the keep-alive connection starts where it should."""
        if getattr(self, "_body", None) is None:
            try:
                n = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                raise BadRequest("invalid Content-Length") from None
            if n < 0 or n > MAX_BODY:
                raise TooLarge()
            self._body = self.rfile.read(n)
        return self._body

    def authorized(self):
        """Whether the request's token is accepted; sets self.grant, what the token may do."""
        self.grant = FULL_ACCESS
        scheme, _, tok = (self.headers.get("Authorization") or "").partition(" ")
        presented = tok.strip().encode() if scheme.lower() == "bearer" else None
        if presented is not None and not self.harness:
            # The harness's governance tokens work on the data listener with their grants,
            # also on a server without a token file.
            minted = self.adapter.minted_grant(presented)
            if minted is not None:
                self.grant = minted
                return True
        if self.tokens is None or (self.adapter.lie == "no-token-check" and not self.harness):
            return True
        if presented is None:
            return False
        g = self.tokens.grant(presented)
        if g is None:
            return False
        self.grant = g
        return True

    def scope(self):
        """The Backend the request's grant works in: its sub-scope's, else the scope's own."""
        sub = self.grant.sub_scope
        return self.adapter.subscope(sub if isinstance(sub, tuple) else ("token-file", sub)) if sub else None

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def dispatch(self, method):
        path = self.path.split("?", 1)[0]
        self._body = None
        try:
            self.body()
            if method == "POST":
                ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
                if ctype != "application/json":
                    self.body()
                    return self.problem(415, "unsupported_media_type", "the body must be Content-Type: application/json")
            route = self.harness_route(method, path) if self.harness else self.data_route(method, path)
            if route is None:
                return
            needs_auth, fn = route
            if needs_auth and not self.authorized():
                return self.problem(401, "unauthorized", "missing or wrong bearer token")
            fn()
        except TooLarge:
            self.close_connection = True
            self.problem(413, "payload_too_large", "body is over %d bytes" % MAX_BODY)
        except BadRequest as e:
            self.problem(400, "invalid_request", str(e))
        except Unsupported as e:
            self.problem(422, "unsupported_query", str(e), e.keys)
        except Unavailable as e:
            self.problem(503, "unavailable", str(e))
        except Forbidden as e:
            self.problem(403, "forbidden", str(e))
        except QuotaExceeded as e:
            self.problem(507, "quota_exceeded", str(e))
        except RateLimited as e:
            self.problem(429, "rate_limited", str(e), headers=[("Retry-After", str(e.retry_after))])
        except Rejected as e:
            lie = getattr(self.adapter, "lie", None)
            if lie == "malformed-answered-200" and path != "/v1/items":
                return self.send(200, '{"items": [')
            if lie == "rejected-write-400" and path == "/v1/items":
                return self.problem(400, "invalid_request", str(e))
            self.problem(502, "adapter_error", str(e))

    def data_route(self, method, path):
        a = self.adapter
        routes = {
            "/v1/manifest": {"GET": (True, lambda: self.send(200, json.dumps(a.current_manifest())))},
            "/v1/items": {"POST": (True, self.store)},
            "/v1/search": {"POST": (True, self.search)},
            "/v1/evidence": {"GET": (True, lambda: self.send(200, json.dumps(a.evidence())))},
            "/healthz": {"GET": (False, lambda: self.send(200, '{"status":"ok"}'))},
            "/readyz": {"GET": (False, lambda: self.send(200, '{"status":"ok"}'))},
        }
        if path.startswith("/v1/items/") and path.count("/") == 3:
            routes[path] = {"GET": (True, lambda: self.retrieve(path[len("/v1/items/"):]))}
        return self.pick(routes, method, path)

    def pick(self, routes, method, path):
        if path not in routes:
            self.problem(404, "not_found", "no such route")
            return None
        if method not in routes[path]:
            self.problem(405, "method_not_allowed", "method %s is not allowed here" % method)
            return None
        return routes[path][method]

    def store(self):
        # Refused before the body is decoded: a read-only token gets nothing parsed for it.
        if self.grant.read_only and self.adapter.lie != "read-only-writes":
            raise Forbidden("this token is read-only: it may retrieve and search, not store")
        v = loads(self.body())
        item_id = self.adapter.store(v, self.scope())
        self.send(201, json.dumps({"id": item_id}))

    def retrieve(self, raw_id):
        it = self.adapter.retrieve(raw_id, self.scope())
        if it is None:
            return self.problem(404, "not_found", "no item has id " + raw_id[:64])
        self.send(200, item_json(it))

    def search(self):
        v = loads(self.body())
        a = self.adapter
        try:
            hits = a.search(v, self.scope())
        except Unavailable:
            if a.lie == "empty-on-outage":
                return self.send(200, '{"items":[]}')
            raise
        self.send(200, '{"items":[' + ",".join(item_json(h) for h in hits) + "]}")

    # ---- the harness protocol ----

    def harness_route(self, method, path):
        a, b = self.adapter, self.adapter.backend

        def cut():
            b.cut = True
            self.send(204, b"")

        def wrong_kind():
            rid = str(uuid.uuid4())
            with b.lock:
                b.records.append({"kind": "note", "item": {"id": rid, "text": "not a memory item " + rid}})
            self.send(200, json.dumps({"id": rid}))

        def write_rejected():
            it = {"id": str(uuid.uuid4()), "created_at": Decimal("1700000000.123456"), "metadata": {},
                  "content": "refused by the backend", "tags": []}
            with b.lock:
                b.rejected.add(it["id"])
            self.send(200, item_json(it))

        def flag(name):
            def set_flag():
                setattr(b, name, True)
                self.send(204, b"")
            return set_flag

        def reset():
            # The governed sub-scopes G, A and B are emptied too, their quota and rate state reset.
            for sb in [b] + (a.harness_subscopes() if a.governance is not None else []):
                with sb.lock:
                    sb.reset()
            self.send(204, b"")

        def governance_tokens():
            v = loads(self.small_body())
            if v != {}:
                raise BadRequest("the body must be {}")
            self.send(200, json.dumps(a.governance_tokens()))

        def retention_sweep():
            v = loads(self.small_body())
            if not isinstance(v, dict) or set(v) != {"after_seconds"}:
                raise BadRequest('the body must be {"after_seconds": N}')
            after = v["after_seconds"]
            if type(after) is not int or not 0 <= after <= MAX_SWEEP_AFTER:
                raise BadRequest("after_seconds: want an integer from 0 to %d" % MAX_SWEEP_AFTER)
            for sb in a.harness_subscopes():
                sb.sweep(after)
            self.send(204, b"")

        cap_names = ["reset", "search_index_visible", "transport_unavailable", "wrong_kind_record",
                     "write_rejected", "responses_malformed", "identityless_write", "backend_calls"]
        if a.governance is not None:
            cap_names += ["governance_tokens", "retention_sweep"]
        caps = {"capabilities": cap_names, "duplicate_id_behaviour": "Overwrite", "scope": "python in-memory store"}
        routes = {
            "/harness/v1/capabilities": {"GET": (True, lambda: self.send(200, json.dumps(caps)))},
            "/harness/v1/reset": {"POST": (True, reset)},
            "/harness/v1/search-index-visible": {"POST": (True, lambda: self.send(204, b""))},
            "/harness/v1/transport-unavailable": {"POST": (True, cut)},
            "/harness/v1/wrong-kind-record": {"POST": (True, wrong_kind)},
            "/harness/v1/write-rejected": {"POST": (True, write_rejected)},
            "/harness/v1/responses-malformed": {"POST": (True, flag("malformed"))},
            "/harness/v1/identityless-write": {"POST": (True, flag("identityless"))},
            "/harness/v1/backend-calls": {"GET": (True, lambda: self.send(200, json.dumps({"count": b.calls})))},
        }
        if a.governance is not None:
            routes["/harness/v1/governance-tokens"] = {"POST": (True, governance_tokens)}
            routes["/harness/v1/retention-sweep"] = {"POST": (True, retention_sweep)}
        return self.pick(routes, method, path)

    def small_body(self):
        """The body of a harness call that takes a small JSON object: refused early when larger."""
        data = self.body()
        if len(data) > MAX_HARNESS_BODY:
            raise BadRequest("the body is over %d bytes" % MAX_HARNESS_BODY)
        return data


class TooLarge(Exception):
    """The request body is over MAX_BODY."""


MAX_TOKENS = 4
MAX_TOKEN_BYTES = 512
MAX_TOKEN_FILE_BYTES = 64 << 10
# Sub-scopes one process serves (token-file grants across rotations, and the harness's three).
MAX_SUBSCOPES = 64
# The body of a harness call taking a small object (governance-tokens, retention-sweep).
MAX_HARNESS_BODY = 1024
# A sub-scope's own name (the Go server's memory.SubScopePattern, at most 63 characters).
SUBSCOPE_NAME = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$")


class Grant:
    """What one accepted token may do: digest is its SHA-256; read_only refuses its stores
    (403 forbidden); sub_scope, when set, is the sub-scope every data call with it works in."""

    __slots__ = ("digest", "read_only", "sub_scope")

    def __init__(self, digest, read_only=False, sub_scope=None):
        self.digest, self.read_only, self.sub_scope = digest, read_only, sub_scope


FULL_ACCESS = Grant(b"", False, None)


def grant_options(fields):
    """A line's options after the token, as the Go server reads them (internal/server
    tokenfile.go): "read-only", and "sub-scope=NAME"."""
    read_only, sub = False, None
    for opt in fields:
        name, eq, value = opt.partition(b"=")
        if name == b"read-only" and not eq and not read_only:
            read_only = True
        elif name == b"sub-scope" and sub is None:
            text = value.decode("ascii", "replace")
            if not SUBSCOPE_NAME.match(text):
                # Not quoted: a line run together with the next could put a token here.
                raise ValueError("option sub-scope: want 1 to 63 characters matching %s" % SUBSCOPE_NAME.pattern)
            sub = text
        else:
            # Neither quoted: a mistyped line could be a token run together with its option.
            raise ValueError("unknown or repeated option (want read-only or sub-scope=NAME, each once)")
    return read_only, sub


def parse_grants(data):
    """The (token, read_only, sub_scope) of a token file, one token a line with its options.
    The errors never quote the file: it is secret."""
    grants = []
    for n, line in enumerate(data.split(b"\n"), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields[0]) > MAX_TOKEN_BYTES:
            raise ValueError("line %d: a token is longer than %d bytes" % (n, MAX_TOKEN_BYTES))
        if len(grants) == MAX_TOKENS:
            raise ValueError("more than %d tokens" % MAX_TOKENS)
        try:
            grants.append((fields[0],) + grant_options(fields[1:]))
        except ValueError as e:
            raise ValueError("line %d: %s" % (n, e)) from None
    if not grants:
        raise ValueError("no token in the file")
    return grants


def parse_tokens(data):
    """The tokens of a token file, one a line (their options checked, then left out)."""
    return [g[0] for g in parse_grants(data)]


def match_grant(presented, grants):
    """The grant whose digest is the presented token's, or None. Every digest is compared,
    without stopping at a match, so the time taken tells neither the token's length nor
    which one matched."""
    sum_ = hashlib.sha256(presented).digest()
    found = None
    for g in grants:
        if hmac.compare_digest(sum_, g.digest):
            found = g
    return found


def read_grants(path):
    with open(path, "rb") as f:
        data = f.read(MAX_TOKEN_FILE_BYTES + 1)
    if len(data) > MAX_TOKEN_FILE_BYTES:
        raise ValueError("larger than %d bytes" % MAX_TOKEN_FILE_BYTES)
    return parse_grants(data)


def file_stamp(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


class TokenFile:
    """The bearer tokens in a file, one a line, followed as the file changes.

    The operator rotates a token by rewriting the mounted Secret with both the current and the
    next token; a request looks at the file (at most once a second) and reads it again when
    its mtime or size changed, so no restart is needed. A version that does not read or holds
    no acceptable token (caught between two writes) keeps the previous set, and says so once.
    """

    def __init__(self, path, clock=time.monotonic):
        self.path, self.clock = path, clock
        self.lock = threading.Lock()
        self.checked = clock()
        self.stamp = file_stamp(path)
        self.digests = self._digests(read_grants(path))

    @staticmethod
    def _digests(grants):
        return [Grant(hashlib.sha256(t).digest(), ro, sub) for t, ro, sub in grants]

    def _current(self):
        with self.lock:
            now = self.clock()
            if now - self.checked < 1.0:
                return self.digests
            self.checked = now
            stamp = file_stamp(self.path)
            if stamp == self.stamp:
                return self.digests
            self.stamp = stamp
            try:
                self.digests = self._digests(read_grants(self.path))
            except (OSError, ValueError) as e:
                print("keeping the previous bearer tokens: %s: %s" % (self.path, e), file=sys.stderr, flush=True)
            return self.digests

    def grant(self, presented):
        """The presented token's grant, or None when the file does not accept it."""
        return match_grant(presented, self._current())

    def accepts(self, presented):
        return self.grant(presented) is not None


def load_tokens(flag, path):
    try:
        return TokenFile(path)
    except (OSError, ValueError) as e:
        sys.exit("%s %s: %s" % (flag, path, e))


class CertificateFiles:
    """Serves the key pair in two files and picks up a renewed pair for new connections.

    The operator renews an adapter's certificate by rewriting the mounted Secret's files;
    each handshake looks at them (at most once a second) and switches to a fresh context
    when they changed, so no restart and no open connection is lost. A pair caught between
    two writes keeps the previous one in service.
    """

    def __init__(self, cert_file, key_file):
        self.cert_file, self.key_file = cert_file, key_file
        self.lock = threading.Lock()
        self.stamp, self.checked = None, 0.0
        self.context = self._load()

    def _stamps(self):
        return tuple((st.st_mtime_ns, st.st_size) for st in (os.stat(self.cert_file), os.stat(self.key_file)))

    def _load(self):
        stamp = self._stamps()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(self.cert_file, self.key_file)
        ctx.sni_callback = self._sni
        self.stamp = stamp
        return ctx

    def _sni(self, sslobj, _name, _ctx):
        with self.lock:
            now = time.monotonic()
            if now - self.checked >= 1.0:
                self.checked = now
                try:
                    if self._stamps() != self.stamp:
                        self.context = self._load()
                except (OSError, ssl.SSLError):
                    pass
            sslobj.context = self.context
        return None


def serve(address, handler, certs=None):
    host, _, port = address.rpartition(":")
    httpd = ThreadingHTTPServer((host or "127.0.0.1", int(port)), handler)
    httpd.daemon_threads = True
    if certs is not None:
        # The handshake happens in the request thread (do_handshake_on_connect off), so a
        # client that never finishes one does not stall the accept loop.
        httpd.socket = certs.context.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def check_vectors(path):
    """Checks this implementation of manifest_hash against the known-answer vectors."""
    with open(path, encoding="utf-8") as f:
        vectors = json.load(f)["vectors"]
    bad = 0
    for v in vectors:
        got_c, got_h = canonical(v["manifest"]), manifest_hash(v["manifest"])
        if got_c != v["canonical"] or got_h != v["manifest_hash"]:
            bad += 1
            print("MISMATCH %s: canonical %s hash %s" % (v["name"], got_c, got_h))
    print("checked %d vectors, %d mismatches" % (len(vectors), bad))
    return 1 if bad or not vectors else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", default="127.0.0.1:8080")
    p.add_argument("--token-file", help="bearer tokens of the data listener, one a line (at most 4), re-read when the file changes")
    p.add_argument("--harness-listen")
    p.add_argument("--harness-token-file")
    p.add_argument("--adapter-id", default="python-example")
    p.add_argument("--lie", choices=sorted(LIES), help="plant one lie (for the conformance accuracy table)")
    p.add_argument("--governance", metavar="JSON",
                   help='claim and enforce governance/v1 with this object, e.g. {"read_only":true,"isolation":true}')
    p.add_argument("--check-hash-vectors", metavar="FILE", help="check manifest_hash against known-answer vectors and exit")
    # The operator sets these for an External server whose adapter serves TLS (the default).
    p.add_argument("--tls-cert-file", default=os.environ.get("MEMORY_ADAPTER_TLS_CERT_FILE"),
                   help="serve the data listener over HTTPS with this PEM certificate (default $MEMORY_ADAPTER_TLS_CERT_FILE)")
    p.add_argument("--tls-key-file", default=os.environ.get("MEMORY_ADAPTER_TLS_KEY_FILE"),
                   help="the PEM key of --tls-cert-file (default $MEMORY_ADAPTER_TLS_KEY_FILE)")
    args = p.parse_args()
    if args.check_hash_vectors:
        sys.exit(check_vectors(args.check_hash_vectors))
    if args.harness_listen and not args.harness_token_file:
        sys.exit("--harness-listen needs --harness-token-file")
    governance = None
    if args.governance is not None:
        if len(args.governance) > MAX_GOVERNANCE_TEXT:
            sys.exit("--governance: longer than %d characters" % MAX_GOVERNANCE_TEXT)
        try:
            governance = parse_governance(loads(args.governance.encode("utf-8")))
        except (BadRequest, ValueError) as e:
            sys.exit("--governance: %s" % e)
    adapter = Adapter(args.adapter_id, args.lie, governance)
    if adapter.governance is not None and "retention" in adapter.governance:
        threading.Thread(target=adapter.sweeper, daemon=True).start()
    data_cls = type("DataHandler", (Handler,), {"adapter": adapter, "harness": False,
                                                "tokens": load_tokens("--token-file", args.token_file) if args.token_file else None})
    if bool(args.tls_cert_file) != bool(args.tls_key_file):
        sys.exit("--tls-cert-file and --tls-key-file go together")
    certs = CertificateFiles(args.tls_cert_file, args.tls_key_file) if args.tls_cert_file else None
    data = serve(args.listen, data_cls, certs)
    print("LISTEN=%s:%d" % data.server_address[:2], flush=True)
    if args.harness_listen:
        h_cls = type("HarnessHandler", (Handler,), {"adapter": adapter, "harness": True,
                                                    "tokens": load_tokens("--harness-token-file", args.harness_token_file)})
        h = serve(args.harness_listen, h_cls)
        print("HARNESS_LISTEN=%s:%d" % h.server_address[:2], flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
