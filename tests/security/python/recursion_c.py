# Case 11 in Python, through C: repr() of a list nested a million deep
# recurses in C (list_repr), on the guest's C stack, with the recursion limit
# lifted so CPython does not stop it first. The guest's stack overflows: the
# engine's "call stack exhausted" or an out-of-bounds trap (70), or a
# RecursionError / MemoryError caught here (rc 0).
import sys

sys.setrecursionlimit(10 ** 8)
lst = []
for _ in range(1000000):
    lst = [lst]
print("built", flush=True)
try:
    s = repr(lst)
except (RecursionError, MemoryError) as e:
    print("DENIED 0 %s: %s" % (type(e).__name__, str(e)[:80]))
    print("DONE denied=1 leaks=0 wrong=0")
    sys.exit(0)
print("WRONG repr returned %d characters" % len(s))
print("DONE denied=0 leaks=0 wrong=1")
sys.exit(2)
