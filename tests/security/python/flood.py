# Case 12 in Python: write 100 MiB to stdout; airlock keeps exactly 1 MiB.
import sys

line = "A" * 63 + "\n"
block = (line * 1024).encode()  # 64 KiB
out = sys.stdout.buffer
for _ in range(1600):
    out.write(block)
out.flush()
