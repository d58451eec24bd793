#!/usr/bin/env python3
"""tests/net/servers.py — the origin servers of the egress tests (stdlib only).

    servers.py READY_FILE LOG_FILE CERT KEY [HTTP_PORT HTTPS_PORT]

Listens on the host's loopback only, on two addresses with the same ports:

  127.0.0.2:HTTP   plain HTTP, the origin the tests' names (good.test, ...)
                   map to and the policy allows with --allow-ip 127.0.0.2/32;
  127.0.0.2:HTTPS  HTTPS with CERT (signed by the run's test CA, names in
                   tests/net/make-ca.sh);
  127.0.0.1:HTTP, 127.0.0.1:HTTPS
                   the same servers on the host's own loopback: the
                   forbidden target. A name that resolves to 127.0.0.1
                   (evil.test) must be refused by the proxy, so any request
                   logged with "addr": "127.0.0.1" is a hole.

Ports: HTTP_PORT and HTTPS_PORT (default 18080 and 18443) when both
addresses are free there, else ports the kernel picks (free on both).

Every listener answers GET and POST (any path) with "hello from ADDR\\n" (plain
HTTP) or "hello over tls\\n" (HTTPS), except:
  /big?mib=N    N MiB of "x" with a Content-Length (the byte-limit tests);
  /slow?ms=N    the answer after N ms (the connection-limit tests).
Responses are HTTP/1.1 with a Content-Length; "Connection: close" is honoured.

LOG_FILE gets one JSON line per request: {"addr", "port", "scheme",
"method", "path", "headers": [[name, value], ...] in the order received,
"body_len"} (-1: a malformed body; Content-Length and chunked bodies are
read), and for HTTPS one line per handshake: {"addr", "port", "tls":
"ok"|"error", "sni", "error"}. The log is outside every sandbox: it is what
the origin really received (e.g. an injected Authorization header).

When every socket listens, writes "HTTP_PORT HTTPS_PORT\\n" to READY_FILE
(written to READY_FILE.tmp and renamed, so a reader never sees half a line).
Exits on SIGTERM/SIGINT, or within 0.5 s once its parent process is gone (a
killed test leaves nothing running).
"""
import http.server
import json
import os
import random
import signal
import ssl
import sys
import threading
import time
import urllib.parse

ORIGIN_ADDR = "127.0.0.2"
LOOPBACK_ADDR = "127.0.0.1"
MAX_BIG_MIB = 64
MAX_SLOW_MS = 30000
MAX_BODY = 16 << 20


