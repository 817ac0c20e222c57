"""A loopback echo service for the http_templates compat eval.

POST /echo answers {"answer": <the request body as canonical JSON>, "tool_calls":
[{"name": "received", "arguments": <the body>}], "usage": {"in": <body size>}}.
Run: python server.py PORT_FILE -- it binds an ephemeral port and writes it to PORT_FILE.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Echo(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw) if raw else None
        text = json.dumps(body, sort_keys=True, ensure_ascii=False)
        reply = json.dumps({"answer": text, "tool_calls": [{"name": "received", "arguments": body}],
                            "usage": {"in": len(raw)}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


def serve(port_file: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    with open(port_file, "w") as handle:
        handle.write(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    serve(sys.argv[1])
