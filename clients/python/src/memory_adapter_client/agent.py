"""A watching agent: ``python3 -m memory_adapter_client.agent --adapter NAME [--interval 2]
[--timeout SECONDS] [--calls N] [--read-back]``.

The Python twin of the Go agent's ``memory-adapter agent-check --watch``
(cmd/memory-adapter/agentwatch.go), for the e2e specs that watch a workload through an
outage, a rollout or a token rotation. It reads the binding at
``$SERVICE_BINDING_ROOT/NAME`` with ``from_binding`` once and keeps that one store for its
whole run, so a rotated token (or CA bundle) is picked up by the client's own re-read of the
projected files, never by making a new client. Every interval it stores a fresh lionagi-shaped
item (``uuid4`` id, ``created_at=time.time()``, a content dict, metadata
``{"source": "python-agent"}``, tags ``["python-agent"]``) and, with ``--read-back``,
retrieves it at once. It prints one line per call, in the Go agent's format, which the e2e
suite's ``agentAnswers`` parses::

    agent-check watch: <RFC 3339 time the call was made> store <status> <media type> <problem type or -> [| <problem detail>]
    agent-check watch: <RFC 3339 time the call was made> store error: <what failed, when no answer came>
    agent-check watch: <RFC 3339 time the call was made> retrieve <status> <media type> <problem type or ->

A retrieve that answered 200 ends in ``mismatch`` instead of ``-`` when the item did not come
back equal: every field, ``created_at`` bit for bit, when the manifest's retrieve fidelity is
``full``; at ``partial``, the fields the manifest keeps, ``created_at`` to the microsecond.
A 201 or 200 whose body the client refuses (a malformed acknowledgement or item) also ends
in ``mismatch``.

The status and media type are those of the answer that decided the call (after the
client's one retry of a 401 with a re-read token), the problem type and detail those of its
problem+json body, as agentwatch.go reads them: the client turns answers into return values
and exceptions (a ``ProblemError`` cause for a problem body, none for a 404 ``retrieve``
answers with ``None``), so the agent keeps the last answer of its store's exchanges for the
line. A transport failure (refused, reset, TLS, timeout; the client has already tried the
connection up to three times, as the Go agent's unsent-request retry does) is an ``error:``
line. A call still running when ``--timeout`` ends, or when SIGTERM or SIGINT arrives, is not
printed (what it got says nothing of the adapter); the agent then exits 0. With ``--calls N``
it also exits 0 once N calls were printed: a check that must see an answer ends on the
answers, not on a clock a slow machine can run out.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import struct
import sys
import threading
import time
import uuid
from typing import Any, Callable

from .client import DEFAULT_TIMEOUT, RemoteMemoryStore, binding_dir, from_binding
from .errors import MemoryAdapterError
from .models import MemoryItem

__all__ = ("main", "rfc3339nano", "parse_duration")

PREFIX = "agent-check watch: "
SOURCE = "python-agent"
# agentwatch.go truncateDetail: one short line per call.
DETAIL_LIMIT = 300

_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ms|s|m|h)?$")
_UNITS = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds from ``2``, ``0.5``, or a Go-style single-unit duration (``500ms``, ``2s``,
    ``3m``, ``1h``), so the flags read as the Go agent's do."""
    m = _DURATION.match(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (seconds, or a number with ms, s, m or h)")
    value = float(m.group(1)) * _UNITS[m.group(2)]
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be positive")
    return value


def rfc3339nano(ns: int) -> str:
    """Go's time.RFC3339Nano of a UTC instant in nanoseconds: trailing zeros of the fraction
    dropped, and no fraction at all on a whole second."""
    sec, frac = divmod(ns, 1_000_000_000)
    digits = f"{frac:09d}".rstrip("0")
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + ("." + digits if digits else "") + "Z"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _truncate_detail(detail: str) -> str:
    detail = _one_line(detail)
    return detail[:DETAIL_LIMIT] + "…" if len(detail) > DETAIL_LIMIT else detail


def describe(status: int, media: str, body: bytes) -> str:
    """``<status> <media type> <problem type or ->[ | <detail>]``, as agentwatch.go's watchCall."""
    media = media or "-"
    problem, detail = "-", ""
    if media == "application/problem+json":
        try:
            p = json.loads(body)
        except (ValueError, RecursionError):
            p = None
        if isinstance(p, dict) and isinstance(p.get("type"), str) and p["type"]:
            problem = p["type"]
            if isinstance(p.get("detail"), str) and p["detail"]:
                detail = " | " + _truncate_detail(p["detail"])
    return f"{status} {media} {problem}{detail}"


def _mismatch(answer: str) -> str:
    return answer.removesuffix(" -") + " mismatch"


def error_text(exc: BaseException) -> str:
    """An exception and its causes on one line: what failed and, below it, why."""
    parts = [str(exc) or type(exc).__name__]
    cause, depth = exc.__cause__, 0
    while cause is not None and depth < 3:
        parts.append(f"{type(cause).__name__}: {cause}")
        cause, depth = cause.__cause__, depth + 1
    return _one_line(": ".join(parts))


class _Answers:
    """Keeps the last answer (status, media type, body) of one store's exchanges.

    The client returns values and raises typed errors; the watch line needs the answer
    itself, as the Go agent prints it. The store's exchange is wrapped on this one instance;
    the agent makes one call at a time, so "last" is the call's deciding answer (after the
    client's 401 retry), or None when no answer came.
    """

    def __init__(self, store: RemoteMemoryStore) -> None:
        self.last: tuple[int, str, bytes] | None = None
        inner = store._exchange

        def exchange(method: str, path: str, body: bytes | None, token: str | None) -> tuple[int, str, bytes]:
            self.last = None
            res = inner(method, path, body, token)
            self.last = res
            return res

        store._exchange = exchange  # type: ignore[method-assign]

    def line(self) -> str:
        assert self.last is not None
        return describe(*self.last)


def _bits(x: float) -> bytes:
    return struct.pack(">d", x)


def items_equal(want: Any, got: Any, manifest: Any = None) -> bool:
    """Whether ``got`` came back as ``want`` was stored. Without a manifest, or at ``full``
    retrieve fidelity, every field and created_at bit for bit (contract.md §3); at
    ``partial``, the fields the manifest does not drop (metadata only when it preserves
    metadata) and created_at to the microsecond."""
    if got is None or got.id != want.id:
        return False
    if (
        _bits(got.created_at) == _bits(want.created_at)
        and got.metadata == want.metadata
        and got.content == want.content
        and list(got.tags) == list(want.tags)
    ):
        return True
    if manifest is None or manifest.retrieve_fidelity == "full":
        return False
    dropped = set(manifest.dropped_item_fields)
    return (
        ("created_at" in dropped or abs(got.created_at - want.created_at) <= 1e-6)
        and ("metadata" in dropped or not manifest.preserves_metadata or got.metadata == want.metadata)
        and ("content" in dropped or got.content == want.content)
        and ("tags" in dropped or list(got.tags) == list(want.tags))
    )


class _Stopped(Exception):
    """The watch ended (its timeout, or a signal) while a call was running."""


class Watch:
    """One run of the agent: one store, one call at a time, one line per call."""

    def __init__(self, store: RemoteMemoryStore, out: Any, *, interval: float, timeout: float, read_back: bool,
                 calls: int = 0) -> None:
        self.store = store
        # calls ends the run after that many printed calls; 0: only the timeout or a signal.
        self.calls = calls
        self.answers = _Answers(store)
        self.out = out
        self.interval = interval
        self.deadline = time.monotonic() + timeout
        self.read_back = read_back
        self.stop = threading.Event()
        self.seq = 0

    def _run(self, fn: Callable[[], Any]) -> tuple[Any, BaseException | None]:
        """fn() in a daemon thread, waited for until it ends, the deadline passes or the
        watch is stopped (then _Stopped: a blocked socket cannot be interrupted, and the
        process exits without waiting for it)."""
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:  # noqa: BLE001 - reported as the call's outcome
                box["error"] = exc

        t = threading.Thread(target=target, name="agent-call", daemon=True)
        t.start()
        while t.is_alive():
            if self.stop.is_set() or time.monotonic() >= self.deadline:
                raise _Stopped
            t.join(min(0.05, max(self.deadline - time.monotonic(), 0.001)))
        if self.stop.is_set() or time.monotonic() >= self.deadline:
            raise _Stopped
        return box.get("value"), box.get("error")

    def once(self) -> list[str]:
        """One store (and retrieve) call; the lines to print."""
        self.seq += 1
        item = MemoryItem(
            id=uuid.uuid4(),
            created_at=time.time(),
            content={"note": "stored by the Python agent", "seq": self.seq},
            metadata={"source": SOURCE},
            tags=[SOURCE],
        )
        lines = []
        _, err = self._run(lambda: self.store.store_blocking(item))
        if self.answers.last is None:
            lines.append("store error: " + error_text(err if err is not None else RuntimeError("no answer")))
            return lines
        answer = self.answers.line()
        if err is not None and self.answers.last[0] == 201:
            answer = _mismatch(answer)  # a 201 whose acknowledgement the client refused
        lines.append("store " + answer)
        if not self.read_back or err is not None:
            return lines
        got, err = self._run(lambda: self.store.retrieve_blocking(item.id))
        if self.answers.last is None:
            lines.append("retrieve error: " + error_text(err if err is not None else RuntimeError("no answer")))
            return lines
        status = self.answers.last[0]
        answer = self.answers.line()
        if status == 200 and (err is not None or not items_equal(item, got)):
            # Not equal bit for bit: equal enough only if the manifest promises less than full.
            if err is not None or not items_equal(item, got, self._manifest_or_none()):
                answer = _mismatch(answer)
        lines.append("retrieve " + answer)
        return lines

    def _manifest_or_none(self) -> Any:
        value, err = self._run(lambda: self.store.manifest)
        return None if err is not None else value

    def run(self) -> int:
        next_at = time.monotonic()
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            at = rfc3339nano(time.time_ns())  # when the call was made, not when it ended
            try:
                lines = self.once()
            except _Stopped:
                return 0
            for line in lines:
                self.out.write(f"{PREFIX}{at} {line}\n")
                self.out.flush()
            if self.calls and self.seq >= self.calls:
                break
            # A ticker's schedule: a call that overran its interval is followed at once.
            next_at = max(next_at + self.interval, time.monotonic())
            wait = min(next_at, self.deadline) - time.monotonic()
            if wait > 0 and self.stop.wait(wait):
                break
        return 0


def _calls(text: str) -> int:
    """--calls: a whole number from 0 (no limit) to 1,000,000."""
    n = int(text)
    if not 0 <= n <= 1_000_000:
        raise argparse.ArgumentTypeError(f"{text}: want 0 to 1000000")
    return n


def main(argv: list[str] | None = None, out: Any = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python3 -m memory_adapter_client.agent",
        description="Store an item through the adapter's binding every --interval until --timeout and print each "
        "answer's status, media type and problem type, one line per call (the Go agent-check --watch format).",
    )
    ap.add_argument("--adapter", required=True, help="the MemoryAdapter's name: the binding is $SERVICE_BINDING_ROOT/NAME")
    ap.add_argument("--interval", type=parse_duration, default=2.0, help="time between calls (seconds, or 500ms, 2s, ...; default 2)")
    ap.add_argument("--timeout", type=parse_duration, default=120.0, help="stop after this long and exit 0 (default 120 s)")
    ap.add_argument("--calls", type=_calls, default=0, help="also stop, exit 0, after this many calls (default 0: no limit)")
    ap.add_argument("--read-back", action="store_true", help="retrieve each stored item at once and print a retrieve line")
    args = ap.parse_args(argv)
    out = sys.stdout if out is None else out
    try:
        # One store for the whole run; the client re-reads the projected token and ca.crt.
        # A call waits as long as the Go agent's (the client's default, or the interval).
        store = from_binding(binding_dir(args.adapter), timeout=max(args.interval, DEFAULT_TIMEOUT))
    except MemoryAdapterError as exc:
        print(f"agent: {error_text(exc)}", file=sys.stderr)
        return 1
    watch = Watch(store, out, interval=args.interval, timeout=args.timeout, read_back=args.read_back, calls=args.calls)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: watch.stop.set())
    try:
        return watch.run()
    except BrokenPipeError:
        return 1
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
