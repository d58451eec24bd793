# net.py — reach the host's network from inside: a TCP and a UDP listener and
# an abstract unix socket that the test started on the host's loopback
# (the sandbox has its own network namespace: its 127.0.0.1 is not the
# host's, and abstract unix names are per network namespace). The host side
# checks that its listener heard nothing. Env: TCP_PORT, UDP_PORT, UNIX_NAME.
import socket

TCP_PORT = int(os.environ["TCP_PORT"])
UDP_PORT = int(os.environ["UDP_PORT"])
UNIX_NAME = os.environ["UNIX_NAME"]


def tcp(host):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, TCP_PORT))
        s.sendall(b"ESCAPED tcp\n")
        return "connected to %s:%d" % (host, TCP_PORT)
    finally:
        s.close()


def tcp6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(("::ffff:127.0.0.1", TCP_PORT))
        return "connected over IPv6"
    finally:
        s.close()


def abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0" + UNIX_NAME)
        s.sendall(b"ESCAPED unix\n")
        return "connected to the host's abstract socket"
    finally:
        s.close()


attempt("connect 127.0.0.1:%d" % TCP_PORT, lambda: tcp("127.0.0.1"))
attempt("connect [::ffff:127.0.0.1]:%d" % TCP_PORT, tcp6)
attempt("connect abstract @%s" % UNIX_NAME, abstract)
try:  # a datagram may leave without an error; the host listener tells
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(b"ESCAPED udp\n", ("127.0.0.1", UDP_PORT))
    u.close()
    info("udp datagram sent to the sandbox's own 127.0.0.1:%d" % UDP_PORT)
except OSError as e:
    denied("udp sendto 127.0.0.1:%d" % UDP_PORT, e.errno or 0)
with open("/proc/net/dev") as f:  # (if_nameindex needs netlink: native refuses it)
    names = [l.split(":")[0].strip() for l in f.readlines()[2:]]
info("interfaces %s" % names)
for n in names:
    if n != "lo":
        leak("a network interface other than loopback", n)
done()