class Log:
    """One JSON object per line, appended under a lock (handler threads)."""

    def __init__(self, path):
        self.f = open(path, "a", buffering=1)
        self.lock = threading.Lock()

    def write(self, obj):
        line = json.dumps(obj, sort_keys=True) + "\n"
        with self.lock:
            self.f.write(line)
            self.f.flush()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "airlock-test-origin"

    def log_message(self, fmt, *args):  # no noise on stderr
        pass

    def _chunked_len(self):
        """Read a chunked body to its end; its length, or -1 if malformed."""
        total = 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                return -1
            if size == 0:
                break
            total += size
            if total > MAX_BODY:
                return -1
            data = self.rfile.read(size + 2)  # the data and its CRLF
            if len(data) != size + 2:
                return -1
        while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
            pass  # trailers
        return total

    def _body_len(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._chunked_len()
        n = self.headers.get("Content-Length")
        if n is None:
            return 0
        try:
            n = int(n)
        except ValueError:
            return -1
        if n < 0 or n > MAX_BODY:
            return -1
        remaining = n
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 65536))
            if not chunk:
                break
            remaining -= len(chunk)
        return n - remaining

    def _answer(self):
        body_len = self._body_len()
        addr, port = self.server.server_address[:2]
        self.server.log.write({
            "addr": addr,
            "port": port,
            "scheme": self.server.scheme,
            "method": self.command,
            "path": self.path,
            "headers": [[k, v] for k, v in self.headers.raw_items()],
            "body_len": body_len,
        })
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        if url.path == "/big":
            self._send_big(query)
            return
        if url.path == "/slow":
            ms = min(max(int(query.get("ms", ["1000"])[0]), 0), MAX_SLOW_MS)
            time.sleep(ms / 1000)
        if self.server.scheme == "https":
            body = b"hello over tls\n"
        else:
            body = ("hello from %s\n" % addr).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_big(self, query):
        mib = min(max(int(query.get("mib", ["4"])[0]), 0), MAX_BIG_MIB)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(mib << 20))
        self.end_headers()
        block = b"x" * (1 << 20)
        try:
            for _ in range(mib):
                self.wfile.write(block)
        except OSError:  # the proxy cut the connection: expected
            self.close_connection = True

    do_GET = _answer
    do_POST = _answer


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, port, scheme, log, tls_context=None):
        self.scheme = scheme
        self.log = log
        self.tls_context = tls_context
        super().__init__((addr, port), Handler)

    def finish_request(self, request, client_address):
        # TLS in the connection's own thread, so a client that stalls in the
        # handshake cannot block the accept loop.
        request.settimeout(15)
        if self.tls_context is not None:
            request = self._handshake(request)
            if request is None:
                return
        super().finish_request(request, client_address)

    def _handshake(self, sock):
        addr, port = self.server_address[:2]
        SEEN.sni = None  # set by on_sni, in this thread, during the handshake
        try:
            tls = self.tls_context.wrap_socket(sock, server_side=True)
        except (OSError, ssl.SSLError) as e:
            self.log.write({"addr": addr, "port": port, "tls": "error",
                            "sni": SEEN.sni, "error": str(e)[:200]})
            sock.close()
            return None
        self.log.write({"addr": addr, "port": port, "tls": "ok", "sni": SEEN.sni, "error": None})
        return tls


# The server name of the handshake in progress, per handler thread (the
# context and its callback are shared by every connection).
SEEN = threading.local()


def on_sni(ssl_sock, name, ctx):
    SEEN.sni = name


def tls_context(cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.sni_callback = on_sni
    return ctx


def bind_pair(http_port, https_port, log, ctx):
    """Four servers on the same two ports at both addresses, or None."""
    made = []
    try:
        for scheme, port in (("http", http_port), ("https", https_port)):
            first = Server(ORIGIN_ADDR, port, scheme, log, ctx if scheme == "https" else None)
            made.append(first)
            port = first.server_address[1]
            made.append(Server(LOOPBACK_ADDR, port, scheme, log, ctx if scheme == "https" else None))
        return made
    except OSError:
        for s in made:
            s.server_close()
        return None


def watch_parent(parent):
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(0.5)


def main():
    if len(sys.argv) not in (5, 7):
        sys.exit(__doc__)
    ready, log_path, cert, key = sys.argv[1:5]
    want = (int(sys.argv[5]), int(sys.argv[6])) if len(sys.argv) == 7 else (18080, 18443)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    threading.Thread(target=watch_parent, args=(os.getppid(),), daemon=True).start()
    log = Log(log_path)
    ctx = tls_context(cert, key)
    servers = bind_pair(want[0], want[1], log, ctx)
    for _ in range(50):
        if servers:
            break
        servers = bind_pair(0, 0, log, ctx) if random.random() < 0.5 else \
            bind_pair(random.randint(20000, 60000), random.randint(20000, 60000), log, ctx)
    if not servers:
        sys.exit("servers.py: found no pair of free ports on %s and %s" % (ORIGIN_ADDR, LOOPBACK_ADDR))
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    http_port = servers[0].server_address[1]
    https_port = servers[2].server_address[1]
    with open(ready + ".tmp", "w") as f:
        f.write("%d %d\n" % (http_port, https_port))
    os.rename(ready + ".tmp", ready)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
