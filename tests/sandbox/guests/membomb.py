# membomb.py — allocate and touch memory 16 MiB at a time up to 1 GiB,
# printing "ALLOC <MiB>" after each step: the memory limit must end it
# (status memory_limit) or make it fail (MemoryError: "MEMERR <MiB>") long
# before "ESCAPED". Env: none.
chunks = []
try:
    for i in range(1, 65):
        chunks.append(b"\x01" * (16 << 20))
        say("ALLOC %d" % (16 * i))
    say("ESCAPED 1024")
except MemoryError:
    chunks = None
    say("MEMERR %d" % (16 * (i - 1)))
