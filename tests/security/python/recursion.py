# Case 11 in Python: unbounded recursion of Python functions with the
# recursion limit lifted. CPython 3.11 keeps Python-to-Python calls off the C
# stack, so the frames pile up on the heap: a RecursionError or MemoryError
# caught here (rc 0), or the run ends at the memory limit (73) or in a trap
# (70). Any of those; never harm to airlock.
import sys

sys.setrecursionlimit(10 ** 8)

def f(n):
    return f(n + 1) + 1

try:
    f(0)
except (RecursionError, MemoryError) as e:
    print("DENIED 0 %s: %s" % (type(e).__name__, str(e)[:80]))
    print("DONE denied=1 leaks=0 wrong=0")
    sys.exit(0)
print("WRONG recursion returned")
print("DONE denied=0 leaks=0 wrong=1")
sys.exit(2)
