"""Tests of server.py's governance/v1 parts (python3 -m unittest test_governance here): the
claim's strict parsing and normalization, the manifest hash with the extension, and a governed
scope's quota, write rate and retention on an injected clock. The whole claim over the wire is
judged by the Python conformance suite (clients/python/tests/test_example_governance.py)."""

import hashlib
import unittest
import uuid

import server

CLAIM = {"read_only": True, "isolation": True,
         "retention": {"max_age_seconds": 3600, "max_items": 0, "sweep_period_seconds": 60},
         "quota": {"max_items": 6, "max_bytes": 0, "writes_per_second": 0, "write_burst": 0}}


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self):
        return self.now


def item(content="x", **over):
    it = {"id": str(uuid.uuid4()), "created_at": 1, "metadata": {}, "content": content, "tags": []}
    it.update(over)
    return it


class ClaimTest(unittest.TestCase):
    def test_parse_refuses(self):
        bad = {
            "not an object": [],
            "missing isolation": {"read_only": True},
            "unknown member": dict(CLAIM, audit=True),
            "read_only a number": dict(CLAIM, read_only=1),
            "float": dict(CLAIM, quota=dict(CLAIM["quota"], max_items=server.loads(b"6.0"))),
            "negative": dict(CLAIM, retention=dict(CLAIM["retention"], max_items=-1)),
            "bool as a number": dict(CLAIM, quota=dict(CLAIM["quota"], write_burst=True)),
            "quota member missing": dict(CLAIM, quota={"max_items": 1}),
            "retention unknown member": dict(CLAIM, retention=dict(CLAIM["retention"], min_age=1)),
            "over 2^50": dict(CLAIM, quota=dict(CLAIM["quota"], max_bytes=(1 << 50) + 1)),
        }
        for name, v in bad.items():
            with self.subTest(name):
                with self.assertRaises(ValueError):
                    server.parse_governance(v)

    def test_normalize(self):
        self.assertEqual(server.normalize_governance(server.parse_governance(CLAIM)), CLAIM)
        zeros = dict(CLAIM, retention={"max_age_seconds": 0, "max_items": 0, "sweep_period_seconds": 5},
                     quota={k: 0 for k in server.QUOTA_MEMBERS})
        self.assertEqual(server.normalize_governance(server.parse_governance(zeros)), {"read_only": True, "isolation": True})
        nothing = dict(zeros, read_only=False, isolation=False)
        self.assertIsNone(server.normalize_governance(server.parse_governance(nothing)))

    def test_hash_with_the_extension(self):
        # The canonical string written out by hand; its hash computed with sha256sum.
        m = server.Adapter("sqlite", None, CLAIM).current_manifest()
        m["supported_filters"] = ["source", "kind"]
        want = ('{"adapter":"sqlite","native_item_fields":["content","created_at","id","metadata","tags"],"dropped_item_fields":[],'
                '"supported_filters":["kind","source"],"search_consistency":"immediate","retrieve_fidelity":"full","search_fidelity":"full",'
                '"search_returns_tags":true,"preserves_metadata":true,"extensions":{"governance/v1":{"read_only":true,"isolation":true,'
                '"retention":{"max_age_seconds":3600,"max_items":0,"sweep_period_seconds":60},"quota":{"max_items":6,"max_bytes":0,'
                '"writes_per_second":0,"write_burst":0}}}}')
        self.assertEqual(server.canonical(m), want)
        self.assertEqual(server.manifest_hash(m), "sha256:b16da64e2225dff8554dac3dce4bfe57870147e816d1d9c0d975b0d3db322c73")
        self.assertEqual(server.manifest_hash(m), "sha256:" + hashlib.sha256(want.encode()).hexdigest())
        # Without a claim (or one that normalizes away) the manifest has no extensions at all.
        for g in (None, {"read_only": False, "isolation": False}):
            self.assertNotIn("extensions", server.Adapter("a", None, g).current_manifest())


class LimitsTest(unittest.TestCase):
    def governed(self, claim, lie=None):
        clock = Clock()
        b = server.Backend(False, server.Limits(server.parse_governance(claim), lie, clock))
        return b, clock

    def test_max_items_refuses_and_stores_nothing(self):
        b, _ = self.governed(CLAIM)
        stored = [item() for _ in range(6)]
        for it in stored:
            b.store(it)
        with self.assertRaises(server.QuotaExceeded):
            b.store(item())
        self.assertEqual([r["item"]["id"] for r in b.records], [it["id"] for it in stored])
        b.store(dict(stored[0], content="an overwrite adds no item"))
        b2, _ = self.governed(CLAIM, "quota-ignored")
        for _ in range(7):
            b2.store(item())

    def test_max_bytes(self):
        claim = dict(CLAIM, quota={"max_items": 0, "max_bytes": 100, "writes_per_second": 0, "write_burst": 0})
        b, _ = self.governed(claim)
        first = item("a" * 40)  # 42 bytes of JSON
        b.store(item("a" * 40))
        b.store(first)
        with self.assertRaises(server.QuotaExceeded):
            b.store(item("a" * 40))
        b.store(dict(first, content="a" * 50))  # replaces 42 bytes by 52: 94 in all

    def test_write_rate(self):
        claim = dict(CLAIM, quota={"max_items": 0, "max_bytes": 0, "writes_per_second": 2, "write_burst": 3})
        b, clock = self.governed(claim)
        for _ in range(3):
            b.store(item())
        with self.assertRaises(server.RateLimited) as cm:
            b.store(item())
        self.assertEqual(cm.exception.retry_after, 1)
        clock.now += 0.5  # one token back
        b.store(item())
        with self.assertRaises(server.RateLimited):
            b.store(item())
        self.assertEqual(len(b.records), 4)

    def test_retention_by_store_time(self):
        b, clock = self.governed(CLAIM)
        # created_at is the client's: dated far in the past it is still kept.
        old = item(created_at=0)
        b.store(old)
        clock.now += 100
        young = item(created_at=10**10)
        b.store(young)
        self.assertEqual(b.sweep(3600 - 100 - 1), 0)
        self.assertEqual(b.sweep(3600 - 100), 1)
        self.assertEqual([r["item"]["id"] for r in b.records], [young["id"]])

    def test_retention_max_items_keeps_the_newest(self):
        claim = dict(CLAIM, retention={"max_age_seconds": 0, "max_items": 2, "sweep_period_seconds": 0})
        b, _ = self.governed(dict(claim, quota={k: 0 for k in server.QUOTA_MEMBERS}))
        its = [item() for _ in range(4)]
        for it in its:
            b.store(it)
        b.store(its[0])  # stored anew: the newest now
        b.sweep()
        self.assertEqual([r["item"]["id"] for r in b.records], [its[3]["id"], its[0]["id"]])

    def test_retention_lies(self):
        b, _ = self.governed(CLAIM, "retention-early")
        b.store(item())
        self.assertEqual(b.sweep(0), 1, "the early sweep removes an item just stored")
        b, _ = self.governed(CLAIM, "retention-ignored")
        b.store(item())
        self.assertEqual(b.sweep(10 * 3600), 0)


if __name__ == "__main__":
    unittest.main()
