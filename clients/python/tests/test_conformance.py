"""The Python matrix against the built-in fake: the truthful fake passes with the full
claim, and the manifest-accuracy table catches every lie (which the case itself asserts)."""

import asyncio
import unittest

from memory_adapter_client.conformance import CASE_IDS, MemoryAdapterHarness, run
from memory_adapter_client.conformance.fake import FakeHarness, run_accuracy_table


class ConformanceTest(unittest.TestCase):
    def test_truthful_fake_passes_full_claim(self):
        h = FakeHarness()
        self.assertIsInstance(h, MemoryAdapterHarness)
        r = asyncio.run(run(h))
        self.assertEqual((r.result, r.claim), ("Passed", "full"), r.table())
        self.assertEqual([c.id for c in r.cases], list(CASE_IDS))

    def test_accuracy_table(self):
        s = asyncio.run(run_accuracy_table())
        self.assertTrue(s.ok(), s)
        self.assertGreaterEqual(s.total, 20)

    def test_a_harness_without_capabilities_gives_a_partial_claim(self):
        class Minimal:
            def __init__(self):
                self.inner = FakeHarness()

            async def make_store(self):
                return await self.inner.make_store()

            async def reset(self):
                await self.inner.reset()

            async def make_search_index_visible(self):
                await self.inner.make_search_index_visible()

            async def make_transport_unavailable(self):
                await self.inner.make_transport_unavailable()

            async def close(self):
                pass

        r = asyncio.run(run(Minimal()))
        self.assertEqual((r.result, r.claim), ("Passed", "partial"), r.table())
        self.assertEqual(r.outcomes()["wrong-native-kind"], "NotApplicable")
        self.assertIn("backend_calls", r.missing_capabilities)


if __name__ == "__main__":
    unittest.main()
