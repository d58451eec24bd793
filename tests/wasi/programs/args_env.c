/* args_env.c — argv and environ as the guest sees them (args_get,
 * args_sizes_get, environ_get, environ_sizes_get through wasi-libc). */
// @case:
// @case: $(seq 1 3000)
// @case: "$(printf '%0100000d' 7)" short
// @case: one "two words" '' $'tab\tand newline\nok' -dash --long=value 'üñíçødé' '*' '$HOME' $'\x7f\x01'
// @env: FOO=bar
// @env: EMPTY=
// @env: WITH_EQUALS=a=b=c
// @env: SPACES=  spaced out  
// @env: UNICODE=héllo wörld
// @env: FOO=overridden
// @exit: 0
#include "common.h"

extern char **environ;

static int cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    printf("argc: %d\n", argc);
    for (int i = 0; i < argc; i++) {
        printf("argv[%d]: \"", i);
        put_escaped(argv[i], strlen(argv[i]));
        printf("\" (%zu bytes)\n", strlen(argv[i]));
    }
    printf("argv[argc] is NULL: %s\n", argv[argc] == NULL ? "yes" : "no");

    size_t n = 0;
    while (environ && environ[n]) n++;
    printf("environ entries: %zu\n", n);
    char **sorted = calloc(n + 1, sizeof *sorted);
    memcpy(sorted, environ, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp);
    for (size_t i = 0; i < n; i++) {
        printf("env: \"");
        put_escaped(sorted[i], strlen(sorted[i]));
        printf("\"\n");
    }
    const char *names[] = {"FOO", "EMPTY", "WITH_EQUALS", "SPACES", "UNICODE", "MISSING", "PATH", "HOME"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        printf("getenv(%s): ", names[i]);
        if (!v) {
            printf("NULL\n");
        } else {
            putchar('"');
            put_escaped(v, strlen(v));
            printf("\"\n");
        }
    }
    printf("setenv: %d\n", setenv("NEW", "value", 1));
    printf("getenv(NEW) after setenv: %s\n", getenv("NEW") ? getenv("NEW") : "NULL");
    printf("unsetenv(FOO): %d, getenv(FOO): %s\n", unsetenv("FOO"), getenv("FOO") ? "set" : "NULL");
    return 0;
}
