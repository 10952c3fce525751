"""The Python matrix against the built-in fake: the truthful fake passes with the full
claim, and the manifest-accuracy table catches every lie (which the case itself asserts);
the governance profiles on the governed fake, and every profile check proven needed."""

import asyncio
import json
import unittest

from memory_adapter_client.conformance import CASE_IDS, MemoryAdapterHarness, run
from memory_adapter_client.conformance.fake import GOV_FULL, FakeHarness, run_accuracy_table
from memory_adapter_client.conformance.suite import PROFILE_CHECKS, PROFILE_IDS, Options
from memory_adapter_client.models import Governance, Quota, Retention


class ConformanceTest(unittest.TestCase):
    def test_truthful_fake_passes_full_claim(self):
        h = FakeHarness()
        self.assertIsInstance(h, MemoryAdapterHarness)
        r = asyncio.run(run(h))
        self.assertEqual((r.result, r.claim), ("Passed", "full"), r.table())
        self.assertEqual([c.id for c in r.cases], list(CASE_IDS))
        # No governance claimed: every profile NotApplicable with the reason, reported apart.
        self.assertIsNone(h.manifest.extensions)
        self.assertEqual(r.profile_outcomes(), {pid: "NotApplicable" for pid in PROFILE_IDS})
        profiles = json.loads(json.dumps(r.to_json()))["profiles"]
        self.assertEqual([p["id"] for p in profiles], list(PROFILE_IDS))
        self.assertEqual(set(profiles[0]), {"id", "title", "outcome", "reason", "failures", "notes"})
        self.assertIn("claims no governance/v1", profiles[0]["reason"])

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


class GovernanceProfilesTest(unittest.TestCase):
    def test_governed_fake_passes_every_profile(self):
        h = FakeHarness(governance=GOV_FULL)
        r = asyncio.run(run(h))
        self.assertEqual((r.result, r.claim), ("Passed", "full"), r.table())
        self.assertEqual(r.profile_outcomes(), {pid: "Passed" for pid in PROFILE_IDS}, r.table())
        # The claimed write rate made the profiles wait on Retry-After (on the fake's clock).
        self.assertTrue(any("429 rate_limited" in n for p in r.profiles for n in p.notes), r.table())
        self.assertEqual(r.to_json()["profiles"][3]["title"], "Quotas refuse with typed problems and store nothing")

    def test_unclaimed_and_unexercised_profiles_are_not_applicable(self):
        g = Governance(read_only=False, isolation=True,
                       retention=Retention(max_age_seconds=0, max_items=500, sweep_period_seconds=0),
                       quota=Quota(max_items=0, max_bytes=2 << 20, writes_per_second=3, write_burst=0))
        r = asyncio.run(run(FakeHarness(governance=g)))
        self.assertEqual((r.result, r.claim), ("Passed", "full"), r.table())
        self.assertEqual(r.profile_outcomes(), {"read-only": "NotApplicable", "isolation": "Passed",
                                                "retention": "NotApplicable", "quota": "NotApplicable"})
        reasons = {p.id: p.reason for p in r.profiles}
        self.assertIn("does not claim read_only", reasons["read-only"])
        self.assertIn("max_items 500 not exercised", reasons["retention"])
        self.assertIn("max_bytes 2097152 not exercised", reasons["quota"])
        self.assertIn("write rate 3/s with burst 0 not exercised", reasons["quota"])

    def test_a_missing_governance_capability_gives_a_partial_claim(self):
        class WithoutSweep(FakeHarness):
            # Everything of the governed fake but retention_sweep.
            def has_capability(self, name):
                return name != "retention_sweep"

        class WithoutTokens(FakeHarness):
            make_governance_stores = None

        r = asyncio.run(run(WithoutSweep(governance=GOV_FULL)))
        self.assertEqual((r.result, r.claim), ("Passed", "partial"), r.table())
        self.assertEqual(r.profile_outcomes()["retention"], "NotApplicable")
        self.assertIn("retention_sweep", r.profiles[2].reason)
        self.assertEqual(r.missing_capabilities, ["retention_sweep"])
        self.assertEqual(r.profile_outcomes()["quota"], "Passed")
        r = asyncio.run(run(WithoutTokens(governance=GOV_FULL)))
        self.assertEqual((r.result, r.claim), ("Passed", "partial"), r.table())
        self.assertEqual(r.profile_outcomes(), {pid: "NotApplicable" for pid in PROFILE_IDS})
        self.assertEqual(r.missing_capabilities, ["governance_tokens"])

    def test_a_failed_profile_fails_the_run(self):
        r = asyncio.run(run(FakeHarness(governance=GOV_FULL, governance_knobs=frozenset({"quota-ignored"})), Options(nested=True)))
        self.assertEqual(r.result, "Failed", r.table())
        self.assertEqual({c.outcome for c in r.cases} - {"NotApplicable"}, {"Passed"}, "only the profile failed")
        self.assertIn("507 quota_exceeded", r.profiles[3].failures[0])

    def test_every_profile_check_is_needed(self):
        # As the Go suite's TestEveryCheckIsNeeded: disabling any one named profile check
        # must let at least one lie of the table through. A check no lie depends on would be
        # one the table cannot prove.
        self.assertTrue(asyncio.run(run_accuracy_table(governance_only=True)).ok())
        want = {"read-only/reads", "read-only/refused", "read-only/nothing-stored", "isolation/hidden", "isolation/own-id",
                "retention/not-early", "retention/removed", "retention/max-items", "quota/items", "quota/bytes", "quota/rate"}
        self.assertEqual(PROFILE_CHECKS, want)
        for name in sorted(want):
            with self.subTest(name):
                s = asyncio.run(run_accuracy_table(disabled_check=name, governance_only=True))
                self.assertTrue(s.problems, f"disabling {name} lets no lie through")
                self.assertEqual(s.truthful_passed, s.truthful, s.problems)
                self.assertLess(s.caught, s.total)


if __name__ == "__main__":
    unittest.main()
