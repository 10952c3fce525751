"""W3C trace context for the client's calls, with or without OpenTelemetry.

The adapter server continues the trace whose ``traceparent`` (and ``tracestate``) a call
carries, so its spans land under the agent's own. With ``opentelemetry-api`` importable the
current span's context is injected by OpenTelemetry's global propagator; without it, a
caller that traces otherwise gives ``RemoteMemoryStore(trace_headers=...)``, a function
returning the headers of the call being made. Only these two headers are ever taken from
either source: baggage may carry user data, and nothing here may replace the token.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

try:
    from opentelemetry import propagate as _otel_propagate
except ImportError:  # OpenTelemetry is optional: the package is standard library only.
    _otel_propagate = None

TRACE_HEADERS = ("traceparent", "tracestate")
# Visible ASCII and spaces (tracestate separates members with optional whitespace); never a
# CR or LF, which would split the header. W3C bounds tracestate at 512 characters.
_VALUE = re.compile(r"^[\x20-\x7e]{1,512}$")

TraceHeaders = Callable[[], "Mapping[str, str] | None"]


def trace_headers(hook: TraceHeaders | None) -> dict[str, str]:
    """The trace headers of the call about to be sent: ``hook``'s when given, else
    OpenTelemetry's current context when it is installed, else none. Names other than
    ``traceparent`` and ``tracestate`` and malformed values are dropped."""
    carrier: Mapping[str, Any]
    if hook is not None:
        carrier = hook() or {}
    elif _otel_propagate is not None:
        injected: dict[str, str] = {}
        _otel_propagate.inject(injected)
        carrier = injected
    else:
        return {}
    out: dict[str, str] = {}
    for name, value in carrier.items():
        key = str(name).lower()
        if key in TRACE_HEADERS and isinstance(value, str) and _VALUE.match(value):
            out[key] = value
    return out
