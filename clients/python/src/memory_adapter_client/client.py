"""A lionagi MemoryStore over the adapter server's HTTP/JSON wire (contract.md §4).

``RemoteMemoryStore`` is an ``ExternalMemoryStore``: ``store``, ``retrieve`` and ``search``
are lionagi's three async methods, ``manifest`` is the server's published manifest. Each
call runs its blocking HTTP exchange in a worker thread (``asyncio.to_thread``), so the
event loop never waits on the network. Lifecycle, timeouts and retries: ``docs/lifecycle.md``
beside this package's README.
"""

from __future__ import annotations

import asyncio
import http.client
import math
import os
import re
import ssl
import threading
import time
import urllib.parse
import uuid
from decimal import Decimal
from typing import Any

from . import jsonexact
from .errors import MemoryAdapterError, MemoryAdapterUnavailable, ProblemError, UnsupportedMemoryQuery
from .models import MemoryAdapterManifest, MemoryItem, manifest_from_wire
from . import tracing as _tracing
from .tracing import TraceHeaders

__all__ = (
    "RemoteMemoryStore",
    "from_binding",
    "binding_dir",
    "DEFAULT_TIMEOUT",
    "CONNECT_TIMEOUT",
    "TLS_HANDSHAKE_TIMEOUT",
    "CONNECT_ATTEMPTS",
    "MAX_RESPONSE_BYTES",
    "item_to_wire",
    "item_from_wire",
    "query_to_wire",
)

# The deadline of one call: the server's 10 s backend timeout plus network headroom (the Go
# client's adapters/remote DefaultTimeout).
DEFAULT_TIMEOUT = 15.0
# One attempt to open a TCP connection, and one TLS handshake (adapters/remote connect.go).
CONNECT_TIMEOUT = 2.0
TLS_HANDSHAKE_TIMEOUT = 3.0
# Connection attempts per call while none could be opened: nothing was sent, so a new
# attempt is safe for every operation, a store included.
CONNECT_ATTEMPTS = 3
# Bound on a response body (the Go client's DefaultMaxResponseBytes).
MAX_RESPONSE_BYTES = 64 << 20
# Binding files: url, token and type at most 4 KiB each, ca.crt at most 64 KiB
# (cmd/memory-adapter agentcheck.go readBinding).
BINDING_FILE_LIMIT = 4096
CA_BUNDLE_LIMIT = 64 << 10

_USER_AGENT = "memory-adapter-client-python/0.1.0"
_ITEM_KEYS = frozenset({"id", "created_at", "metadata", "content", "tags"})
_UUID_TEXT = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_ADAPTER_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# A bearer token is sent in a header: visible ASCII only, so it can never split the header.
_TOKEN_TEXT = re.compile(r"^[\x21-\x7e]*$")


# ---- wire conversion ----


def _lion_class(item: Any) -> str:
    cls = type(item)
    return f"{cls.__module__}.{cls.__qualname__}"


def item_to_wire(item: Any) -> dict:
    """The wire form of a MemoryItem (lionagi's or this package's): ``model_dump(mode="json")``
    content with numbers kept exact, never lionagi's ``lion_class`` marker."""
    try:
        item_id, created_at = item.id, item.created_at
        metadata, content, tags = item.metadata, item.content, item.tags
    except AttributeError as exc:
        raise MemoryAdapterError("store: the item is not a MemoryItem") from exc
    if not isinstance(item_id, uuid.UUID):
        raise MemoryAdapterError("store: the item's id is not a UUID")
    if isinstance(created_at, bool) or not isinstance(created_at, (int, float)):
        raise MemoryAdapterError("store: the item's created_at is not a float")
    metadata = dict(metadata or {})
    # lionagi's to_dict() writes its class marker into metadata; the wire carries the
    # model_dump(mode="json") content, which never has it.
    if metadata.get("lion_class") == _lion_class(item):
        del metadata["lion_class"]
    return {
        "id": str(item_id),
        "created_at": float(created_at),
        "metadata": metadata,
        "content": content,
        "tags": list(tags or []),
    }


