# procdump.py — print everything this program can learn about the
# environment of every process it sees: its own environ, and the environ and
# command line of every /proc pid (pid 1 is airlock's init on native). The
# host looks for its secrets in this output (a program must see only the
# variables granted to it). Env: GRANTED.
for pid in ["self"] + sorted(p for p in os.listdir("/proc") if p.isdigit()):
    for what in ["environ", "cmdline"]:
        try:
            with open("/proc/%s/%s" % (pid, what), "rb") as f:
                data = f.read(65536)
            info("%s/%s %r" % (pid, what, data))
        except OSError as e:
            info("%s/%s unreadable: %s" % (pid, what, e.strerror))
extra = sorted(set(os.environ) - {"GRANTED", "PATH", "HOME", "LANG", "LC_CTYPE", "BACKEND"})
if extra:
    leak("variables that were not granted", extra)
done()
