"""Tests of server.py's token file, run by test/contract (python3 -m unittest)."""

import contextlib
import io
import os
import tempfile
import unittest

import server


class ParseTokensTest(unittest.TestCase):
    def test_table(self):
        long = b"x" * server.MAX_TOKEN_BYTES
        cases = {
            "one token": (b"tok\n", [b"tok"]),
            "two tokens": (b"current\nnext\n", [b"current", b"next"]),
            "whitespace and blank lines": (b"\n  a \r\n\n\tb\t\n", [b"a", b"b"]),
            "four tokens": (b"a\nb\nc\nd\n", [b"a", b"b", b"c", b"d"]),
            "a token of the largest size": (long, [long]),
            "empty": (b"", None),
            "only whitespace": (b" \n\t\r\n", None),
            "five tokens": (b"a\nb\nc\nd\ne\n", None),
            "a token over the size": (b"a\n" + long + b"x\n", None),
        }
        for name, (data, want) in cases.items():
            with self.subTest(name):
                if want is None:
                    with self.assertRaises(ValueError) as cm:
                        server.parse_tokens(data)
                    self.assertNotIn("xxxx", str(cm.exception))
                else:
                    self.assertEqual(server.parse_tokens(data), want)


class ParseGrantsTest(unittest.TestCase):
    # The Go server's grant options (internal/server tokenfile.go): "read-only" and
    # "sub-scope=NAME" after the token, each at most once.
    def test_table(self):
        cases = {
            "no options": (b"tok\n", [(b"tok", False, None)]),
            "read-only": (b"ro read-only\n", [(b"ro", True, None)]),
            "sub-scope": (b"a sub-scope=team-a.x\n", [(b"a", False, "team-a.x")]),
            "both, any order, tabs": (b"b\tsub-scope=b1 read-only\r\n", [(b"b", True, "b1")]),
            "mixed lines": (b"x\ny read-only\n", [(b"x", False, None), (b"y", True, None)]),
            "read-only twice": (b"t read-only read-only\n", None),
            "read-only with a value": (b"t read-only=yes\n", None),
            "sub-scope twice": (b"t sub-scope=a sub-scope=b\n", None),
            "sub-scope empty": (b"t sub-scope=\n", None),
            "sub-scope upper case": (b"t sub-scope=Team\n", None),
            "sub-scope too long": (b"t sub-scope=" + b"a" * 64 + b"\n", None),
            "sub-scope of the longest": (b"t sub-scope=" + b"a" * 63 + b"\n", [(b"t", False, "a" * 63)]),
            "unknown option": (b"t secret-xyz\n", None),
        }
        for name, (data, want) in cases.items():
            with self.subTest(name):
                if want is None:
                    with self.assertRaises(ValueError) as cm:
                        server.parse_grants(data)
                    self.assertNotIn("secret-xyz", str(cm.exception))
                else:
                    self.assertEqual(server.parse_grants(data), want)
                    self.assertEqual(server.parse_tokens(data), [g[0] for g in want])

    def test_token_file_grants(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "token")
            with open(path, "wb") as f:
                f.write(b"rw\nro read-only\nsa sub-scope=alpha\n")
            tf = server.TokenFile(path)
            got = {t: (g.read_only, g.sub_scope) for t in (b"rw", b"ro", b"sa") for g in [tf.grant(t)]}
            self.assertEqual(got, {b"rw": (False, None), b"ro": (True, None), b"sa": (False, "alpha")})
            self.assertIsNone(tf.grant(b"r"))
            self.assertFalse(tf.accepts(b"read-only"))


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def past_recheck(self):
        self.now += 1.001


class TokenFileTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.path = os.path.join(self.dir.name, "token")
        self.version = 0

    def swap(self, content):
        """Replaces the file by a rename, as the kubelet does, with an mtime of its own so that
        a coarse file system clock cannot hide the change."""
        self.version += 1
        tmp = self.path + ".new"
        with open(tmp, "wb") as f:
            f.write(content)
        os.utime(tmp, ns=(self.version * 60 * 10**9, self.version * 60 * 10**9))
        os.replace(tmp, self.path)

    def accepted(self, tf, *candidates):
        return [c for c in candidates if tf.accepts(c)]

    def test_follows_a_rotation(self):
        self.swap(b"token-a\n")
        clock = Clock()
        tf = server.TokenFile(self.path, clock)
        self.assertEqual(self.accepted(tf, b"token-a", b"token-b", b"token-c"), [b"token-a"])
        self.swap(b"token-a\ntoken-b\ntoken-c\n")
        self.assertEqual(self.accepted(tf, b"token-a", b"token-b"), [b"token-a"], "re-read within a second")
        clock.past_recheck()
        self.assertEqual(self.accepted(tf, b"token-a", b"token-b", b"token-c"), [b"token-a", b"token-b", b"token-c"])
        self.swap(b"token-b\ntoken-c\n")
        clock.past_recheck()
        self.assertEqual(self.accepted(tf, b"token-a", b"token-b", b"token-c"), [b"token-b", b"token-c"])
        self.assertEqual(self.accepted(tf, b"", b"token-", b"token-bb"), [])

    def test_keeps_the_previous_set_and_says_so_once(self):
        self.swap(b"token-a\ntoken-b\n")
        clock = Clock()
        tf = server.TokenFile(self.path, clock)
        for bad in (b"", b"\n \n", b"c\nd\ne\nf\ng\n", b"y" * (server.MAX_TOKEN_BYTES + 1)):
            with self.subTest(bad[:8]):
                self.swap(bad)
                err = io.StringIO()
                with contextlib.redirect_stderr(err):
                    for _ in range(3):
                        clock.past_recheck()
                        self.assertEqual(self.accepted(tf, b"token-a", b"token-b"), [b"token-a", b"token-b"])
                self.assertEqual(err.getvalue().count("keeping the previous bearer tokens"), 1, err.getvalue())
                self.assertNotIn("token-", err.getvalue())
        self.swap(b"token-c\n")
        clock.past_recheck()
        self.assertEqual(self.accepted(tf, b"token-a", b"token-c"), [b"token-c"])

    def test_refuses_at_start(self):
        for bad in (b"", b"a\nb\nc\nd\ne\n", b"z" * (server.MAX_TOKEN_BYTES + 1)):
            with self.subTest(bad[:8]):
                self.swap(bad)
                with self.assertRaises(ValueError):
                    server.TokenFile(self.path)
        with self.assertRaises(OSError):
            server.TokenFile(os.path.join(self.dir.name, "missing"))


if __name__ == "__main__":
    unittest.main()
