"""The governance profiles over the wire, through this client, against the Python example
adapter (examples/python-adapter/server.py --governance): the truthful server passes every
profile with the full claim, each of its governance lies fails the profile meant for it, and
the token file's grants (read-only, sub-scope=NAME) hold for a plain RemoteMemoryStore."""

import asyncio
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import unittest
import uuid

from memory_adapter_client import MemoryAdapterError, MemoryItem, MemoryQuery, ProblemError, RemoteMemoryStore, manifest_hash
from memory_adapter_client.conformance import WireHarness, run
from memory_adapter_client.conformance.suite import PROFILE_IDS, Options

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "..", "..", "..", "examples", "python-adapter", "server.py")

# Every profile exercised, quickly in real time: the burst (10) covers the retention (6
# stores) and bytes (8) parts and the rate part's 11 immediate stores run it out (a rate of
# 5/s refills far slower than they go); the items part (13 stores) waits on one Retry-After.
CLAIM = {
    "read_only": True,
    "isolation": True,
    "retention": {"max_age_seconds": 3600, "max_items": 5, "sweep_period_seconds": 60},
    "quota": {"max_items": 12, "max_bytes": 4096, "writes_per_second": 5, "write_burst": 10},
}
# The example server's governance lies and the profile meant to catch each.
LIES = {
    "read-only-writes": "read-only",
    "sub-scope-leak": "isolation",
    "retention-early": "retention",
    "retention-ignored": "retention",
    "quota-ignored": "quota",
}


class Example:
    """server.py on free loopback ports with the given token file lines, stopped by close()."""

    def __init__(self, token_lines, *args):
        self.dir = tempfile.TemporaryDirectory()
        self.token_file = os.path.join(self.dir.name, "token")
        harness_file = os.path.join(self.dir.name, "harness-token")
        self.token = token_lines[0].split()[0]
        self.harness_token = "harness-" + uuid.uuid4().hex
        with open(self.token_file, "w") as f:
            f.write("\n".join(token_lines) + "\n")
        with open(harness_file, "w") as f:
            f.write(self.harness_token + "\n")
        self.proc = subprocess.Popen(
            [sys.executable, SERVER, "--listen", "127.0.0.1:0", "--token-file", self.token_file,
             "--harness-listen", "127.0.0.1:0", "--harness-token-file", harness_file, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(ln) for ln in self.proc.stdout], daemon=True).start()
        self.url = self.harness_url = None
        while self.url is None or self.harness_url is None:
            try:
                ln = lines.get(timeout=30).strip()
            except queue.Empty:
                self.close()
                raise RuntimeError("server.py printed no listen addresses in 30 s") from None
            key, _, addr = ln.partition("=")
            if key == "LISTEN":
                self.url = "http://" + addr
            elif key == "HARNESS_LISTEN":
                self.harness_url = "http://" + addr

    def harness(self):
        return WireHarness(self.url, self.token, self.harness_url, self.harness_token)

    def close(self):
        self.proc.kill()
        self.proc.wait(10)
        self.proc.stdout.close()
        self.proc.stderr.close()
        self.dir.cleanup()


async def judge(ex, opts=None):
    h = ex.harness()
    await h.load_capabilities()
    try:
        return await run(h, opts)
    finally:
        await h.close()


