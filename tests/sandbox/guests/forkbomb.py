# forkbomb.py — fork until refused, keeping every child alive, then keep
# forking forever: --processes must refuse forks (EAGAIN) well before 500
# and --timeout must end the whole tree. Prints "FORKS n errno e" (or
# "FORKS n uncapped" when nothing stopped it: it gives up at 500 so a hole
# does not harm the host). Env: none.
import time

n = 0
stop = None
while n < 500:
    try:
        pid = os.fork()
    except OSError as e:
        stop = e.errno
        break
    if pid == 0:
        time.sleep(3000)
        os._exit(0)
    n += 1
say("FORKS %d %s" % (n, "errno %d" % stop if stop is not None else "uncapped"))
while True:
    try:
        if os.fork() == 0:
            os._exit(0)
    except OSError:
        pass
