# Case 16 in Python: airlock runs with host files open on fds 3 and 7
# ("HOST-FD-SECRET"); no fd number may reach them. The interpreter's own
# grants (its stdlib directory) are fine; host content is not.
import os, sys

denied = leaks = wrong = 0
for fd in range(3, 1100):
    try:
        data = os.pread(fd, 64, 0)
    except OSError as e:
        if fd in (3, 7):
            print("DENIED %d os.pread(%d): %s" % (e.errno or 0, fd, e.strerror)); denied += 1
        continue
    if b"HOST-FD-SECRET" in data:
        print("LEAK fd %d: %r" % (fd, data)); leaks += 1
print("DONE denied=%d leaks=%d wrong=%d" % (denied, leaks, wrong))
sys.exit(1 if leaks else 2 if wrong else 0)
