"""The client's mapping of the wire (contract.md §4) onto the seed's types and errors."""

import asyncio
import json
import socket
import struct
import threading
import time
import unittest
import uuid
from decimal import Decimal

from fakeserver import FakeServer, problem

from memory_adapter_client import (
    ExternalMemoryStore,
    MemoryAdapterError,
    MemoryAdapterUnavailable,
    MemoryItem,
    MemoryQuery,
    MemoryStore,
    ProblemError,
    RemoteMemoryStore,
    UnsupportedMemoryQuery,
)
from memory_adapter_client.client import item_to_wire


def wire_item(it, **over):
    d = {"id": str(it.id), "created_at": it.created_at, "metadata": it.metadata, "content": it.content, "tags": it.tags}
    d.update(over)
    return d


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.srv = FakeServer()
        self.addCleanup(self.srv.close)
        self.store = RemoteMemoryStore(self.srv.url, token="secret-token-xyz", timeout=3)

    def run_(self, coro):
        return asyncio.run(coro)

    def test_protocols(self):
        self.run_(self.store.load_manifest())
        self.assertIsInstance(self.store, MemoryStore)
        self.assertIsInstance(self.store, ExternalMemoryStore)
        self.assertEqual(self.store.manifest.adapter, "unit")

    def test_no_connection_at_construction(self):
        RemoteMemoryStore("http://127.0.0.1:9", token="t")
        self.assertEqual(self.srv.requests, [])

    def test_store_sends_exact_item_and_returns_its_id(self):
        it = MemoryItem(created_at=1796513095.4649496, content={"big": 2**70 + 1, "d": Decimal("1e400"), "f": 0.1}, metadata={"source": "s"}, tags=["a", "a"])
        self.srv.answer = lambda m, p, h, b: (201, "application/json", json.dumps({"id": str(it.id)}).encode())
        self.assertEqual(self.run_(self.store.store(it)), it.id)
        _, path, headers, body = self.srv.data_requests()[0]
        self.assertEqual(path, "/v1/items")
        self.assertEqual(headers["Authorization"], "Bearer secret-token-xyz")
        text = body.decode()
        for literal in ('"created_at":1796513095.4649496', str(2**70 + 1), '"d":1E+400', '"f":0.1', '"tags":["a","a"]'):
            self.assertIn(literal, text)

    def test_store_other_id_or_no_id_is_adapter_error(self):
        it = MemoryItem()
        for body in ({"id": str(uuid.uuid4())}, {}, {"id": "nope"}, {"id": str(it.id), "x": 1}):
            self.srv.answer = lambda m, p, h, b, body=body: (201, "application/json", json.dumps(body).encode())
            with self.assertRaises(MemoryAdapterError) as cm:
                self.run_(self.store.store(it))
            self.assertNotIsInstance(cm.exception, MemoryAdapterUnavailable)

    def test_store_refuses_inexact_values_before_transport(self):
        for content in ("lone \ud800", float("nan"), float("inf"), {1: "int key"}, object(), Decimal("NaN")):
            with self.assertRaises(MemoryAdapterError):
                self.run_(self.store.store(MemoryItem(content=content)))
        with self.assertRaises(MemoryAdapterError):
            self.run_(self.store.store(MemoryItem(tags=["\udfff"])))
        self.assertEqual(self.srv.data_requests(), [])

    def test_u0000_is_sent_as_an_escape(self):
        it = MemoryItem(content="a\u0000b", tags=["\u0000"])
        self.srv.answer = lambda m, p, h, b: (201, "application/json", json.dumps({"id": str(it.id)}).encode())
        self.run_(self.store.store(it))
        self.assertIn(b'"content":"a\\u0000b"', self.srv.data_requests()[0][3])

    def test_retrieve(self):
        it = MemoryItem(created_at=1764975600.5738423, content={"n": Decimal("0.123456789012345678901234567890")}, metadata={"k": 2**64}, tags=["x"])
        self.srv.answer = lambda m, p, h, b: (200, "application/json", json.dumps(wire_item(it), default=str).replace('"0.123456789012345678901234567890"', "0.123456789012345678901234567890").encode())
        got = self.run_(self.store.retrieve(it.id))
        self.assertIsInstance(got, MemoryItem)
        self.assertEqual((got.id, got.tags, got.metadata), (it.id, ["x"], {"k": 2**64}))
        self.assertEqual(got.created_at, 1764975600.5738423)
        self.assertEqual(got.content["n"], Decimal("0.123456789012345678901234567890"))
        self.assertEqual(self.srv.data_requests()[0][1], f"/v1/items/{it.id}")

    def test_retrieve_reads_created_at_as_the_nearest_double(self):
        # A server that writes more digits than the shortest form (another implementation, or
        # an integer) is read as Go's ParseTimestamp and Python's json read it.
        id_ = uuid.uuid4()
        for literal, want in ((b"1796513095.46494960000000000001", 1796513095.4649496), (b"1767225600", 1767225600.0),
                              (b"1767225600.500000", 1767225600.5), (b"-0.0", -0.0)):
            body = b'{"id":"%s","created_at":%s}' % (str(id_).encode(), literal)
            self.srv.answer = lambda m, p, h, b, body=body: (200, "application/json", body)
            got = self.run_(self.store.retrieve(id_))
            self.assertEqual(struct.pack("<d", got.created_at), struct.pack("<d", want), literal)
            self.assertIsInstance(got.created_at, float)

    def test_retrieve_not_found_is_none(self):
        self.srv.answer = lambda m, p, h, b: problem(404, "not_found")
        self.assertIsNone(self.run_(self.store.retrieve(uuid.uuid4())))

    def test_retrieve_404_without_problem_is_an_error(self):
        self.srv.answer = lambda m, p, h, b: (404, "text/html", b"<html>gateway</html>")
        with self.assertRaises(MemoryAdapterError):
            self.run_(self.store.retrieve(uuid.uuid4()))

    def test_retrieve_malformed(self):
        id_ = uuid.uuid4()
        for body in (b"{", b'{"id":"%s"}' % str(id_).encode(), b'{"id":"%s","created_at":1,"extra":1}' % str(id_).encode(),
                     b'{"id":"%s","created_at":1,"tags":[1]}' % str(id_).encode(), b'{"id":"%s","created_at":1e400}' % str(id_).encode(),
                     b'{"id":"%s","created_at":1}' % str(uuid.uuid4()).encode(), b"[" * 100000):
            self.srv.answer = lambda m, p, h, b, body=body: (200, "application/json", body)
            with self.assertRaises(MemoryAdapterError) as cm:
                self.run_(self.store.retrieve(id_))
            self.assertNotIsInstance(cm.exception, MemoryAdapterUnavailable, body[:40])

    def test_problem_types(self):
        cases = [
            (problem(422, "unsupported_query", rejected_keys=["z", "a", "z"]), UnsupportedMemoryQuery),
            (problem(503, "unavailable"), MemoryAdapterUnavailable),
            (problem(502, "adapter_error"), MemoryAdapterError),
            (problem(400, "invalid_request"), MemoryAdapterError),
            (problem(413, "payload_too_large"), MemoryAdapterError),
            (problem(401, "unauthorized"), MemoryAdapterError),
            (problem(422, "unsupported_query"), MemoryAdapterError),
            ((502, "text/html", b"bad gateway"), MemoryAdapterUnavailable),
            ((503, "text/plain", b""), MemoryAdapterUnavailable),
            ((500, "text/plain", b"oops"), MemoryAdapterError),
        ]
        for answer, want in cases:
            self.srv.answer = lambda m, p, h, b, answer=answer: answer
            with self.assertRaises(MemoryAdapterError) as cm:
                self.run_(self.store.search(MemoryQuery(text="x")))
            self.assertIs(type(cm.exception), want, answer)
            if answer[1] == "application/problem+json":
                self.assertIsInstance(cm.exception.__cause__, ProblemError)
        self.srv.answer = lambda m, p, h, b: problem(422, "unsupported_query", rejected_keys=["z", "a", "z"])
        with self.assertRaises(UnsupportedMemoryQuery) as cm:
            self.run_(self.store.search(MemoryQuery(text="x")))
        self.assertEqual(cm.exception.rejected_keys, ("a", "z"))

    def test_governance_refusals_keep_their_problem(self):
        # governance/v1: 403 forbidden, 507 quota_exceeded and 429 rate_limited are
        # MemoryAdapterError (never Unavailable: retrying elsewhere cannot help) with the
        # problem, and the 429's integer Retry-After, chained.
        cases = [
            (problem(403, "forbidden"), None),
            (problem(507, "quota_exceeded"), None),
            (problem(429, "rate_limited") + (0, {"Retry-After": "3"}), 3),
            (problem(429, "rate_limited") + (0, {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}), None),
            (problem(429, "rate_limited") + (0, {"Retry-After": "1" * 12}), None),
        ]
        it = MemoryItem()
        for answer, retry_after in cases:
            self.srv.answer = lambda m, p, h, b, answer=answer: answer
            with self.assertRaises(MemoryAdapterError) as cm:
                self.run_(self.store.store(it))
            self.assertIs(type(cm.exception), MemoryAdapterError, answer)
            pe = cm.exception.__cause__
            self.assertIsInstance(pe, ProblemError)
            self.assertEqual((pe.status, pe.type, pe.retry_after), (answer[0], json.loads(answer[2])["type"], retry_after))

    def test_limit_zero_makes_no_call(self):
        self.assertEqual(self.run_(self.store.search(MemoryQuery(limit=0))), [])
        self.assertEqual(self.srv.requests, [])

    def test_unsupported_filters_rejected_before_transport(self):
        with self.assertRaises(UnsupportedMemoryQuery) as cm:
            self.run_(self.store.search(MemoryQuery(filters={"zeta": 1, "alpha": 2, "source": "x"}, limit=-3)))
        self.assertEqual(cm.exception.rejected_keys, ("alpha", "limit", "zeta"))
        self.assertEqual(str(cm.exception), "unsupported memory query keys: alpha, limit, zeta")
        with self.assertRaises(UnsupportedMemoryQuery):
            self.run_(self.store.search(MemoryQuery(filters={"nope": 1}, limit=0)))
        self.assertEqual(self.srv.data_requests(), [])

    def test_search(self):
        items = [MemoryItem(content=i, tags=["t"]) for i in range(3)]
        self.srv.answer = lambda m, p, h, b: (200, "application/json", json.dumps({"items": [wire_item(i) for i in items]}).encode())
        got = self.run_(self.store.search(MemoryQuery(text="q", filters={"source": "s"}, limit=3)))
        self.assertEqual([g.id for g in got], [i.id for i in items])
        sent = json.loads(self.srv.data_requests()[0][3])
        self.assertEqual(sent, {"text": "q", "tags": None, "filters": {"source": "s"}, "limit": 3})
        with self.assertRaises(MemoryAdapterError):  # more items than the limit
            self.run_(self.store.search(MemoryQuery(limit=2)))
        self.srv.answer = lambda m, p, h, b: (200, "application/json", b'{"items": null}')
        with self.assertRaises(MemoryAdapterError):
            self.run_(self.store.search(MemoryQuery()))

    def test_connection_refused_is_unavailable_with_cause(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        st = RemoteMemoryStore(f"http://127.0.0.1:{port}", token="t")
        for call in (st.store(MemoryItem()), st.retrieve(uuid.uuid4()), st.search(MemoryQuery(text="x"))):
            with self.assertRaises(MemoryAdapterUnavailable) as cm:
                self.run_(call)
            self.assertIsInstance(cm.exception.__cause__, ConnectionRefusedError)

    def test_timeout_is_bounded_and_unavailable(self):
        self.srv.answer = lambda m, p, h, b: (200, "application/json", b'{"items":[]}', 3)
        st = RemoteMemoryStore(self.srv.url, timeout=0.5)
        st._manifest = self.store.manifest  # fetched by the other store
        start = time.monotonic()
        with self.assertRaises(MemoryAdapterUnavailable) as cm:
            self.run_(st.search(MemoryQuery(text="x")))
        self.assertLess(time.monotonic() - start, 2.0)
        self.assertIsInstance(cm.exception.__cause__, (TimeoutError, OSError))

    def test_response_size_bounded(self):
        st = RemoteMemoryStore(self.srv.url, max_response_bytes=1000)
        self.srv.answer = lambda m, p, h, b: (200, "application/json", b'{"items":[' + b" " * 5000 + b"]}")
        with self.assertRaises(MemoryAdapterError) as cm:
            self.run_(st.search(MemoryQuery(text="x")))
        self.assertIn("over 1000 bytes", str(cm.exception))

    def test_calls_do_not_block_the_event_loop(self):
        # The server holds the first search until the second arrives (a sequential client
        # would never send it: the first would give up at 10 s and the check below fails),
        # then answers both after 1 s, during which a free event loop ticks about 50 times
        # and a blocked one not at all. Nothing here depends on how fast the machine is.
        both = threading.Barrier(2)
        in_flight = []

        def answer(m, p, h, b):
            in_flight.append(1)
            try:
                both.wait(timeout=10)
            except threading.BrokenBarrierError:
                pass
            return 200, "application/json", b'{"items":[]}', 1.0

        self.srv.answer = answer
        self.run_(self.store.load_manifest())

        async def main():
            ticks = 0

            async def ticker():
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.02)
                    ticks += 1

            t = asyncio.create_task(ticker())
            await asyncio.gather(self.store.search(MemoryQuery(text="a")), self.store.search(MemoryQuery(text="b")))
            t.cancel()
            return ticks

        ticks = self.run_(main())
        self.assertFalse(both.broken, "the two searches did not overlap")
        self.assertEqual(len(in_flight), 2)
        self.assertGreater(ticks, 5, "the event loop was blocked during the calls")

    def test_token_never_in_repr_or_errors(self):
        self.srv.answer = lambda m, p, h, b: problem(401, "unauthorized")
        with self.assertRaises(MemoryAdapterError) as cm:
            self.run_(self.store.search(MemoryQuery(text="x")))
        self.assertNotIn("secret-token-xyz", repr(self.store) + str(cm.exception) + repr(cm.exception.__cause__))
        with self.assertRaises(MemoryAdapterError) as cm:
            RemoteMemoryStore(self.srv.url, token="bad\r\nX-Injected: 1")
        self.assertNotIn("Injected", str(cm.exception))

    def test_closed_store_refuses(self):
        self.store.close()
        self.store.close()
        with self.assertRaises(MemoryAdapterError):
            self.run_(self.store.search(MemoryQuery(text="x")))

    def test_lion_class_never_sent(self):
        it = MemoryItem(metadata={"source": "s"})
        it.metadata["lion_class"] = f"{type(it).__module__}.{type(it).__qualname__}"
        self.assertEqual(item_to_wire(it)["metadata"], {"source": "s"})

    def test_url_rules(self):
        for url in ("ftp://x", "http://", "http://u:p@host", "http://h/?q=1", "http://h:notaport"):
            with self.assertRaises(MemoryAdapterError):
                RemoteMemoryStore(url)
        with self.assertRaises(MemoryAdapterError):
            RemoteMemoryStore("http://h", ca_cert=b"pem")


if __name__ == "__main__":
    unittest.main()
