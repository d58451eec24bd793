/*
 * Case 14's base module: a small but real WASI program (args, environment,
 * stdout, heap, a little recursion and arithmetic), deliberately without
 * printf so the module stays small and byte flips land in every section.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned fib(unsigned n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static void put(const char *s) { (void)!write(1, s, strlen(s)); }

static void put_uint(unsigned v) {
    char b[16];
    int i = 15;
    b[i] = '\0';
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(b + i);
}

int main(int argc, char **argv) {
    put("hello from ");
    put(argc > 0 ? argv[0] : "?");
    put(", fib(20)=");
    put_uint(fib(20));
    put("\n");
    const char *e = getenv("GREETING");
    if (e) {
        put(e);
        put("\n");
    }
    char *p = malloc(1000);
    if (p) {
        memset(p, 'x', 999);
        p[999] = '\0';
        put_uint((unsigned)strlen(p));
        put(" heap bytes ok\n");
        free(p);
    }
    return argc > 3 ? 3 : 0;
}
