# Case 7 in Python: the host's environment (AIRLOCK_SECRET=hunter2, PATH, ...)
# must not be visible; only --env GRANTED=yes, plus whatever `airlock python`
# itself sets for the interpreter (PYTHONHOME and the like).
import os, sys

denied = leaks = wrong = 0
for k, v in sorted(os.environ.items()):
    print("ENV %s=%s" % (k, v))
secret = os.environ.get("AIRLOCK_SECRET")
if secret is not None:
    print("LEAK os.environ[AIRLOCK_SECRET]: %r" % secret); leaks += 1
else:
    print("DENIED 44 os.environ[AIRLOCK_SECRET]: absent"); denied += 1
for k in ("PATH", "HOME", "USER", "PWD", "SHELL", "ASAN_OPTIONS"):
    if k in os.environ:
        print("LEAK os.environ[%s]: %r" % (k, os.environ[k])); leaks += 1
if any("hunter2" in v for v in os.environ.values()):
    print("LEAK hunter2 in the environment"); leaks += 1
if os.environ.get("GRANTED") != "yes":
    print("WRONG sanity: GRANTED=yes is missing"); wrong += 1
print("DONE denied=%d leaks=%d wrong=%d" % (denied, leaks, wrong))
sys.exit(1 if leaks else 2 if wrong else 0)
