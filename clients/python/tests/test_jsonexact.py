"""Exact numbers both ways, and the string rules (contract.md §3)."""

import unittest
from decimal import Decimal

from memory_adapter_client import jsonexact


class NumbersTest(unittest.TestCase):
    def test_decode(self):
        v = jsonexact.loads(b'[9007199254740993, 1e400, 0.123456789012345678901234567890, 0.1, 1.50, -0.0, 1E2, 1796513095.4649496, ' + b"9" * 5000 + b"]")
        self.assertEqual(v[0], 9007199254740993)
        self.assertIsInstance(v[1], Decimal)
        self.assertEqual(v[1], Decimal("1e400"))
        self.assertEqual(v[2], Decimal("0.123456789012345678901234567890"))
        self.assertEqual([type(x) for x in v[3:8]], [float] * 5)
        self.assertEqual(repr(v[7]), "1796513095.4649496")
        self.assertEqual(v[8], Decimal("9" * 5000))

    def test_round_trip_keeps_every_literal_value(self):
        text = b'{"a":[9007199254740993,1E+400,0.123456789012345678901234567890,0.1,-0.0,1796513095.4649496,-1E-400,18446744073709551617]}'
        self.assertEqual(jsonexact.dumps(jsonexact.loads(text)), text)

    def test_float_is_shortest_round_trip(self):
        import random
        import struct
        import time

        for f in [time.time() for _ in range(100)] + [random.random() * 10**random.randint(-300, 300) for _ in range(1000)]:
            back = jsonexact.loads(jsonexact.dumps(f))
            self.assertEqual(struct.pack("<d", back), struct.pack("<d", f))

    def test_refused(self):
        for v in (float("nan"), float("-inf"), Decimal("Infinity"), Decimal("sNaN"), {1: 2}, {"k": object()}, b"bytes", "x\ud800", {"\udc00": 1}):
            with self.assertRaises(ValueError, msg=repr(v)):
                jsonexact.dumps(v)
        cyc = []
        cyc.append(cyc)
        with self.assertRaises(ValueError):
            jsonexact.dumps(cyc)
        for text in (b"NaN", b"[Infinity]", b"\xff", b"{", b"[1,]"):
            with self.assertRaises(ValueError, msg=text):
                jsonexact.loads(text)

    def test_strings(self):
        self.assertEqual(jsonexact.dumps("a\u0000b"), b'"a\\u0000b"')
        self.assertEqual(jsonexact.loads(b'"a\\u0000b"'), "a\u0000b")
        self.assertEqual(jsonexact.dumps("𝄞 ü \u2028"), '"𝄞 ü \u2028"'.encode())
        # An answer's lone-surrogate escape reads as what the server sent...
        self.assertEqual(jsonexact.loads(b'"\\ud800x"'), "\ud800x")
        # ...and a paired escape as the character.
        self.assertEqual(jsonexact.loads(b'"\\ud834\\udd1e"'), "𝄞")


if __name__ == "__main__":
    unittest.main()
