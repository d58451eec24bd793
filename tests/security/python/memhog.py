# Case 10 in Python: 1 MiB at a time under --memory 64M. Either the host ends
# the run (memory_limit) or Python raises MemoryError, caught here.
import sys

blocks = []
try:
    while True:
        b = bytearray(1 << 20)
        b[::4096] = b"x" * len(b[::4096])
        blocks.append(b)
        if len(blocks) > 4096:
            print("LEAK no memory limit: %d MiB allocated" % len(blocks))
            print("DONE denied=0 leaks=1 wrong=0")
            sys.exit(1)
except MemoryError:
    n = len(blocks)
    blocks = None
    print("DENIED 48 MemoryError after %d MiB" % n)
print("DONE denied=1 leaks=0 wrong=0")
