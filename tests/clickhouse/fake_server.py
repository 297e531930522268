"""A server on loopback that is not ClickHouse, for the hostile-answer tests.

    fake_server.py MODE      prints its port, then answers every request until killed

MODE: `empty` (200 and an empty body), `html` (200 and a web page), `json` (200 and a JSON
object that is no ClickHouse row), `endless-probe` (rows without end to every query),
`endless-row` (a valid connect probe, then one line without end), `endless-rows` (a valid
connect probe, an error to the combined queries, rows of 1 MiB without end to the settings
query sent alone, and no row to any other), `endless-small-rows` (the same with rows of
3 bytes).
"""

import http.server
import json
import sys

MODE = sys.argv[1]
PROBE = json.dumps({
    "version": "26.9.2.1", "readonly": 1, "user": "default", "roles": [],
    "max_result_rows": "0", "max_result_bytes": "0", "result_overflow_mode": "throw",
    "max_rows_to_read": "0", "max_bytes_to_read": "0", "read_overflow_mode": "throw",
    "max_execution_time": 0, "timeout_overflow_mode": "throw",
}).encode() + b"\n"
ROW = json.dumps({"name": "x" * (1 << 20), "value": "1", "default": "1", "changed": 0}).encode() + b"\n"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        query = self.rfile.read(length) + self.path.encode()
        self.answer(b"AS readonly" in query, b"formatRowNoNewline" in query, b"FROM system.settings" in query)

    def answer(self, probe, combined, settings):
        if MODE in ("endless-rows", "endless-small-rows") and combined:
            body = b"Code: 62. DB::Exception: Syntax error. (SYNTAX_ERROR) (version 26.9.2.1)\n"
            self.send_response(500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        if MODE == "empty" or (MODE in ("endless-rows", "endless-small-rows") and not probe and not settings):
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if MODE in ("html", "json"):
            body = b"<html><body><h1>It works!</h1></body></html>\n" if MODE == "html" else b'{"status": "ok"}\n'
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.end_headers()
        try:
            if MODE == "endless-probe" or not probe:
                chunk = {"endless-probe": PROBE * 1000, "endless-row": b"x" * (1 << 20), "endless-rows": ROW,
                         "endless-small-rows": b"{}\n" * 65536}[MODE]
            else:
                self.wfile.write(PROBE)
                return
            while True:
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