def _timestamp(value: Any, what: str) -> float:
    """created_at read as every JSON parser of the contract reads it (api/memory
    ParseTimestamp): the double nearest the number, which for the shortest form a server
    writes is that very double. A number beyond a double (1e400) is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise ValueError(f"{what} is not a number")
    try:
        f = float(value)
    except OverflowError as exc:
        raise ValueError(f"{what} is out of range") from exc
    if not math.isfinite(f):
        raise ValueError(f"{what} {value} is out of range")
    return f


def item_from_wire(data: Any) -> Any:
    """A MemoryItem (lionagi's when installed) from an item on the wire, decoded strictly."""
    if not isinstance(data, dict):
        raise ValueError("an item is not a JSON object")
    unknown = set(data) - _ITEM_KEYS
    if unknown:
        raise ValueError(f"an item has unknown members {sorted(unknown)}")
    raw_id = data.get("id")
    if not isinstance(raw_id, str) or not _UUID_TEXT.match(raw_id):
        raise ValueError("an item's id is not a UUID")
    if "created_at" not in data:
        raise ValueError("an item has no created_at")
    created_at = _timestamp(data["created_at"], "an item's created_at")
    metadata = data.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise ValueError("an item's metadata is not an object")
    tags = data.get("tags")
    if tags is None:
        tags = []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ValueError("an item's tags are not a list of strings")
    return MemoryItem(
        id=uuid.UUID(raw_id), created_at=created_at, metadata=metadata, content=data.get("content"), tags=tags
    )


def query_to_wire(query: Any) -> dict:
    """The wire form of a MemoryQuery (all four members)."""
    try:
        text, tags, filters, limit = query.text, query.tags, query.filters, query.limit
    except AttributeError as exc:
        raise MemoryAdapterError("search: the query is not a MemoryQuery") from exc
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise MemoryAdapterError("search: the query's limit is not an int")
    return {
        "text": text,
        "tags": None if tags is None else list(tags),
        "filters": None if filters is None else dict(filters),
        "limit": limit,
    }


# ---- answers ----

# Retry-After as the wire writes it (integer seconds); an HTTP date or anything longer is
# not read: the client never waits on a server-chosen date.
_RETRY_AFTER = re.compile(r"^[0-9]{1,9}$")


class _Answer(tuple):
    """One exchange's answer: unpacks as ``(status, media type, body)`` as it always did (the
    agent wraps ``_exchange`` and prints those three), and carries ``retry_after`` beside them
    for the problem a 429 becomes."""

    retry_after: int | None

    def __new__(cls, status: int, ctype: str, data: bytes, retry_after: int | None = None) -> "_Answer":
        self = super().__new__(cls, (status, ctype, data))
        self.retry_after = retry_after
        return self


def _retry_after(value: str | None) -> int | None:
    v = (value or "").strip()
    return int(v) if _RETRY_AFTER.match(v) else None


# ---- files that Kubernetes may swap under us ----


class _WatchedFile:
    """A small file re-read whenever its stat (device, inode, size, mtime) changes.

    Kubernetes projects a Secret as ``name -> ..data/name`` and swaps ``..data`` atomically,
    so following the symlink and comparing the stat before each call sees every rotation.
    Reads stay inside ``root`` (after symlinks) when one is given, as Go's os.OpenInRoot.
    """

    def __init__(self, path: str, limit: int, root: str | None = None) -> None:
        self.path = path
        self.limit = limit
        self.root = root
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._data = b""

    def _read(self) -> tuple[tuple, bytes]:
        name = os.path.basename(self.path)
        if self.root is not None:
            real_root = os.path.realpath(self.root)
            real = os.path.realpath(self.path)
            if os.path.commonpath([real_root, real]) != real_root:
                raise MemoryAdapterError(f"binding {name}: resolves outside the binding directory")
        with open(self.path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read(self.limit + 1)
        if len(data) > self.limit:
            raise MemoryAdapterError(f"binding {name}: longer than {self.limit} bytes")
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns), data

    def get(self, force: bool = False) -> bytes:
        with self._lock:
            try:
                st = os.stat(self.path)
                key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
                if force or key != self._key:
                    self._key, self._data = self._read()
            except OSError as exc:
                raise MemoryAdapterError(f"binding {os.path.basename(self.path)}: cannot be read") from exc
            return self._data


def _check_token(token: str) -> str:
    if not _TOKEN_TEXT.match(token):
        # The token itself is never put in a message.
        raise MemoryAdapterError("the bearer token holds characters other than visible ASCII")
    return token


# ---- the store ----


class RemoteMemoryStore:
    """An ExternalMemoryStore over the adapter server's wire.

    ``url`` is the server's base URL (``http`` or ``https``). The bearer token is ``token``,
    or read from ``token_file`` (re-read whenever the file changes, and once more after a
    401). For ``https``, ``ca_cert`` (PEM bytes) or ``ca_file`` is the only CA the server's
    certificate may chain to; without one the system's roots are trusted. The constructor
    makes no connection: the manifest is fetched by the first call that needs it (or by
    ``load_manifest()``), then kept for the instance's lifetime.

    Each call carries the W3C trace context (``traceparent``, ``tracestate``) of the
    current OpenTelemetry span when ``opentelemetry-api`` is installed; ``trace_headers``,
    a function called before each request (in the call's context, on its worker thread),
    gives those headers instead, for a caller that traces without OpenTelemetry.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        token_file: str | None = None,
        ca_cert: bytes | None = None,
        ca_file: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        trace_headers: TraceHeaders | None = None,
        _binding_root: str | None = None,
    ) -> None:
        if token is not None and token_file is not None:
            raise ValueError("give token or token_file, not both")
        if ca_cert is not None and ca_file is not None:
            raise ValueError("give ca_cert or ca_file, not both")
        if not (isinstance(timeout, (int, float)) and 0 < timeout < float("inf")):
            raise ValueError("timeout must be a positive number of seconds")
        if not (isinstance(max_response_bytes, int) and max_response_bytes > 0):
            raise ValueError("max_response_bytes must be a positive int")
        if trace_headers is not None and not callable(trace_headers):
            raise ValueError("trace_headers must be a function returning the call's trace headers")
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise MemoryAdapterError("remote: the URL must be an absolute http(s) URL")
        if u.username is not None or u.password is not None or u.query or u.fragment:
            raise MemoryAdapterError("remote: the URL must carry no credentials, query or fragment")
        try:
            port = u.port
        except ValueError as exc:
            raise MemoryAdapterError("remote: the URL's port is not a port") from exc
        self._url = url
        self._https = u.scheme == "https"
        self._host = u.hostname
        self._port = port or (443 if self._https else 80)
        self._prefix = u.path.rstrip("/")
        self._timeout = float(timeout)
        self._max = max_response_bytes
        self._token = None if token is None else _check_token(token)
        self._token_file = None if token_file is None else _WatchedFile(token_file, BINDING_FILE_LIMIT, _binding_root)
        self._ca_static = ca_cert
        self._ca_file = None if ca_file is None else _WatchedFile(ca_file, CA_BUNDLE_LIMIT, _binding_root)
        if not self._https and (ca_cert is not None or ca_file is not None):
            # A CA with a plain URL would send the token in clear while the caller believes
            # it protected: refused rather than silently downgraded.
            raise MemoryAdapterError("remote: a CA certificate was given for a plain http URL")
        self._tls_lock = threading.Lock()
        self._tls: tuple[bytes | None, ssl.SSLContext] | None = None
        self._manifest: MemoryAdapterManifest | None = None
        self._manifest_lock = threading.Lock()
        self._closed = False
        self._trace_headers = trace_headers

    def __repr__(self) -> str:
        # Never the token.
        return f"RemoteMemoryStore(url={self._url!r})"

    # -- lifecycle --

    def close(self) -> None:
        """Mark the store closed; later calls raise MemoryAdapterError. Idempotent.

        The store holds no connection between calls (each call opens its own), so there is
        nothing else to release.
        """
        self._closed = True

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> "RemoteMemoryStore":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    # -- manifest --

    @property
    def manifest(self) -> MemoryAdapterManifest:
        """The server's manifest, fetched once (blocking, on first use) and then immutable.

        In async code, ``await store.load_manifest()`` first fetches it off the event loop.
        """
        return self._ensure_manifest()

    async def load_manifest(self) -> MemoryAdapterManifest:
        return await asyncio.to_thread(self._ensure_manifest)

    def _ensure_manifest(self) -> MemoryAdapterManifest:
        with self._manifest_lock:
            if self._manifest is None:
                self._manifest = self.fetch_manifest()
            return self._manifest

    def fetch_manifest(self) -> MemoryAdapterManifest:
        """``GET /v1/manifest`` now (blocking), without changing this store's own manifest."""
        data = self._call("GET", "/v1/manifest", None, 200)
        try:
            return manifest_from_wire(data)
        except ValueError as exc:
            raise MemoryAdapterError("remote: the server published an invalid manifest") from exc

    # -- the three MemoryStore methods --

    async def store(self, item: Any) -> uuid.UUID:
        return await asyncio.to_thread(self.store_blocking, item)

    async def retrieve(self, item_id: uuid.UUID) -> Any:
        return await asyncio.to_thread(self.retrieve_blocking, item_id)

    async def search(self, query: Any) -> list:
        return await asyncio.to_thread(self.search_blocking, query)

    # The same operations for synchronous callers (and the worker threads above).

    def store_blocking(self, item: Any) -> uuid.UUID:
        wire = item_to_wire(item)
        try:
            body = jsonexact.dumps(wire)
        except ValueError as exc:
            raise MemoryAdapterError(f"store: the item cannot be sent exactly: {exc}") from exc
        res = self._call("POST", "/v1/items", body, 201)
        if not isinstance(res, dict) or set(res) != {"id"}:
            raise MemoryAdapterError("remote: store: the response is not {\"id\": ...}")
        raw = res["id"]
        if not isinstance(raw, str) or not _UUID_TEXT.match(raw):
            raise MemoryAdapterError("remote: store: the response id is not a UUID")
        got = uuid.UUID(raw)
        if got != item.id:
            raise MemoryAdapterError("remote: store: the server acknowledged a different id")
        return got

    def retrieve_blocking(self, item_id: uuid.UUID) -> Any:
        if not isinstance(item_id, uuid.UUID):
            item_id = uuid.UUID(str(item_id))  # ValueError for a non-UUID, as lionagi's types
        try:
            data = self._call("GET", "/v1/items/" + str(item_id), None, 200)
        except MemoryAdapterError as exc:
            pe = exc.__cause__
            if isinstance(pe, ProblemError) and pe.type == "not_found" and pe.status == 404:
                return None
            raise
        try:
            item = item_from_wire(data)
        except (ValueError, TypeError) as exc:
            raise MemoryAdapterError("remote: retrieve: malformed item") from exc
        if item.id != item_id:
            raise MemoryAdapterError("remote: retrieve: the server returned an item with a different id")
        return item

    def search_blocking(self, query: Any) -> list:
        wire = query_to_wire(query)
        limit, filters = wire["limit"], wire["filters"] or {}
        if limit == 0 and not filters:
            # Nothing to reject and nothing to return: answered without any call.
            return []
        self.check_query(filters, limit)
        if limit == 0:
            return []
        try:
            body = jsonexact.dumps(wire)
        except ValueError as exc:
            raise MemoryAdapterError(f"search: the query cannot be sent exactly: {exc}") from exc
        res = self._call("POST", "/v1/search", body, 200)
        if not isinstance(res, dict) or set(res) != {"items"} or not isinstance(res["items"], list):
            raise MemoryAdapterError("remote: search: the response is not {\"items\": [...]}")
        if len(res["items"]) > limit:
            raise MemoryAdapterError(f"remote: search: the server returned {len(res['items'])} items for limit {limit}")
        try:
            return [item_from_wire(x) for x in res["items"]]
        except (ValueError, TypeError) as exc:
            raise MemoryAdapterError("remote: search: malformed item") from exc

    def check_query(self, filters: dict, limit: int) -> None:
        """The Go client's CheckQuery: every filter key outside the manifest's
        ``supported_filters``, and ``limit`` when negative, rejected together before transport."""
        supported = self._ensure_manifest().supported_filters
        rejected = [k for k in filters if k not in supported]
        if limit < 0:
            rejected.append("limit")
        if rejected:
            raise UnsupportedMemoryQuery(rejected)

    # -- HTTP --

    def _current_token(self, force: bool = False) -> str | None:
        if self._token_file is None:
            return self._token
        raw = self._token_file.get(force)
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise MemoryAdapterError("binding token: not UTF-8") from exc
        return _check_token(text)

    def _tls_context(self) -> ssl.SSLContext:
        pem = self._ca_static if self._ca_file is None else self._ca_file.get()
        with self._tls_lock:
            if self._tls is not None and self._tls[0] == pem:
                return self._tls[1]
            try:
                if pem:
                    # cadata given: only this CA is trusted, never the system's roots.
                    ctx = ssl.create_default_context(cadata=pem.decode("ascii"))
                else:
                    ctx = ssl.create_default_context()
            except (ssl.SSLError, ValueError, UnicodeDecodeError) as exc:
                raise MemoryAdapterError("remote: the CA certificate holds no usable PEM certificate") from exc
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            self._tls = (pem, ctx)
            return ctx

    def _call(self, method: str, path: str, body: bytes | None, want: int) -> Any:
        """One exchange, mapped: the decoded body of a ``want`` answer, else a typed error."""
        if self._closed:
            raise MemoryAdapterError("remote: the store is closed")
        token = self._current_token()
        answer = self._exchange(method, path, body, token)
        if answer[0] == 401 and self._token_file is not None:
            # 401: the server did not act, so after a rotation one retry is safe for any call.
            fresh = self._current_token(force=True)
            if fresh != token:
                answer = self._exchange(method, path, body, fresh)
        status, ctype, data = answer
        if status != want:
            # getattr: a wrapped _exchange (a test's, the agent's) may hand back a plain tuple.
            raise self._problem(method, path, status, ctype, data, getattr(answer, "retry_after", None))
        try:
            return jsonexact.loads(data)
        except (ValueError, RecursionError) as exc:
            raise MemoryAdapterError(f"remote: {method} {path}: malformed response") from exc

    def _connect(self, deadline: float) -> http.client.HTTPConnection:
        """Open a connection (TCP, and TLS for https), trying up to CONNECT_ATTEMPTS times
        while none could be opened; nothing has been sent then, so trying again is safe."""
        last: BaseException | None = None
        for _attempt in range(CONNECT_ATTEMPTS):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            conn = http.client.HTTPConnection(self._host, self._port, timeout=min(CONNECT_TIMEOUT, remaining))
            try:
                conn.connect()
                if self._https:
                    ctx = self._tls_context()
                    conn.sock.settimeout(min(TLS_HANDSHAKE_TIMEOUT, max(deadline - time.monotonic(), 0.001)))
                    conn.sock = ctx.wrap_socket(conn.sock, server_hostname=self._host)
                return conn
            except MemoryAdapterError:
                conn.close()
                raise
            except (OSError, ValueError) as exc:  # refused, unreachable, DNS, timeouts, TLS
                conn.close()
                last = exc
        raise MemoryAdapterUnavailable("remote: no connection to the server could be opened") from last

    def _exchange(self, method: str, path: str, body: bytes | None, token: str | None) -> _Answer:
        deadline = time.monotonic() + self._timeout
        conn = self._connect(deadline)
        op = f"remote: {method} {path}"
        try:
            headers = {"Accept": "application/json, application/problem+json", "User-Agent": _USER_AGENT}
            headers.update(_tracing.trace_headers(self._trace_headers))
            if body is not None:
                headers["Content-Type"] = "application/json"
            if token:
                headers["Authorization"] = "Bearer " + token
            # The socket itself: http.client drops conn.sock once an answer says
            # "Connection: close", while the response still reads through it.
            sock = conn.sock
            try:
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                conn.request(method, self._prefix + path, body=body, headers=headers)
                resp = conn.getresponse()
                ctype = (resp.getheader("Content-Type") or "").split(";", 1)[0].strip().lower()
                length = resp.getheader("Content-Length")
                if length is not None and length.strip().isdigit() and int(length) > self._max:
                    raise MemoryAdapterError(f"{op}: response over {self._max} bytes")
                chunks: list[bytes] = []
                size = 0
                while True:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise TimeoutError("the call's deadline passed while reading the response")
                    try:
                        sock.settimeout(remaining)
                    except OSError:
                        # Closed by http.client after a "Connection: close" answer (the
                        # response reads through its own reference); the timeout set
                        # before the request still bounds each read.
                        pass
                    chunk = resp.read(min(1 << 16, self._max + 1 - size))
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > self._max:
                        raise MemoryAdapterError(f"{op}: response over {self._max} bytes")
                return _Answer(resp.status, ctype, b"".join(chunks), _retry_after(resp.getheader("Retry-After")))
            except (OSError, http.client.HTTPException) as exc:
                raise MemoryAdapterUnavailable(f"{op}: the exchange failed") from exc
        finally:
            conn.close()

    def _problem(self, method: str, path: str, status: int, ctype: str, data: bytes, retry_after: int | None = None) -> MemoryAdapterError:
        op = f"remote: {method} {path}"
        if ctype == "application/problem+json":
            try:
                p = jsonexact.loads(data)
            except (ValueError, RecursionError):
                p = None
            if isinstance(p, dict) and isinstance(p.get("type"), str) and p["type"]:
                pe = ProblemError(status, p["type"][:64], _text(p.get("title")), _text(p.get("detail")), retry_after)
                err: MemoryAdapterError
                if p["type"] == "unsupported_query":
                    keys = p.get("rejected_keys")
                    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
                        err = MemoryAdapterError(op + ": unsupported_query without rejected_keys")
                    else:
                        err = UnsupportedMemoryQuery(keys)
                elif p["type"] == "unavailable":
                    err = MemoryAdapterUnavailable(op)
                else:
                    err = MemoryAdapterError(op)
                err.__cause__ = pe
                return err
        # No problem body: something between us and the server answered (a proxy, a load
        # balancer). A gateway failure means the service is unreachable.
        if status in (502, 503, 504):
            return MemoryAdapterUnavailable(f"{op}: HTTP {status} without a problem body")
        return MemoryAdapterError(f"{op}: unexpected HTTP {status} ({_describe(ctype, data)})")


def _text(v: Any) -> str:
    return v[:300] if isinstance(v, str) else ""


def _describe(ctype: str, data: bytes) -> str:
    """What answered when it was not the adapter server: printable ASCII only, bounded."""
    head = "".join(chr(c) if 0x20 <= c < 0x7F else "." for c in data[:80])
    if len(data) > 80:
        head += "…"
    return f"{(ctype or 'no content type')[:64]}: {head!r}"


# ---- bindings ----


def binding_dir(adapter: str, root: str | None = None) -> str:
    """``$SERVICE_BINDING_ROOT/<adapter>``, with the adapter name checked as a MemoryAdapter name."""
    root = root if root is not None else os.environ.get("SERVICE_BINDING_ROOT", "")
    if not root:
        raise MemoryAdapterError("SERVICE_BINDING_ROOT is not set: is the pod bound to an adapter?")
    if len(adapter) > 40 or not _ADAPTER_NAME.match(adapter):
        raise MemoryAdapterError(f"{adapter[:64]!r} is not a MemoryAdapter name")
    return os.path.join(root, adapter)


def from_binding(path: str, *, timeout: float = DEFAULT_TIMEOUT, trace_headers: TraceHeaders | None = None) -> RemoteMemoryStore:
    """A store from a projected Service Binding directory (files ``type``, ``url``,
    ``token`` and, for an https adapter, ``ca.crt``), with the rules of the Go agent's
    readBinding: ``type`` must be ``memory-adapter``; each of ``type``, ``url`` and
    ``token`` at most 4 KiB, ``ca.crt`` at most 64 KiB; reads never leave the directory;
    with ``ca.crt`` present the URL must be https and that CA is the only one trusted.
    The token (and ``ca.crt``) are re-read whenever the projected files change. No network
    call is made here. ``trace_headers`` is ``RemoteMemoryStore``'s.
    """

    def read(name: str) -> str:
        f = _WatchedFile(os.path.join(path, name), BINDING_FILE_LIMIT, path)
        try:
            return f.get().decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise MemoryAdapterError(f"binding {name}: not UTF-8") from exc

    kind = read("type")
    if kind != "memory-adapter":
        raise MemoryAdapterError(f"binding type is {kind[:64]!r}, want memory-adapter")
    url = read("url")
    read("token")  # present and readable now; re-read on every change later
    ca_path = os.path.join(path, "ca.crt")
    ca_file = None
    if os.path.lexists(ca_path):
        ca_file = ca_path
        if not _WatchedFile(ca_path, CA_BUNDLE_LIMIT, path).get():
            ca_file = None  # an empty ca.crt is no CA, as in Go
    if ca_file is not None and not url.startswith("https://"):
        raise MemoryAdapterError(
            f"binding url {url[:200]!r} is not https although the binding carries ca.crt: refusing to send the token in clear"
        )
    return RemoteMemoryStore(
        url,
        token_file=os.path.join(path, "token"),
        ca_file=ca_file,
        timeout=timeout,
        trace_headers=trace_headers,
        _binding_root=path,
    )
