"""A scripted HTTP(S) server for the client's unit tests (standard library only)."""

import http.server
import json
import ssl
import threading
import time

MANIFEST = {
    "adapter": "unit",
    "native_item_fields": ["id", "created_at", "metadata", "content", "tags"],
    "dropped_item_fields": [],
    "supported_filters": ["source", "branch_id"],
    "search_consistency": "immediate",
    "retrieve_fidelity": "full",
    "search_fidelity": "full",
    "search_returns_tags": True,
    "preserves_metadata": True,
}


def problem(status, type_, **extra):
    body = {"type": type_, "title": type_, "status": status, "detail": "scripted"}
    body.update(extra)
    return status, "application/problem+json", json.dumps(body).encode()


class FakeServer:
    """Answers GET /v1/manifest with MANIFEST and every other request with ``self.answer``
    (a function of (method, path, headers, body) returning (status, content type, body),
    (status, content type, body, delay seconds) or (status, content type, body, delay
    seconds, {extra header: value})). Records every request."""

    def __init__(self, certfile=None, keyfile=None):
        self.requests = []
        self.answer = lambda m, p, h, b: (404, "text/plain", b"no route")
        self.manifest = MANIFEST
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                outer.requests.append((self.command, self.path, dict(self.headers), body))
                if self.command == "GET" and self.path.endswith("/v1/manifest"):
                    res = (200, "application/json", json.dumps(outer.manifest).encode())
                else:
                    res = outer.answer(self.command, self.path, self.headers, body)
                status, ctype, data = res[:3]
                if len(res) > 3:
                    time.sleep(res[3])
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                for k, v in (res[4] if len(res) > 4 else {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

            do_GET = do_POST = _any

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        scheme = "http"
        if certfile:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(certfile, keyfile)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def data_requests(self):
        return [r for r in self.requests if not r[1].endswith("/v1/manifest")]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
