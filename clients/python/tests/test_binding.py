"""from_binding: the projected Service Binding directory, token rotation and CA-only TLS."""

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import uuid

from fakeserver import FakeServer, problem

from memory_adapter_client import MemoryAdapterError, MemoryAdapterUnavailable, MemoryQuery, binding_dir, from_binding


def project(dir_, files):
    """Write files the way the kubelet projects a Secret: a new timestamped directory, the
    ..data symlink swapped to it atomically, and each name a symlink through ..data."""
    ts = os.path.join(dir_, f"..{uuid.uuid4().hex}")
    os.mkdir(ts)
    for name, data in files.items():
        with open(os.path.join(ts, name), "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
    tmp = os.path.join(dir_, "..data_tmp")
    os.symlink(os.path.basename(ts), tmp)
    os.replace(tmp, os.path.join(dir_, "..data"))
    for name in files:
        link = os.path.join(dir_, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join("..data", name), link)


class BindingTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.srv = FakeServer()
        self.addCleanup(self.srv.close)
        self.tokens = {"tok-1"}

        def answer(m, p, h, b):
            if h.get("Authorization", "").removeprefix("Bearer ") not in self.tokens:
                return problem(401, "unauthorized")
            return 200, "application/json", b'{"items":[]}'

        self.srv.answer = answer

    def test_rules(self):
        cases = [
            ({"type": "memory-adapter\n", "url": self.srv.url, "token": "tok-secret-777"}, None),
            ({"type": "other", "url": self.srv.url, "token": "t"}, "want memory-adapter"),
            ({"type": "memory-adapter", "url": self.srv.url}, "token"),
            ({"type": "memory-adapter", "url": self.srv.url, "token": "t" * 4097}, "longer than 4096"),
            ({"type": "memory-adapter", "url": self.srv.url, "token": "t", "ca.crt": "-----BEGIN CERTIFICATE-----"}, "not https"),
            ({"type": "memory-adapter", "url": "ftp://x", "token": "t"}, "http(s)"),
        ]
        for files, want in cases:
            d = tempfile.mkdtemp(dir=self.dir)
            project(d, files)
            if want is None:
                st = from_binding(d)
                self.assertEqual(self.srv.requests, [], "no call at construction")
                self.assertNotIn("tok-secret-777", repr(st))
                continue
            with self.assertRaises(MemoryAdapterError) as cm:
                from_binding(d)
            self.assertIn(want, str(cm.exception) + str(cm.exception.__cause__))

    def test_reads_stay_inside_the_binding(self):
        outside = os.path.join(self.dir, "secret")
        with open(outside, "w") as f:
            f.write("outside")
        d = os.path.join(self.dir, "b")
        os.mkdir(d)
        for name, data in (("type", "memory-adapter"), ("url", self.srv.url)):
            with open(os.path.join(d, name), "w") as f:
                f.write(data)
        os.symlink(outside, os.path.join(d, "token"))
        with self.assertRaises(MemoryAdapterError) as cm:
            from_binding(d)
        self.assertIn("outside the binding directory", str(cm.exception))

    def test_binding_dir(self):
        self.assertEqual(binding_dir("mem-a", root="/b"), "/b/mem-a")
        for bad in ("../x", "A", "-a", "a" * 41):
            with self.assertRaises(MemoryAdapterError):
                binding_dir(bad, root="/b")

    def test_token_rotation_via_projected_symlink(self):
        project(self.dir, {"type": "memory-adapter", "url": self.srv.url, "token": "tok-1"})
        st = from_binding(self.dir)
        asyncio.run(st.search(MemoryQuery(text="a")))
        # The server moves to tok-2 and the kubelet projects it: the next call sends tok-2 at
        # once (the file's stat changed), with no 401 in between.
        self.tokens = {"tok-2"}
        project(self.dir, {"type": "memory-adapter", "url": self.srv.url, "token": "tok-2"})
        before = len(self.srv.requests)
        asyncio.run(st.search(MemoryQuery(text="b")))
        sent = [r[2].get("Authorization") for r in self.srv.requests[before:]]
        self.assertEqual(sent, ["Bearer tok-2"])

    def test_401_rereads_once_and_retries_once(self):
        project(self.dir, {"type": "memory-adapter", "url": self.srv.url, "token": "tok-1"})
        st = from_binding(self.dir)
        asyncio.run(st.search(MemoryQuery(text="a")))
        # Rewrite the token in place with the same size and mtime: the stat does not change,
        # so only the 401 makes the client read it again.
        path = os.path.realpath(os.path.join(self.dir, "token"))
        stt = os.stat(path)
        with open(path, "w") as f:
            f.write("tok-3")
        os.utime(path, ns=(stt.st_atime_ns, stt.st_mtime_ns))
        self.tokens = {"tok-3"}
        before = len(self.srv.requests)
        asyncio.run(st.search(MemoryQuery(text="b")))
        sent = [r[2].get("Authorization") for r in self.srv.requests[before:]]
        self.assertEqual(sent, ["Bearer tok-1", "Bearer tok-3"])
        # A 401 with an unchanged token is not retried.
        self.tokens = set()
        before = len(self.srv.requests)
        with self.assertRaises(MemoryAdapterError) as cm:
            asyncio.run(st.search(MemoryQuery(text="c")))
        self.assertEqual(len(self.srv.requests) - before, 1)
        self.assertNotIn("tok-3", str(cm.exception))


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


class TLSTest(unittest.TestCase):
    """A throwaway CA made with the openssl CLI (required: the test fails without it)."""

    @classmethod
    def setUpClass(cls):
        if shutil.which("openssl") is None:
            raise AssertionError("openssl is required for the TLS tests (apt-get install openssl)")
        cls.dir = tempfile.mkdtemp()
        d = cls.dir
        for ca in ("ca", "other-ca"):
            openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{ca}.key",
                    "-out", f"{ca}.crt", "-days", "2", "-subj", f"/CN={ca}", cwd=d)
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "server.key", "-out", "server.csr",
                "-subj", "/CN=adapter", cwd=d)
        with open(os.path.join(d, "ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n")
        openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.crt",
                "-days", "2", "-extfile", "ext", cwd=d)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def binding(self, url, ca):
        d = tempfile.mkdtemp(dir=self.dir)
        with open(os.path.join(self.dir, ca), "rb") as f:
            project(d, {"type": "memory-adapter", "url": url, "token": "tok", "ca.crt": f.read()})
        return d

    def test_ca_only(self):
        srv = FakeServer(os.path.join(self.dir, "server.crt"), os.path.join(self.dir, "server.key"))
        self.addCleanup(srv.close)
        srv.answer = lambda m, p, h, b: (200, "application/json", b'{"items":[]}')
        st = from_binding(self.binding(srv.url, "ca.crt"))
        self.assertEqual(asyncio.run(st.search(MemoryQuery(text="x"))), [])
        # Only the binding's CA is trusted: exactly one CA certificate in the context.
        self.assertEqual(len(st._tls_context().get_ca_certs()), 1)
        other = from_binding(self.binding(srv.url, "other-ca.crt"))
        with self.assertRaises(MemoryAdapterUnavailable) as cm:
            asyncio.run(other.search(MemoryQuery(text="x")))
        self.assertIn("CERTIFICATE_VERIFY_FAILED", str(cm.exception.__cause__))

    def test_ca_rotation_is_followed(self):
        srv = FakeServer(os.path.join(self.dir, "server.crt"), os.path.join(self.dir, "server.key"))
        self.addCleanup(srv.close)
        srv.answer = lambda m, p, h, b: (200, "application/json", b'{"items":[]}')
        d = self.binding(srv.url, "other-ca.crt")
        st = from_binding(d)
        with self.assertRaises(MemoryAdapterUnavailable):
            asyncio.run(st.search(MemoryQuery(text="x")))
        with open(os.path.join(self.dir, "ca.crt"), "rb") as f:
            project(d, {"type": "memory-adapter", "url": srv.url, "token": "tok", "ca.crt": f.read()})
        self.assertEqual(asyncio.run(st.search(MemoryQuery(text="x"))), [])


if __name__ == "__main__":
    unittest.main()
