# Case 17 in Python: stdin is empty without --stdin, whatever airlock's own
# stdin holds (the test pipes HOST-STDIN-SECRET into it).
import sys

data = sys.stdin.buffer.read()
print("STDIN %d bytes: %r" % (len(data), data[:64]))
if data:
    print("LEAK stdin: %r" % data[:64])
    print("DONE denied=0 leaks=1 wrong=0")
    sys.exit(1)
print("DENIED 0 stdin is empty")
print("DONE denied=1 leaks=0 wrong=0")