class ExampleGovernanceTest(unittest.TestCase):
    def start(self, *args, tokens=("data-token",)):
        ex = Example(list(tokens), *args)
        self.addCleanup(ex.close)
        return ex

    def test_truthful_server_passes_every_profile(self):
        ex = self.start("--governance", json.dumps(CLAIM))
        r = asyncio.run(judge(ex))
        self.assertEqual((r.result, r.claim), ("Passed", "full"), r.table())
        self.assertEqual(r.profile_outcomes(), {pid: "Passed" for pid in PROFILE_IDS}, r.table())
        # The published extension is the claim, and the evidence hashes it as the client does.
        store = RemoteMemoryStore(ex.url, token=ex.token)
        m = store.manifest
        self.assertEqual(m.extensions.to_wire(), {"governance/v1": CLAIM})
        self.assertEqual(r.manifest_hash, manifest_hash(m))
        self.assertEqual(store._call("GET", "/v1/evidence", None, 200)["manifest_hash"], manifest_hash(m))

    def test_without_a_claim_nothing_changes(self):
        ex = self.start()
        r = asyncio.run(judge(ex, Options(nested=True)))
        self.assertEqual(r.result, "Passed", r.table())
        self.assertEqual(r.profile_outcomes(), {pid: "NotApplicable" for pid in PROFILE_IDS})
        self.assertIsNone(RemoteMemoryStore(ex.url, token=ex.token).manifest.extensions)
        caps = asyncio.run(ex.harness().load_capabilities())
        self.assertFalse(caps & {"governance_tokens", "retention_sweep"})

    def test_each_lie_fails_its_profile(self):
        for lie, profile in LIES.items():
            with self.subTest(lie):
                ex = Example(["data-token"], "--governance", json.dumps(CLAIM), "--lie", lie)
                try:
                    r = asyncio.run(judge(ex, Options(nested=True)))
                finally:
                    ex.close()
                self.assertEqual(r.result, "Failed", r.table())
                self.assertEqual(r.profile_outcomes()[profile], "Failed", r.table())

    def test_token_file_grants(self):
        ex = self.start("--governance", json.dumps({"read_only": True, "isolation": True}),
                        tokens=("rw-token", "ro-token read-only", "team-token sub-scope=team-a"))
        rw, ro, team = (RemoteMemoryStore(ex.url, token=t) for t in ("rw-token", "ro-token", "team-token"))
        it = MemoryItem(content={"text": "root item"}, tags=["t"])
        self.assertEqual(asyncio.run(rw.store(it)), it.id)
        self.assertEqual(asyncio.run(ro.retrieve(it.id)).content, {"text": "root item"})
        with self.assertRaises(MemoryAdapterError) as cm:
            asyncio.run(ro.store(MemoryItem(content="refused")))
        pe = cm.exception.__cause__
        self.assertIsInstance(pe, ProblemError)
        self.assertEqual((pe.status, pe.type), (403, "forbidden"))
        self.assertIsNone(asyncio.run(team.retrieve(it.id)))
        self.assertEqual(asyncio.run(team.search(MemoryQuery(limit=50))), [])
        mine = MemoryItem(id=it.id, content={"text": "team item"})
        asyncio.run(team.store(mine))
        self.assertEqual(asyncio.run(team.retrieve(it.id)).content, {"text": "team item"})
        self.assertEqual(asyncio.run(rw.retrieve(it.id)).content, {"text": "root item"})

    def test_harness_endpoints_refuse_bad_bodies(self):
        ex = self.start("--governance", json.dumps(CLAIM))
        h = RemoteMemoryStore(ex.harness_url, token=ex.harness_token)
        for path, body in (("/harness/v1/retention-sweep", b'{"after_seconds": 1.5}'),
                           ("/harness/v1/retention-sweep", b'{"after_seconds": -1}'),
                           ("/harness/v1/retention-sweep", b'{"after_seconds": 6324480002}'),
                           ("/harness/v1/retention-sweep", b'{"after_seconds": 1, "x": 1}'),
                           ("/harness/v1/retention-sweep", b'{"after_seconds": ' + b"1" * 2000 + b"}"),
                           ("/harness/v1/governance-tokens", b'{"x": 1}')):
            with self.subTest(body[:40]):
                status, _, data = h._exchange("POST", path, body, ex.harness_token)
                self.assertEqual((status, json.loads(data)["type"]), (400, "invalid_request"))
        status, _, _ = h._exchange("POST", "/harness/v1/retention-sweep", b'{"after_seconds": 6324480001}', ex.harness_token)
        self.assertEqual(status, 204)
        # The retry budget's bound is the client's; the server says when in whole seconds.
        store = RemoteMemoryStore(ex.url, token=ex.token)
        self.assertIsNotNone(store.manifest.extensions.governance.quota)


if __name__ == "__main__":
    unittest.main()
