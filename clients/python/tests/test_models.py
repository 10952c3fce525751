"""The seed's types under each implementation: lionagi (the test-only stand-in), pydantic 2
(when this Python has it) and the standard library (pydantic blocked). Each mode runs in a
subprocess, so one import's choice cannot leak into another."""

import os
import subprocess
import sys
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

BLOCK_PYDANTIC = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name == "pydantic" or name.startswith("pydantic."):
            raise ImportError("pydantic blocked by the test")
sys.meta_path.insert(0, _Block())
"""

COMMON = r'''
import asyncio, json, uuid
from decimal import Decimal
import memory_adapter_client as mac
from memory_adapter_client import *
from memory_adapter_client.models import manifest_from_wire, manifest_hash, manifest_to_wire, governance_of
from memory_adapter_client import jsonexact

# The six coherence rules, in order, with the seed's messages.
base = dict(adapter="a", native_item_fields=frozenset({"id","created_at","metadata","content","tags"}),
            dropped_item_fields=frozenset(), supported_filters=frozenset({"source"}), search_consistency="immediate",
            retrieve_fidelity="full", search_fidelity="full", search_returns_tags=True, preserves_metadata=True)
m = MemoryAdapterManifest(**base)
cases = [
    (dict(dropped_item_fields=frozenset({"tags"})), "native and dropped item fields must be disjoint"),
    (dict(native_item_fields=frozenset({"id","content","tags","metadata"})), "every MemoryItem field must be classified"),
    (dict(native_item_fields=frozenset({"id","created_at","metadata","content"}), dropped_item_fields=frozenset({"tags"})), "id, content, and tags are required native fields"),
    (dict(native_item_fields=frozenset({"id","created_at","content","tags"}), dropped_item_fields=frozenset({"metadata"}), retrieve_fidelity="lossy", search_fidelity="lossy"), "preserved metadata must be a native field"),
    (dict(preserves_metadata=False, search_fidelity="lossy"), "full retrieve fidelity must preserve every item field"),
    (dict(search_returns_tags=False), "full search fidelity must preserve all fields and tags"),
]
for change, msg in cases:
    try:
        MemoryAdapterManifest(**dict(base, **change))
    except ValueError as e:
        assert msg in str(e), (msg, str(e))
    else:
        raise AssertionError("accepted: " + msg)
for bad in (dict(adapter=""), dict(search_consistency="soon"), dict(retrieve_fidelity="perfect")):
    try:
        MemoryAdapterManifest(**dict(base, **bad))
    except ValueError:
        pass
    else:
        raise AssertionError(f"accepted {bad}")
try:
    m.adapter = "b"
except Exception:
    pass
else:
    raise AssertionError("manifest not frozen")
try:
    MemoryAdapterManifest(**dict(base, extra_field=1))
except (ValueError, TypeError):
    pass
else:
    raise AssertionError("extra field accepted")

# Known-answer vectors of the manifest hash.
with open(REPO + "/api/memory/testdata/manifest_hash_vectors.json", encoding="utf-8") as f:
    for v in json.load(f)["vectors"]:
        got = manifest_hash(manifest_from_wire(v["manifest"]))
        assert got == v["manifest_hash"], (v["name"], got)

# governance/v1 (shared-notes/governance-v1.md §1): canonical strings written out by hand, their
# hashes computed with sha256sum over them (printf '%s' ... | sha256sum), not with this code.
full_wire = {"adapter": "sqlite", "native_item_fields": ["id", "created_at", "metadata", "content", "tags"],
             "dropped_item_fields": [], "supported_filters": ["source", "kind"], "search_consistency": "immediate",
             "retrieve_fidelity": "full", "search_fidelity": "full", "search_returns_tags": True, "preserves_metadata": True}
BASE_CANON = ('{"adapter":"sqlite","native_item_fields":["content","created_at","id","metadata","tags"],"dropped_item_fields":[],'
              '"supported_filters":["kind","source"],"search_consistency":"immediate","retrieve_fidelity":"full","search_fidelity":"full",'
              '"search_returns_tags":true,"preserves_metadata":true')
gov_vectors = [
    ({"governance/v1": {"quota": {"write_burst": 0, "writes_per_second": 0, "max_bytes": 0, "max_items": 6}, "isolation": True, "read_only": True,
                        "retention": {"sweep_period_seconds": 60, "max_items": 0, "max_age_seconds": 3600}}},
     BASE_CANON + ',"extensions":{"governance/v1":{"read_only":true,"isolation":true,"retention":{"max_age_seconds":3600,"max_items":0,'
     '"sweep_period_seconds":60},"quota":{"max_items":6,"max_bytes":0,"writes_per_second":0,"write_burst":0}}}}',
     "sha256:b16da64e2225dff8554dac3dce4bfe57870147e816d1d9c0d975b0d3db322c73"),
    # a retention of zeros is dropped, read_only/isolation false are kept while a quota is left
    ({"governance/v1": {"read_only": False, "isolation": False, "retention": {"max_age_seconds": 0, "max_items": 0, "sweep_period_seconds": 30},
                        "quota": {"max_items": 0, "max_bytes": 1048576, "writes_per_second": 5, "write_burst": 10}}},
     BASE_CANON + ',"extensions":{"governance/v1":{"read_only":false,"isolation":false,"quota":{"max_items":0,"max_bytes":1048576,'
     '"writes_per_second":5,"write_burst":10}}}}',
     "sha256:06d7a9bb272a170557c44fa5155c9c559a49aa085a83badeae97ac80c4511d24"),
]
for ext, canon, want in gov_vectors:
    gm = manifest_from_wire(dict(full_wire, extensions=ext))
    assert jsonexact.dumps(manifest_to_wire(gm)).decode() == canon, jsonexact.dumps(manifest_to_wire(gm))
    assert manifest_hash(gm) == want, (manifest_hash(gm), want)
    assert manifest_from_wire(manifest_to_wire(gm)) == gm and hash(manifest_from_wire(manifest_to_wire(gm))) == hash(gm)
    assert MemoryAdapterManifest(**dict(base, extensions=ext)).extensions == gm.extensions
g = governance_of(manifest_from_wire(dict(full_wire, extensions=gov_vectors[0][0])))
assert (g.read_only, g.isolation, g.retention.max_age_seconds, g.quota.max_items) == (True, True, 3600, 6), g
# Normalized away entirely: equal to, and hashing as, the manifest without extensions.
plain = manifest_from_wire(full_wire)
for empty in ({}, {"governance/v1": {"read_only": False, "isolation": False}},
              {"governance/v1": {"read_only": False, "isolation": False,
                                 "retention": {"max_age_seconds": 0, "max_items": 0, "sweep_period_seconds": 9},
                                 "quota": {"max_items": 0, "max_bytes": 0, "writes_per_second": 0, "write_burst": 0}}}):
    em = manifest_from_wire(dict(full_wire, extensions=empty))
    assert em.extensions is None and em == plain and manifest_hash(em) == manifest_hash(plain), empty
    assert "extensions" not in manifest_to_wire(em)
# Strict: unknown names and members, missing members, wrong kinds, floats, negatives, too large.
okq = {"max_items": 1, "max_bytes": 0, "writes_per_second": 0, "write_burst": 0}
okr = {"max_age_seconds": 1, "max_items": 0, "sweep_period_seconds": 0}
def gov(**kw):
    return {"governance/v1": dict({"read_only": True, "isolation": False}, **kw)}
refused = {
    "unknown extension": {"governance/v2": {}},
    "extensions not an object": [],
    "governance not an object": {"governance/v1": None},
    "missing isolation": {"governance/v1": {"read_only": True}},
    "unknown member": gov(audit=True),
    "read_only a number": {"governance/v1": {"read_only": 1, "isolation": False}},
    "isolation null": {"governance/v1": {"read_only": True, "isolation": None}},
    "retention null": gov(retention=None),
    "retention member missing": gov(retention={"max_age_seconds": 1, "max_items": 0}),
    "retention unknown member": gov(retention=dict(okr, min_age_seconds=1)),
    "quota unknown member": gov(quota=dict(okq, max_tags=1)),
    "quota member missing": gov(quota={"max_items": 1, "max_bytes": 0, "writes_per_second": 0}),
    "float": gov(quota=dict(okq, max_items=1.0)),
    "float from the wire": gov(quota=dict(okq, max_items=jsonexact.loads("2.5"))),
    "exponent": gov(retention=dict(okr, max_age_seconds=jsonexact.loads("1e3"))),
    "negative": gov(retention=dict(okr, max_items=-1)),
    "bool as int": gov(quota=dict(okq, write_burst=True)),
    "string as int": gov(quota=dict(okq, max_bytes="10")),
    "over 2^50": gov(quota=dict(okq, max_bytes=(1 << 50) + 1)),
}
for name, ext in refused.items():
    try:
        manifest_from_wire(dict(full_wire, extensions=ext))
    except ValueError:
        pass
    else:
        raise AssertionError("accepted extensions: " + name)
    try:
        MemoryAdapterManifest(**dict(base, extensions=ext))
    except (ValueError, TypeError):
        pass
    else:
        raise AssertionError("the model accepted extensions: " + name)

e = UnsupportedMemoryQuery(["b", "a", "b", "limit"])
assert e.rejected_keys == ("a", "b", "limit") and str(e) == "unsupported memory query keys: a, b, limit"
assert isinstance(e, MemoryAdapterError) and isinstance(MemoryAdapterUnavailable(), MemoryAdapterError)
assert issubclass(MemoryAdapterError, RuntimeError)

it = MemoryItem(content={"x": 1}, tags=["a", "a"])
assert isinstance(it.id, uuid.UUID) and isinstance(it.created_at, float) and it.metadata == {} and it.tags == ["a", "a"]
for frozen in ("id", "created_at"):
    try:
        setattr(it, frozen, None)
    except Exception:
        pass
    else:
        raise AssertionError(frozen + " not frozen")
q = MemoryQuery()
assert (q.text, q.tags, q.filters, q.limit) == (None, None, None, 20)
print("IMPLEMENTATION", mac.IMPLEMENTATION)
'''

LIONAGI = r'''
import lionagi
from lionagi import Branch
from lionagi.protocols.memory import MemoryItem as LItem, MemoryQuery as LQuery, MemoryStore as LStore
assert mac.MemoryItem is LItem and mac.MemoryQuery is LQuery and mac.MemoryStore is LStore
from fakeserver import FakeServer
srv = FakeServer()
st = RemoteMemoryStore(srv.url, token="t")
assert isinstance(st, LStore)
b = Branch(memory=st)
assert b.memory is st
it = LItem(content={"n": 1}, metadata={"source": "s"}, tags=["x"])
d = it.to_dict()
assert "lion_class" in d["metadata"]  # lionagi's marker, which must never go on the wire
srv.answer = lambda m, p, h, body: (201, "application/json", json.dumps({"id": str(it.id)}).encode())
assert asyncio.run(b.memory.store(it)) == it.id
sent = json.loads(srv.data_requests()[0][3])
assert sent["metadata"] == {"source": "s"}, sent
srv.answer = lambda m, p, h, body: (200, "application/json", json.dumps(sent).encode())
got = asyncio.run(b.memory.retrieve(it.id))
assert type(got) is LItem and got.id == it.id and got.tags == ["x"] and got.content == {"n": 1}
srv.answer = lambda m, p, h, body: (200, "application/json", json.dumps({"items": [sent]}).encode())
hits = asyncio.run(b.memory.search(LQuery(text="n")))
assert [type(h) for h in hits] == [LItem]
srv.close()
'''


def run_mode(testcase, prelude, extra_path, body):
    code = prelude + f"\nREPO = {REPO!r}\n" + textwrap.dedent(COMMON) + body
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*extra_path, SRC, HERE]), PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    testcase.assertEqual(p.returncode, 0, p.stdout + p.stderr)
    return p.stdout


def have_pydantic():
    try:
        import pydantic  # noqa: F401

        return True
    except ImportError:
        return False


class ModelsTest(unittest.TestCase):
    def test_stdlib(self):
        out = run_mode(self, BLOCK_PYDANTIC, [], "")
        self.assertIn("IMPLEMENTATION stdlib", out)

    def test_pydantic_or_stdlib_as_installed(self):
        out = run_mode(self, "", [], "")
        # Not a skip: this Python's own choice is checked, whichever it is.
        self.assertIn("IMPLEMENTATION " + ("pydantic" if have_pydantic() else "stdlib"), out)

    def test_lionagi_standin(self):
        out = run_mode(self, "", [os.path.join(HERE, "standin")], LIONAGI)
        self.assertIn("IMPLEMENTATION lionagi", out)


if __name__ == "__main__":
    unittest.main()
