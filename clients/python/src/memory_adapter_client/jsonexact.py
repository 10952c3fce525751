"""Exact JSON for the wire (contract.md §3), standard library only.

Decoding keeps every number's value: integers of any size are ``int``; a number literal
becomes a ``float`` only when that float's ``repr`` has the same decimal value as the
literal (so writing it back gives the same number), and a ``decimal.Decimal`` otherwise
(``1e400``, ``0.30000000000000000000000000001``). Encoding writes ``int`` in full,
``float`` as ``repr`` (the shortest text that reads back as the same double) and
``Decimal`` as its own exact literal.

Strings: JSON text on the wire is UTF-8 (RFC 8259 §8.1), and a lone surrogate (a Python
``str`` can hold ``"\\ud800"``) is not a Unicode character, so it has no UTF-8 form. The
encoder refuses such a string with ``ValueError`` instead of sending the escape
``"\\ud800"``: the Go server decodes that escape to U+FFFD in tags (and object keys) but keeps
it in content, so the value would come back altered or not depending on where it sits. The
decoder, in turn, returns what the server sent: an escape ``"\\ud800"`` in an answer (an item
another client stored) reads as that lone surrogate, so one such item never makes a whole
search unreadable; storing it again is then refused.
U+0000 is an ordinary character: it is written as ``\\u0000`` and read back as itself (a
backend that cannot store it, PostgreSQL ``jsonb``, refuses the write with an error).
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ("loads", "dumps", "MAX_DEPTH", "parse_number")

# Nesting bound for encoding and decoding. The wire allows 32 levels (api/memory
# MaxJSONDepth); this bound only keeps a cyclic or absurdly deep value from exhausting the
# stack: the server, not the client, applies the contract's 32.
MAX_DEPTH = 512

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_number(literal: str) -> float | Decimal:
    """A JSON number literal with a fraction or exponent, as float when exact, else Decimal."""
    f = float(literal)
    if math.isfinite(f) and Decimal(repr(f)) == Decimal(literal):
        return f
    return Decimal(literal)


def _parse_int(literal: str) -> int | Decimal:
    # Python limits int() to 4300 digits; a longer integer keeps its value as a Decimal.
    try:
        return int(literal)
    except ValueError:
        return Decimal(literal)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(data: bytes | str) -> Any:
    """Decode JSON text exactly; ValueError (or RecursionError) when it is not valid JSON."""
    if isinstance(data, bytes):
        data = data.decode("utf-8")  # UnicodeDecodeError is a ValueError
    return json.loads(data, parse_int=_parse_int, parse_float=parse_number, parse_constant=_reject_constant)


def _encode(value: Any, out: list[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"value nested deeper than {MAX_DEPTH} levels (or cyclic)")
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        if _LONE_SURROGATE.search(value):
            raise ValueError("a string holds a lone surrogate (not Unicode text, no UTF-8 form)")
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a JSON number")
        out.append(float.__repr__(value))
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"Decimal {value} is not a JSON number")
        # str() of a finite Decimal is always a valid JSON number literal with exactly the
        # Decimal's value ("1E+400", "0.30000000000000000000000000001", "-0").
        out.append(str(value))
    elif isinstance(value, dict):
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if not isinstance(k, str):
                raise ValueError(f"object key {k!r} is not a string")
            if i:
                out.append(",")
            _encode(k, out, depth + 1)
            out.append(":")
            _encode(v, out, depth + 1)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _encode(v, out, depth + 1)
        out.append("]")
    else:
        raise ValueError(f"a {type(value).__name__} is not a JSON value")


def dumps(value: Any) -> bytes:
    """Encode value as compact UTF-8 JSON; ValueError for anything that is not exact JSON."""
    out: list[str] = []
    try:
        _encode(value, out, 0)
    except InvalidOperation as exc:  # pragma: no cover - defensive, str(Decimal) does not raise
        raise ValueError(str(exc)) from exc
    return "".join(out).encode("utf-8")
