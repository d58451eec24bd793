# Case 6 in Python: sockets. The test runs a loopback listener on
# 127.0.0.1:$PORT (TCP and UDP) that must hear nothing.
import os, sys

denied = leaks = wrong = 0
port = int(os.environ.get("PORT", "9"))

def deny(what, fn):
    global denied, leaks
    try:
        r = fn()
    except (OSError, ImportError, AttributeError) as e:
        print("DENIED %d %s: %s: %s" % (getattr(e, "errno", 0) or 0, what, type(e).__name__, e))
        denied += 1
    else:
        print("LEAK %s: %r" % (what, r))
        leaks += 1

def tcp():
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /airlock-leak HTTP/1.0\r\n\r\n")
    return "connected"

def udp():
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    return s.sendto(b"airlock-leak", ("127.0.0.1", port))

def create_connection():
    import socket
    return socket.create_connection(("127.0.0.1", port), timeout=2)

def urllib_get():
    import urllib.request
    return urllib.request.urlopen("http://127.0.0.1:%d/airlock-leak" % port, timeout=2).read(64)

def fromfd():
    import socket
    return socket.socket(fileno=3)

deny("socket.connect(127.0.0.1:%d)" % port, tcp)
deny("udp sendto(127.0.0.1:%d)" % port, udp)
deny("socket.create_connection", create_connection)
deny("urllib.request.urlopen", urllib_get)
deny("socket.socket(fileno=3)", fromfd)
print("DONE denied=%d leaks=%d wrong=%d" % (denied, leaks, wrong))
sys.exit(1 if leaks else 2 if wrong else 0)
