# fill.py — write PATH in 1 MiB blocks up to 64 MiB: --tmpfs (for /tmp) or
# --file-size must stop it with ENOSPC or EFBIG. Prints "WROTE <bytes>
# errno <e>" (or "ESCAPED"). Python ignores SIGXFSZ, so a file-size limit
# shows as EFBIG. Env: PATH_TO_FILL.
path = os.environ["PATH_TO_FILL"]
written = 0
try:
    with open(path, "wb", buffering=0) as f:
        for _ in range(64):
            written += f.write(b"\x02" * (1 << 20))
    say("ESCAPED %d" % written)
except OSError as e:
    say("WROTE %d errno %d" % (written, e.errno))
