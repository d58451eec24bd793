#!/usr/bin/env python3
"""tests/sandbox/listener.py — the host-side target of the network cases.

    listener.py PORTS_FILE LOG_FILE UNIX_NAME

Listens on the host's loopback only: TCP and UDP on 127.0.0.1 (ports chosen
by the kernel) and the abstract unix socket @UNIX_NAME. Writes
"TCP_PORT UDP_PORT" to PORTS_FILE once ready (atomically: written to a
temporary name, then renamed), then appends one line to LOG_FILE for every
connection or datagram it receives, until killed. A sandbox must never reach
it: the test fails if LOG_FILE is not empty.
"""
import os
import select
import socket
import sys


def main():
    ports_file, log_file, unix_name = sys.argv[1:4]
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(16)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    uds = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    uds.bind("\0" + unix_name)
    uds.listen(16)
    with open(ports_file + ".tmp", "w") as f:
        f.write("%d %d\n" % (tcp.getsockname()[1], udp.getsockname()[1]))
    os.rename(ports_file + ".tmp", ports_file)
    with open(log_file, "a", buffering=1) as log:
        while True:
            ready, _, _ = select.select([tcp, udp, uds], [], [])
            for s in ready:
                if s is udp:
                    data, peer = udp.recvfrom(4096)
                    log.write("udp from %s: %r\n" % (peer, data[:80]))
                    continue
                conn, peer = s.accept()
                conn.settimeout(1)
                try:
                    data = conn.recv(4096)
                except OSError:
                    data = b""
                conn.close()
                log.write("%s connection from %r: %r\n" % ("tcp" if s is tcp else "unix", peer, data[:80]))


if __name__ == "__main__":
    main()
