"""Client checks against a live adapter server (run by test/pyclient with MAC_TARGET_URL,
MAC_TOKEN and MAC_BACKEND set; not collected by unittest discovery, whose pattern is test*.py).
"""

import asyncio
import os
import struct
import time
import unittest
import uuid
from decimal import Decimal

from memory_adapter_client import MemoryAdapterError, MemoryItem, MemoryQuery, RemoteMemoryStore
from memory_adapter_client.conformance import json_equal

URL = os.environ["MAC_TARGET_URL"]
TOKEN = os.environ["MAC_TOKEN"]
BACKEND = os.environ["MAC_BACKEND"]


def bits(f):
    return struct.pack("<d", f)


class LiveClientChecks(unittest.TestCase):
    def setUp(self):
        self.store = RemoteMemoryStore(URL, token=TOKEN)

    def roundtrip(self, **fields):
        it = MemoryItem(**fields)
        self.assertEqual(asyncio.run(self.store.store(it)), it.id)
        got = asyncio.run(self.store.retrieve(it.id))
        self.assertIsNotNone(got)
        return it, got

    def test_numbers_exact(self):
        content = {
            "big": 2**64 + 1,
            "huge": Decimal("1e400"),
            "long": Decimal("0.123456789012345678901234567890"),
            "neg": Decimal("-1E-400"),
            "float": 0.1,
            "int53": 9007199254740993,
        }
        it, got = self.roundtrip(content=content, metadata={"n": Decimal("3.14159265358979323846264338327950288")}, tags=["numbers"])
        self.assertTrue(json_equal(got.content, content), got.content)
        self.assertTrue(json_equal(got.metadata, it.metadata), got.metadata)
        self.assertIsInstance(got.content["huge"], Decimal)
        self.assertEqual(got.content["big"], 2**64 + 1)

    def test_u0000(self):
        it = MemoryItem(content="a\u0000b", metadata={"source": "\u0000"}, tags=["\u0000"])
        if BACKEND == "postgres":
            # jsonb cannot hold U+0000: the documented rejection, never an altered value.
            with self.assertRaises(MemoryAdapterError):
                asyncio.run(self.store.store(it))
            self.assertIsNone(asyncio.run(self.store.retrieve(it.id)))
            return
        _, got = self.roundtrip(content=it.content, metadata=it.metadata, tags=it.tags)
        self.assertEqual((got.content, got.metadata, got.tags), (it.content, it.metadata, it.tags))

    def test_lone_surrogate_refused_before_transport(self):
        it = MemoryItem(content="x\ud800", tags=["t"])
        with self.assertRaises(MemoryAdapterError):
            asyncio.run(self.store.store(it))
        self.assertIsNone(asyncio.run(self.store.retrieve(it.id)))

    def test_non_bmp_and_escapes(self):
        content = {"s": "𝄞 ✓ \"quoted\" \\ </script> \u2028 \t", "k\u00e9y": ["ünï"]}
        _, got = self.roundtrip(content=content, tags=["𝄞", "𝄞"])
        self.assertEqual(got.content, content)
        self.assertEqual(got.tags, ["𝄞", "𝄞"])

    def test_search_returns_stored_items(self):
        it, _ = self.roundtrip(content={"needle": str(uuid.uuid4())}, metadata={"source": "live"}, tags=["live"])
        hits = asyncio.run(self.store.search(MemoryQuery(text=it.content["needle"], limit=5)))
        self.assertEqual([h.id for h in hits], [it.id])

    def test_created_at_bit_exact(self):
        # contract.md §3 (revised 2026-12): created_at round-trips bit-exactly at full.
        for value in (1796513095.4649496, time.time(), 1764975600.5738423):
            _, got = self.roundtrip(created_at=value, content="created_at", tags=[])
            self.assertEqual(bits(got.created_at), bits(value), f"stored {value!r}, read back {got.created_at!r}")


if __name__ == "__main__":
    unittest.main()
