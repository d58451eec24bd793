/*
 * Case 7: the host environment must not be inherited.
 *
 * The test exports AIRLOCK_SECRET=hunter2 (and has PATH, HOME, ...) and
 * grants only GRANTED=yes with --env. The guest prints its whole environment
 * ("ENV <entry>" lines, as environ_get delivers them), its arguments
 * ("ARG <i> <value>") and getenv("AIRLOCK_SECRET"); the harness checks the
 * environment is exactly GRANTED=yes and "hunter2" appears nowhere.
 */
#include "common.h"

extern char **environ;

int main(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        printf("ARG %d %s\n", i, argv[i]);
    /* Raw: what the host hands over, before libc parses it. */
    __wasi_size_t count = 0, size = 0;
    __wasi_errno_t e = __wasi_environ_sizes_get(&count, &size);
    printf("ENVIRON_SIZES errno=%d count=%u bytes=%u\n", e, (unsigned)count, (unsigned)size);
    if (e == 0 && count < 4096 && size < (1u << 20)) {
        uint8_t **ptrs = calloc(count + 1, sizeof *ptrs);
        uint8_t *buf = calloc(size + 1, 1);
        if (__wasi_environ_get(ptrs, buf) == 0) {
            fputs("ENVIRON_RAW ", stdout);
            put_escaped(buf, size);
            putchar('\n');
        }
        free(ptrs);
        free(buf);
    }
    for (char **p = environ; p && *p; p++)
        printf("ENV %s\n", *p);
    const char *secret = getenv("AIRLOCK_SECRET");
    printf("SECRET %s\n", secret ? secret : "(null)");
    if (secret)
        leak(secret, strlen(secret), "getenv(\"AIRLOCK_SECRET\")");
    else
        denied(ENOENT, "getenv(\"AIRLOCK_SECRET\")");
    static const char *const others[] = {"PATH", "HOME", "USER", "PWD", "SHELL", "ASAN_OPTIONS"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        const char *v = getenv(others[i]);
        if (v)
            leak(v, strlen(v), "getenv(\"%s\")", others[i]);
    }
    const char *g = getenv("GRANTED");
    if (!g || strcmp(g, "yes") != 0)
        wrong("sanity: the granted GRANTED=yes is missing (got %s)", g ? g : "(null)");
    return finish();
}
