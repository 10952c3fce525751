"""``python -m memory_adapter_client.conformance``: the matrix through this client against a
server in harness mode (or any server speaking /harness/v1).

    python3 -m memory_adapter_client.conformance --target http://127.0.0.1:8080 --token-file tok \\
        --harness-url http://127.0.0.1:8081 --harness-token-file htok [--json FILE] [--require-full-claim]

``--fake`` runs the matrix against the built-in fake instead (no server); with
``--fake-governance JSON`` (a governance/v1 object) the fake claims and enforces it. The
governance profiles run after the matrix and are reported apart (the table's ``profile``
lines, the JSON report's ``profiles``); a failed profile fails the run. Exit code 0 only for
a Passed run (with ``--require-full-claim``, only for a full claim); 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys

from .. import jsonexact
from ..client import BINDING_FILE_LIMIT
from ..models import Governance
from .fake import FakeHarness
from .suite import PASSED, Options, run
from .wire import WireHarness


def _read_token(path: str | None) -> str | None:
    if not path:
        return None
    with open(path, "rb") as f:
        data = f.read(BINDING_FILE_LIMIT + 1)
    if len(data) > BINDING_FILE_LIMIT:
        raise SystemExit(f"{path}: longer than {BINDING_FILE_LIMIT} bytes")
    # A server token file may list several tokens, one per line: the first is used.
    lines = [ln.strip() for ln in data.decode("utf-8").splitlines() if ln.strip()]
    return lines[0] if lines else None


def _factory(spec: str):
    mod, _, attr = spec.partition(":")
    return getattr(importlib.import_module(mod), attr)


async def _main(a: argparse.Namespace) -> int:
    opts = Options(case_timeout=a.case_timeout, profile_timeout=a.profile_timeout)
    if a.fake_governance and not a.fake:
        raise SystemExit("--fake-governance goes with --fake")
    if a.fake:
        gov = None
        if a.fake_governance:
            if len(a.fake_governance) > 4096:
                raise SystemExit("--fake-governance: longer than 4096 characters")
            try:
                gov = Governance.from_wire(jsonexact.loads(a.fake_governance))
            except (ValueError, RecursionError) as e:
                raise SystemExit(f"--fake-governance: {e}")
        h = FakeHarness(governance=gov)
    else:
        if not a.target or not a.harness_url:
            raise SystemExit("--target and --harness-url are required (or --fake)")
        h = WireHarness(
            a.target,
            _read_token(a.token_file),
            a.harness_url,
            _read_token(a.harness_token_file) or "",
            store_factory=_factory(a.store_factory) if a.store_factory else None,
        )
        await h.load_capabilities()
    progress = (lambda line: print(line, file=sys.stderr)) if a.progress else None
    try:
        r = await run(h, opts, progress)
    finally:
        await h.close()
    print(r.table())
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(r.to_json(), f, indent=2, ensure_ascii=False)
    ok = r.result == PASSED and (r.claim == "full" or not a.require_full_claim)
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m memory_adapter_client.conformance", description=__doc__.split("\n\n")[0])
    p.add_argument("--target", help="the data listener's base URL")
    p.add_argument("--token-file", help="file holding the data listener's bearer token")
    p.add_argument("--harness-url", help="the harness listener's base URL (/harness/v1)")
    p.add_argument("--harness-token-file", help="file holding the harness listener's bearer token")
    p.add_argument("--fake", action="store_true", help="run against the built-in fake instead of a server")
    p.add_argument("--json", help="write the JSON report here")
    p.add_argument("--require-full-claim", action="store_true", help="fail a run whose claim is partial")
    p.add_argument("--fake-governance", metavar="JSON", help="with --fake: the governance/v1 object the fake claims and enforces")
    p.add_argument("--case-timeout", type=float, default=30.0, help="bound on one case, seconds")
    p.add_argument("--profile-timeout", type=float, default=120.0, help="bound on one governance profile, seconds")
    p.add_argument("--progress", action="store_true", help="one line per finished case on stderr")
    p.add_argument("--store-factory", help="module:callable(url, token) making the store under test (tests)")
    return asyncio.run(_main(p.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
