"""tests/net/guest.py — what the egress tests run inside the sandbox.

    python3 -c "$(cat tests/net/guest.py)" COMMAND ARGS... [--then COMMAND ARGS...]...

Runs as the sandboxed program (uid 1000, Debian's python3, its own network
namespace). Every command prints result lines that tests/net/run.sh judges on
the host; it never decides PASS/FAIL itself. The proxy is 127.0.0.1:3128
(what HTTP_PROXY names when the policy grants any domain).

  get URL [CAFILE]        urllib.request with the proxy from the environment
                          (absolute-form GET for http://, CONNECT for https://,
                          an ssl context trusting only CAFILE): "STATUS n" and
                          "BODY repr", or "ERROR type: text"
  tunnel HOST PORT SNI CAFILE
                          CONNECT HOST:PORT by hand, then TLS with server name
                          SNI (domain fronting when SNI != HOST):
                          "CONNECT status-line", then "TLS ok BODY repr" or
                          "TLS closed type"
  raw HEX                 the bytes HEX sent to the proxy as they are, one
                          connection: "REPLY status-line" and "BODY repr"
  direct HOST PORT...     a TCP connect to each HOST:PORT, ignoring the proxy:
                          "DIRECT host:port connected|refused: why"
  idle [HOST:PORT]        a connection to the proxy that then says nothing
                          (after "CONNECT HOST:PORT" and its answer, if given):
                          "IDLE closed after S s" or "IDLE still open after 10 s"
  ifaces                  "IFACES" and the interface names of this namespace
  env                     "ENV name=value" for every *proxy* variable
"""
import os
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request

PROXY = ("127.0.0.1", 3128)


def cmd_get(url, cafile=None):
    ctx = ssl.create_default_context(cafile=cafile) if cafile else None
    try:
        with urllib.request.urlopen(url, timeout=20, context=ctx) as r:
            print("STATUS", r.status)
            print("BODY", repr(r.read(4096).decode("latin-1")))
    except urllib.error.HTTPError as e:
        print("STATUS", e.code)
        print("BODY", repr(e.read(4096).decode("latin-1")))
    except (urllib.error.URLError, OSError) as e:
        print("ERROR %s: %s" % (type(e).__name__, e))


def read_head(sock):
    """The response head, byte by byte: no byte of what follows is taken."""
    head = b""
    while not head.endswith(b"\r\n\r\n") and len(head) < 16384:
        b = sock.recv(1)
        if not b:
            break
        head += b
    return head.decode("latin-1")


def cmd_tunnel(host, port, sni, cafile):
    sock = socket.create_connection(PROXY, timeout=10)
    sock.sendall(("CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (host, port, host, port)).encode())
    head = read_head(sock)
    print("CONNECT", head.split("\r\n")[0])
    if " 200 " not in head.split("\r\n")[0] + " ":
        return
    ctx = ssl.create_default_context(cafile=cafile)
    try:
        tls = ctx.wrap_socket(sock, server_hostname=sni)
        tls.sendall(("GET /tunnel HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n" % (sni, port)).encode())
        data = b""
        while True:
            chunk = tls.recv(4096)
            if not chunk:
                break
            data += chunk
        print("TLS ok BODY", repr(data.split(b"\r\n\r\n", 1)[-1].decode("latin-1")))
    except (OSError, ssl.SSLError) as e:
        print("TLS closed", type(e).__name__)


def cmd_raw(hexbytes):
    sock = socket.create_connection(PROXY, timeout=10)
    sock.sendall(bytes.fromhex(hexbytes))
    data = b""
    try:
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError as e:
        data += ("\n<%s>" % type(e).__name__).encode()
    head, _, body = data.partition(b"\r\n\r\n")
    print("REPLY", head.split(b"\r\n")[0].decode("latin-1"))
    print("BODY", repr(body.decode("latin-1")))


def cmd_direct(*targets):
    for t in targets:
        host, port = t.rsplit(":", 1)
        try:
            s = socket.create_connection((host, int(port)), timeout=3)
            s.close()
            print("DIRECT %s connected" % t)
        except OSError as e:
            print("DIRECT %s refused: %s" % (t, e))


def cmd_idle(target=None):
    sock = socket.create_connection(PROXY, timeout=10)
    t0 = time.monotonic()
    if target:
        sock.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        print("CONNECT", read_head(sock).split("\r\n")[0])
        t0 = time.monotonic()
    try:
        while sock.recv(4096):
            pass
        print("IDLE closed after %.1f s" % (time.monotonic() - t0))
    except socket.timeout:
        print("IDLE still open after 10 s")
    except OSError as e:
        print("IDLE closed after %.1f s (%s)" % (time.monotonic() - t0, type(e).__name__))


def cmd_ifaces():
    # /proc/net/dev: this network namespace's interfaces (the netlink socket
    # behind socket.if_nameindex() may be refused by the sandbox)
    with open("/proc/net/dev") as f:
        names = [line.split(":")[0].strip() for line in f if ":" in line]
    print("IFACES", " ".join(sorted(names)))


def cmd_env():
    for k, v in sorted(os.environ.items()):
        if "proxy" in k.lower():
            print("ENV %s=%s" % (k, v))


COMMANDS = {"get": cmd_get, "tunnel": cmd_tunnel, "raw": cmd_raw, "direct": cmd_direct,
            "idle": cmd_idle, "ifaces": cmd_ifaces, "env": cmd_env}

def main(argv):
    command = []
    for arg in argv + ["--then"]:
        if arg != "--then":
            command.append(arg)
            continue
        if command:
            COMMANDS[command[0]](*command[1:])
            sys.stdout.flush()
        command = []


if __name__ == "__main__":
    main(sys.argv[1:])
