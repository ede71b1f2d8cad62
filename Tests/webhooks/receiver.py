#!/usr/bin/env python3
"""A receiver of webhooks, as an application would run one: every message is checked with the
reference verifiers of Standard Webhooks (PyPI standardwebhooks) and of Svix (PyPI svix), once
for each secret given. Answers 204 when each secret's check passes with both, else 400.

    receiver.py SECRETS_FILE [--tls CERT KEY]

A request's query may ask for another answer, after the checks: `status=N` answers N (with
`Location: /elsewhere` for a 3xx), `retry-after=TEXT` adds that header, and `fail=K` answers so
only to the first K requests of each webhook-id, then as usual; `flaky=P` answers 500 to each
request with the probability P (a receiver that fails now and then). `sleep=S` answers only S
seconds after the request arrived, and says at once that it did: {"arrived": WEBHOOK-ID}.

Listens on 127.0.0.1, on a port of its choosing, and prints one JSON line per event on stdout:
{"listening": PORT} first, then for each request {"path", "headers", "body", "checks"}, where
checks maps each secret's position to {"standardwebhooks": "ok" or the error, "svix": ...}.
"""
import http.server
import json
import random
import ssl
import sys
import threading
import time
import urllib.parse

from standardwebhooks.webhooks import Webhook as StandardWebhook
from svix.webhooks import Webhook as SvixWebhook


def check(verifier, secret, body, headers):
    try:
        verifier(secret).verify(body, headers)
        return "ok"
    except Exception as error:  # each library has its own error type; its words are the result
        return f"{type(error).__name__}: {error}"


def main():
    secrets = [line.strip() for line in open(sys.argv[1]) if line.strip()]
    tls = sys.argv[3:5] if len(sys.argv) >= 5 and sys.argv[2] == "--tls" else None
    seen = {}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
            if "sleep" in query:
                with lock:
                    print(json.dumps({"arrived": headers.get("webhook-id")}), flush=True)
                time.sleep(float(query["sleep"][0]))
            checks = {}
            for index, secret in enumerate(secrets):
                checks[str(index)] = {
                    "standardwebhooks": check(StandardWebhook, secret, body, headers),
                    "svix": check(SvixWebhook, secret, body, headers),
                }
            passed = all(v == "ok" for c in checks.values() for v in c.values())
            status = 204 if passed else 400
            asked = query.get("status", [None])[0]
            with lock:
                count = seen.get(headers.get("webhook-id"), 0) + 1
                seen[headers.get("webhook-id")] = count
            if passed and asked and count <= int(query.get("fail", ["1000000000"])[0]):
                status = int(asked)
            if passed and random.random() < float(query.get("flaky", ["0"])[0]):
                status = 500
            self.send_response(status)
            if status != 204 and status != 400:
                if "retry-after" in query:
                    self.send_header("Retry-After", query["retry-after"][0])
                if 300 <= status < 400:
                    self.send_header("Location", "/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()
            line = json.dumps({"path": self.path, "headers": headers, "body": body.decode(), "checks": checks})
            with lock:  # one line at a time: requests are handled on threads of their own
                print(line, flush=True)

        def log_message(self, format, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls[0], tls[1])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(json.dumps({"listening": server.server_address[1]}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
