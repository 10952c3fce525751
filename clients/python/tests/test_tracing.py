"""The W3C trace context a call carries to the adapter server (memory_adapter_client.tracing)."""

import asyncio
import contextvars
import json
import unittest
import uuid

from fakeserver import FakeServer

from memory_adapter_client import MemoryItem, RemoteMemoryStore, tracing

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
_current = contextvars.ContextVar("current_traceparent", default=None)


def headers_of(request):
    return {k.lower(): v for k, v in request[2].items()}


class FakePropagate:
    """Stands in for ``opentelemetry.propagate``: injects what a global propagator with
    trace context and baggage would."""

    def inject(self, carrier):
        carrier["traceparent"] = TRACEPARENT
        carrier["tracestate"] = "vendor=x"
        carrier["baggage"] = "user=alice"


class TraceHeadersTest(unittest.TestCase):
    def setUp(self):
        self.srv = FakeServer()
        self.addCleanup(self.srv.close)
        self.item = MemoryItem(content="hello")
        body = json.dumps({"id": str(self.item.id)}).encode()
        self.srv.answer = lambda m, p, h, b: (201, "application/json", body)
        saved = tracing._otel_propagate
        self.addCleanup(setattr, tracing, "_otel_propagate", saved)

    def store(self, store):
        asyncio.run(store.store(self.item))
        return headers_of(self.srv.data_requests()[-1])

    def test_hook_headers_are_sent(self):
        s = RemoteMemoryStore(self.srv.url, token="tok", trace_headers=lambda: {"traceparent": TRACEPARENT, "tracestate": "a=1"})
        h = self.store(s)
        self.assertEqual(h.get("traceparent"), TRACEPARENT)
        self.assertEqual(h.get("tracestate"), "a=1")

    def test_hook_runs_in_the_calls_context(self):
        # asyncio.to_thread copies the context: a hook reading the caller's context variable
        # on the worker thread sees the value of the call it serves.
        s = RemoteMemoryStore(self.srv.url, trace_headers=lambda: {"traceparent": _current.get()} if _current.get() else None)

        async def traced():
            _current.set(TRACEPARENT)
            await s.store(self.item)

        asyncio.run(traced())
        self.assertEqual(headers_of(self.srv.data_requests()[-1]).get("traceparent"), TRACEPARENT)
        self.store(s)  # outside that context: no header
        self.assertNotIn("traceparent", headers_of(self.srv.data_requests()[-1]))

    def test_hook_cannot_set_other_headers_or_split_one(self):
        s = RemoteMemoryStore(
            self.srv.url,
            token="tok",
            trace_headers=lambda: {"Authorization": "Bearer stolen", "baggage": "user=alice", "TraceParent": TRACEPARENT + "\r\nX-Evil: 1", "tracestate": "ok=1"},
        )
        h = self.store(s)
        self.assertEqual(h.get("authorization"), "Bearer tok")
        self.assertNotIn("baggage", h)
        self.assertNotIn("traceparent", h)
        self.assertNotIn("x-evil", h)
        self.assertEqual(h.get("tracestate"), "ok=1")

    def test_opentelemetry_context_is_injected_without_baggage(self):
        tracing._otel_propagate = FakePropagate()
        h = self.store(RemoteMemoryStore(self.srv.url))
        self.assertEqual(h.get("traceparent"), TRACEPARENT)
        self.assertEqual(h.get("tracestate"), "vendor=x")
        self.assertNotIn("baggage", h)

    def test_hook_wins_over_opentelemetry(self):
        tracing._otel_propagate = FakePropagate()
        other = "00-" + uuid.uuid4().hex + "-00f067aa0ba902b7-00"
        h = self.store(RemoteMemoryStore(self.srv.url, trace_headers=lambda: {"traceparent": other}))
        self.assertEqual(h.get("traceparent"), other)
        self.assertNotIn("tracestate", h)

    def test_neither_sends_nothing(self):
        tracing._otel_propagate = None
        h = self.store(RemoteMemoryStore(self.srv.url))
        self.assertNotIn("traceparent", h)
        self.assertNotIn("tracestate", h)

    def test_hook_must_be_callable(self):
        with self.assertRaises(ValueError):
            RemoteMemoryStore(self.srv.url, trace_headers=TRACEPARENT)


if __name__ == "__main__":
    unittest.main()
