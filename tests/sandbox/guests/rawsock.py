# rawsock.py — sockets that reach below the sandbox's own TCP/IP: raw IPv4
# and IPv6, AF_PACKET (sniff or forge any frame), netlink (the kernel's
# routing, audit and uevent interfaces), and families with a long history of
# kernel exploits (AF_ALG, AF_VSOCK, AF_KEY, AF_TIPC, AF_XDP, AF_BLUETOOTH).
# Native: seccomp allows only AF_UNIX/AF_INET/AF_INET6 (EPERM otherwise) and
# there is no CAP_NET_RAW. gVisor implements netlink (route, uevent) in its
# own kernel and network stack: reported only; the rest must fail there
# too. Env: none.
import socket

E = {errno.EPERM} if NATIVE else None  # gVisor: EPERM, EAFNOSUPPORT, ...


def sock(family, kind, proto=0):
    s = socket.socket(family, kind, proto)
    s.close()
    return "created"


attempt("socket(AF_INET, SOCK_RAW, ICMP)", lambda: sock(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
        {errno.EPERM, errno.EACCES} if not NATIVE else {errno.EPERM})
attempt("socket(AF_INET, SOCK_RAW, RAW)", lambda: sock(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW),
        {errno.EPERM, errno.EACCES} if not NATIVE else {errno.EPERM})
attempt("socket(AF_INET6, SOCK_RAW, ICMPV6)", lambda: sock(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6),
        None if not NATIVE else {errno.EPERM})
attempt("socket(AF_PACKET, SOCK_RAW)", lambda: sock(17, socket.SOCK_RAW, socket.htons(3)), E)
attempt("socket(AF_PACKET, SOCK_DGRAM)", lambda: sock(17, socket.SOCK_DGRAM, socket.htons(3)), E)
for name, kind, proto in [("ROUTE", socket.SOCK_RAW, 0), ("AUDIT", socket.SOCK_RAW, 9),
                          ("KOBJECT_UEVENT", socket.SOCK_DGRAM, 15)]:
    what = "socket(AF_NETLINK, NETLINK_%s)" % name
    if NATIVE:
        attempt(what, lambda kind=kind, proto=proto: sock(16, kind, proto), E)
    else:
        probe(what + " inside gVisor", lambda kind=kind, proto=proto: sock(16, kind, proto))
for name, family, kind in [("AF_ALG", 38, socket.SOCK_SEQPACKET), ("AF_VSOCK", 40, socket.SOCK_STREAM),
                           ("AF_KEY", 15, socket.SOCK_RAW), ("AF_TIPC", 30, socket.SOCK_RDM),
                           ("AF_XDP", 44, socket.SOCK_RAW), ("AF_BLUETOOTH", 31, socket.SOCK_RAW),
                           ("AF_CAN", 29, socket.SOCK_RAW), ("AF_RDS", 21, socket.SOCK_SEQPACKET)]:
    attempt("socket(%s)" % name, lambda family=family, kind=kind: sock(family, kind), E)
# precondition: the allowed families still work
try:
    sock(socket.AF_UNIX, socket.SOCK_STREAM)
    sock(socket.AF_INET, socket.SOCK_STREAM)
except OSError as e:
    wrong("an allowed socket family failed: %s" % e)
done()
