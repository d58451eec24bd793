#!/usr/bin/env python3
"""fake_registry.py — what a real registry cannot be made to do, for tests/cap/run.sh.

    fake_registry.py PORT_FILE registry   a hostile OCI registry on 127.0.0.1
    fake_registry.py PORT_FILE silent     accepts connections, never answers

Both bind port 0 on loopback and write the port to PORT_FILE once listening.

registry mode serves:
  /v2/big/manifests/1          an airlock manifest whose layer claims exactly
                               10 MiB (the default limit, so it passes the
                               up-front checks) ...
  /v2/big/blobs/<layer>        ... and streams 12 MiB for it, chunked (no
                               Content-Length): only the client's mid-stream cap
                               can stop it. Bytes sent are appended to
                               PORT_FILE.sent (the kernel's buffers absorb
                               some, so this is an upper bound).
  /v2/evil/manifests/<ref>     a manifest whose bytes do not hash to <ref>
                               (asked by digest) and whose Docker-Content-Digest
                               lies (asked by tag)
  /v2/redir/manifests/1        a small capability whose blobs answer 307 to
  /storage/<digest>            where the bytes are (what CDNs do)
  /v2/auth/...                 the small capability, 401 unless the request
                               carries "Authorization: Bearer s3cret"
  /v2/empty/manifests/1        a capability whose config is the empty blob
  /v2/<any>/blobs/<config>     the config blob "{}" (or the empty one)
"""
import hashlib
import http.server
import json
import os
import socket
import sys

MIB = 1 << 20
CONFIG = b"{}"
CONFIG_DIGEST = "sha256:" + hashlib.sha256(CONFIG).hexdigest()
BIG = b"\0asm\1\0\0\0" + bytes(12 * MIB - 8)
BIG_DIGEST = "sha256:" + hashlib.sha256(BIG).hexdigest()


def manifest(layer_digest, layer_size):
    return json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.airlock.capability.v1",
        "config": {"mediaType": "application/vnd.airlock.capability.config.v1+json",
                   "digest": CONFIG_DIGEST, "size": len(CONFIG)},
        "layers": [{"mediaType": "application/wasm", "digest": layer_digest,
                    "size": layer_size}],
    }, sort_keys=True, separators=(",", ":")).encode()


BIG_MANIFEST = manifest(BIG_DIGEST, 10 * MIB)
SMALL = b"\0asm\1\0\0\0"
SMALL_DIGEST = "sha256:" + hashlib.sha256(SMALL).hexdigest()
SMALL_MANIFEST = manifest(SMALL_DIGEST, len(SMALL))
TOKEN = "Bearer s3cret"
EMPTY_DIGEST = "sha256:" + hashlib.sha256(b"").hexdigest()
EMPTY_MANIFEST = manifest(SMALL_DIGEST, len(SMALL)).replace(
    CONFIG_DIGEST.encode(), EMPTY_DIGEST.encode()).replace(
    b'"size":%d}' % len(CONFIG), b'"size":0}', 1)
EVIL_MANIFEST = manifest(CONFIG_DIGEST, len(CONFIG))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sent_file = None

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def stream_big(self):
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        sent = 0
        try:
            for off in range(0, len(BIG), 64 * 1024):
                chunk = BIG[off:off + 64 * 1024]
                self.wfile.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                sent += len(chunk)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with open(self.sent_file, "a") as f:
                f.write("%d\n" % sent)
        self.close_connection = True

    def do_GET(self):
        path = self.path
        if path == "/v2/":
            return self.reply(200, b"{}")
        if path == "/v2/big/manifests/1":
            return self.reply(200, BIG_MANIFEST,
                              [("Content-Type", "application/vnd.oci.image.manifest.v1+json")])
        if path == "/v2/big/blobs/" + BIG_DIGEST:
            return self.stream_big()
        if path.startswith("/v2/evil/manifests/"):
            ref = path.rsplit("/", 1)[1]
            lie = ref if ref.startswith("sha256:") else "sha256:" + "0" * 64
            return self.reply(200, EVIL_MANIFEST,
                              [("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
                               ("Docker-Content-Digest", lie)])
        if path.startswith("/v2/auth/") and self.headers.get("Authorization") != TOKEN:
            return self.reply(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"token"}]}',
                              [("WWW-Authenticate", 'Bearer realm="fake"')])
        if path in ("/v2/redir/manifests/1", "/v2/auth/manifests/1"):
            return self.reply(200, SMALL_MANIFEST,
                              [("Content-Type", "application/vnd.oci.image.manifest.v1+json")])
        if path == "/v2/empty/manifests/1":
            return self.reply(200, EMPTY_MANIFEST)
        if path.endswith("/blobs/" + EMPTY_DIGEST):
            return self.reply(200, b"")
        if path == "/v2/redir/blobs/" + SMALL_DIGEST:
            return self.reply(307, b"moved", [("Location", "/storage/" + SMALL_DIGEST)])
        if path in ("/storage/" + SMALL_DIGEST, "/v2/auth/blobs/" + SMALL_DIGEST):
            return self.reply(200, SMALL)
        if path.endswith("/blobs/" + CONFIG_DIGEST):
            return self.reply(200, CONFIG)
        return self.reply(404, b'{"errors":[{"code":"NAME_UNKNOWN","message":"fake"}]}')

    do_HEAD = do_GET


def write_port(port_file, port):
    # atomically: the test reads the file as soon as it exists
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.replace(port_file + ".tmp", port_file)


def silent(port_file):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    write_port(port_file, s.getsockname()[1])
    held = []
    while True:
        c, _ = s.accept()
        held.append(c)  # never read, never answered


def main():
    port_file, mode = sys.argv[1], sys.argv[2]
    if mode == "silent":
        return silent(port_file)
    Handler.sent_file = port_file + ".sent"
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    write_port(port_file, srv.server_address[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
