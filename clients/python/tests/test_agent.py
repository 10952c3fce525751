"""The watching agent (python3 -m memory_adapter_client.agent): its lines in the Go agent's
format, against a local http.server acting as the adapter, and a token rotation through the
kubelet's ..data symlink picked up by the one long-lived store."""

import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from datetime import datetime

from fakeserver import MANIFEST, FakeServer, problem
from test_binding import project

from memory_adapter_client import agent, client

# The e2e suite's agentAnswers (test/e2e/faults_test.go): prefix, an RFC 3339 time, the
# operation, the answer, an optional " | detail".
LINE = re.compile(r"^agent-check watch: (\S+) (store|retrieve) (.*)$")


def parse(text):
    """(op, answer, detail) per line, as agentAnswers cuts them; the time must parse."""
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            raise AssertionError(f"not an agent line: {line!r}")
        ts, op, answer = m.groups()
        # Go's RFC3339Nano: Z, and up to nine fraction digits without trailing zeros.
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,8}[1-9])?Z", ts), ts
        datetime.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")
        answer, _, detail = answer.partition(" | ")
        out.append((op, answer, detail))
    return out


class Adapter:
    """A scripted adapter: keeps stored items, checks the bearer token, and can be told to
    answer otherwise (an outage, a bad copy)."""

    def __init__(self, srv, tokens):
        self.srv = srv
        self.tokens = tokens
        self.items = {}
        self.mode = "ok"
        self.unauthorized = 0
        self.lock = threading.Lock()
        srv.answer = self.answer

    def answer(self, method, path, headers, body):
        if headers.get("Authorization", "").removeprefix("Bearer ") not in self.tokens:
            self.unauthorized += 1
            return problem(401, "unauthorized")
        if self.mode == "outage":
            return problem(503, "unavailable", detail="backend   down\nfor maintenance")
        if self.mode == "gateway":
            return 502, "text/html; charset=utf-8", b"<html>bad gateway</html>"
        if method == "POST" and path == "/v1/items":
            item = json.loads(body)
            with self.lock:
                self.items[item["id"]] = item
            return 201, "application/json", json.dumps({"id": item["id"]}).encode()
        if method == "GET" and path.startswith("/v1/items/"):
            with self.lock:
                item = self.items.get(path.rsplit("/", 1)[1])
            if item is None:
                return problem(404, "not_found")
            if self.mode == "lossy":
                item = dict(item, created_at=round(item["created_at"], 3) + 0.0001)
            if self.mode == "forget":
                return problem(404, "not_found")
            return 200, "application/json", json.dumps(item).encode()
        return problem(400, "invalid_request")


class AgentTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root)
        self.srv = FakeServer()
        self.addCleanup(self.srv.close)
        self.adapter = Adapter(self.srv, {"tok-1"})
        self.bdir = os.path.join(self.root, "team-memory")
        os.mkdir(self.bdir)
        project(self.bdir, {"type": "memory-adapter", "url": self.srv.url, "token": "tok-1"})
        os.environ["SERVICE_BINDING_ROOT"] = self.root
        self.addCleanup(os.environ.pop, "SERVICE_BINDING_ROOT", None)

    def watch(self, *extra, timeout="60", calls="3"):
        """Three calls (the run ends on them, not on a clock a loaded machine can run out),
        within a timeout only a hung agent reaches; a test of the timeout sets both."""
        out = io.StringIO()
        start = time.monotonic()
        rc = agent.main(["--adapter", "team-memory", "--interval", "0.1", "--timeout", timeout, "--calls", calls, *extra],
                        out=out)
        self.assertEqual(rc, 0)
        if calls != "0":
            self.assertLess(time.monotonic() - start, float(timeout), "the run ended on its timeout, not its calls")
        return parse(out.getvalue())

    def test_store_and_read_back(self):
        lines = self.watch("--read-back")
        self.assertEqual(len(lines), 6, lines)
        for i, (op, answer, detail) in enumerate(lines):
            self.assertEqual(op, "store" if i % 2 == 0 else "retrieve")
            self.assertEqual(answer, "201 application/json -" if op == "store" else "200 application/json -")
            self.assertEqual(detail, "")
        item = next(iter(self.adapter.items.values()))
        self.assertEqual(item["metadata"], {"source": "python-agent"})
        self.assertEqual(item["tags"], ["python-agent"])
        self.assertIsInstance(item["content"], dict)
        self.assertAlmostEqual(item["created_at"], time.time(), delta=30)

    def test_store_only(self):
        lines = self.watch()
        self.assertEqual(len(lines), 3, lines)
        self.assertEqual({(op, a) for op, a, _ in lines}, {("store", "201 application/json -")})

    def test_outage_is_a_typed_answer_with_detail(self):
        self.adapter.mode = "outage"
        lines = self.watch("--read-back")
        self.assertEqual(len(lines), 3, lines)
        for op, answer, detail in lines:
            self.assertEqual((op, answer), ("store", "503 application/problem+json unavailable"))
            self.assertEqual(detail, "backend down for maintenance")

    def test_gateway_answer_without_problem(self):
        self.adapter.mode = "gateway"
        lines = self.watch()
        self.assertEqual({a for _, a, _ in lines}, {"502 text/html -"})

    def test_unauthorized(self):
        self.adapter.tokens = {"other"}
        lines = self.watch()
        self.assertEqual(len(lines), 3, lines)
        self.assertEqual({a for _, a, _ in lines}, {"401 application/problem+json unauthorized"})

    def test_mismatch_at_full_fidelity(self):
        self.adapter.mode = "lossy"
        lines = self.watch("--read-back")
        self.assertIn(("retrieve", "200 application/json mismatch", ""), lines)
        self.assertNotIn(("retrieve", "200 application/json -", ""), lines)

    def test_partial_fidelity_tolerates_microseconds_only(self):
        self.srv.manifest = dict(MANIFEST, retrieve_fidelity="partial", search_fidelity="partial")
        self.adapter.mode = "lossy"  # created_at off by more than a microsecond: still a mismatch
        self.assertIn(("retrieve", "200 application/json mismatch", ""), self.watch("--read-back"))

    def test_not_found_on_read_back(self):
        self.adapter.mode = "forget"
        lines = self.watch("--read-back")
        self.assertIn(("retrieve", "404 application/problem+json not_found", "scripted"), lines)

    def test_refused_connection_is_an_error_line(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        project(self.bdir, {"type": "memory-adapter", "url": f"http://127.0.0.1:{port}", "token": "tok-1"})
        lines = self.watch(calls="1")
        self.assertEqual(len(lines), 1, lines)
        for op, answer, _ in lines:
            self.assertEqual(op, "store")
            self.assertTrue(answer.startswith("error: "), answer)
            self.assertIn("ConnectionRefusedError", answer)

    def test_token_rotation_through_data_symlink(self):
        """The kubelet swaps ..data; the one store sends the new token from the next call on:
        not one 401, and the old token is never sent after the swap."""
        out = io.StringIO()
        made = []
        real = client.RemoteMemoryStore.__init__

        def counting(self_, *a, **kw):
            made.append(1)
            real(self_, *a, **kw)

        client.RemoteMemoryStore.__init__ = counting
        self.addCleanup(setattr, client.RemoteMemoryStore, "__init__", real)

        def rotate():
            # After the agent's first calls (not after a time a loaded machine may not reach).
            deadline = time.monotonic() + 30
            while len(self.srv.data_requests()) < 4 and time.monotonic() < deadline:
                time.sleep(0.01)
            # The server trusts both for a moment (a call that read the old token just
            # before the swap is still in flight), then only the new one.
            self.adapter.tokens = {"tok-1", "tok-2"}
            project(self.bdir, {"type": "memory-adapter", "url": self.srv.url, "token": "tok-2"})
            time.sleep(0.15)
            self.adapter.tokens = {"tok-2"}
            rotated.set()

        rotated = threading.Event()
        t = threading.Thread(target=rotate)
        t.start()
        rc = agent.main(["--adapter", "team-memory", "--interval", "0.1", "--timeout", "60", "--calls", "15", "--read-back"],
                        out=out)
        t.join()
        self.assertEqual(rc, 0)
        self.assertTrue(rotated.is_set())
        lines = parse(out.getvalue())
        self.assertEqual(len(made), 1, "the agent made more than one store")
        self.assertFalse([a for _, a, _ in lines if a.startswith("401")], lines)
        # Picked up by the re-read before each call, not by the client's retry after a 401.
        self.assertEqual(self.adapter.unauthorized, 0)
        self.assertEqual({a for _, a, _ in lines}, {"201 application/json -", "200 application/json -"})
        sent = [r[2].get("Authorization") for r in self.srv.data_requests()]
        self.assertIn("Bearer tok-1", sent)
        self.assertIn("Bearer tok-2", sent)
        # Once tok-2 was sent, tok-1 never again.
        self.assertNotIn("Bearer tok-1", sent[sent.index("Bearer tok-2") :])

    def test_call_in_flight_at_timeout_is_not_printed(self):
        self.srv.answer = lambda m, p, h, b: (201, "application/json", b"{}", 2.0)
        start = time.monotonic()
        self.assertEqual(self.watch(timeout="0.3", calls="0"), [])
        self.assertLess(time.monotonic() - start, 1.5, "the agent waited for a call past its timeout")

    def test_bad_binding_exits_1(self):
        out = io.StringIO()
        err = io.StringIO()
        old, sys.stderr = sys.stderr, err
        try:
            rc = agent.main(["--adapter", "missing", "--timeout", "1"], out=out)
        finally:
            sys.stderr = old
        self.assertEqual(rc, 1)
        self.assertEqual(out.getvalue(), "")
        self.assertIn("binding", err.getvalue())

    def test_calls_bounds(self):
        for bad in ("-1", "1000001", "x"):
            err = io.StringIO()
            old, sys.stderr = sys.stderr, err
            try:
                with self.assertRaises(SystemExit):
                    agent.main(["--adapter", "team-memory", "--calls", bad], out=io.StringIO())
            finally:
                sys.stderr = old
            self.assertIn("--calls", err.getvalue())

    def test_formats(self):
        self.assertEqual(agent.rfc3339nano(1_700_000_000_000_000_000), "2023-11-14T22:13:20Z")
        self.assertEqual(agent.rfc3339nano(1_700_000_000_120_000_000), "2023-11-14T22:13:20.12Z")
        self.assertEqual(agent.rfc3339nano(1_700_000_000_000_000_001), "2023-11-14T22:13:20.000000001Z")
        self.assertEqual(agent.parse_duration("2"), 2.0)
        self.assertEqual(agent.parse_duration("500ms"), 0.5)
        self.assertEqual(agent.parse_duration("3m"), 180.0)
        for bad in ("0", "-1", "2x", ""):
            with self.assertRaises(Exception):
                agent.parse_duration(bad)
        self.assertEqual(agent.describe(503, "application/problem+json", b'{"type":"unavailable","detail":"a\\n b"}'),
                         "503 application/problem+json unavailable | a b")
        self.assertEqual(agent.describe(500, "", b""), "500 - -")

    def test_module_runs_and_flushes_each_line(self):
        """As the pod runs it: python3 -m ..., stdout a pipe, lines arrive while it runs."""
        src = os.path.dirname(os.path.dirname(os.path.abspath(agent.__file__)))
        env = dict(os.environ, PYTHONPATH=src, SERVICE_BINDING_ROOT=self.root)
        p = subprocess.Popen(
            [sys.executable, "-m", "memory_adapter_client.agent", "--adapter", "team-memory", "--interval", "0.2",
             "--timeout", "20", "--read-back"],
            stdout=subprocess.PIPE, env=env, text=True,
        )
        try:
            first = p.stdout.readline()  # arrives long before the 20 s timeout: flushed per line
            self.assertRegex(first, r"^agent-check watch: \S+ store 201 application/json -\n$")
        finally:
            p.terminate()
            rest, _ = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 0, "SIGTERM ends the agent with 0")
        parse(first + rest)


if __name__ == "__main__":
    unittest.main()
