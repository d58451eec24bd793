/*
 * fuzz_sni.c — libFuzzer target for sni_parse (src/net/sni.c), whose input
 * comes straight from a sandboxed program. Built by tests/fuzz/build.sh into
 * build/fuzz/fuzz_sni with ASan + UBSan; run by tests/fuzz/short.sh.
 *
 * Besides memory safety it checks the contract the proxy relies on:
 *   - FOUND leaves a NUL-terminated name of 1..253 bytes from the host-name
 *     alphabet; any other result leaves "" (the name buffer is poisoned
 *     with 'X' first, so a missing terminator is seen);
 *   - verdicts are stable: a prefix of the input gives NEED_MORE or the
 *     same verdict as the whole input (the proxy reads more bytes only on
 *     NEED_MORE, so a verdict that changed with more bytes would be a
 *     check the sandbox could steer by how it splits its writes).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

static void check_name(sni_result r, const char *name)
{
    if (r == SNI_FOUND) {
        size_t n = strnlen(name, EGRESS_MAX_NAME + 1);
        if (n < 1 || n > EGRESS_MAX_NAME)
            abort();
        for (size_t i = 0; i < n; i++)
            if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789-.", name[i]))
                abort();
    } else if ((int)r < SNI_FOUND || r > SNI_MALFORMED || name[0] != '\0') {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char name[EGRESS_MAX_NAME + 1];
    memset(name, 'X', sizeof name);
    sni_result whole = sni_parse(data, size, name);
    check_name(whole, name);

    /* a few prefixes (the fuzzer gives exactly-sized buffers, so ASan sees
     * overreads of the whole input; prefixes are checked for stability) */
    size_t cuts[] = { size / 2, size ? size - 1 : 0, size / 3 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        memset(name, 'X', sizeof name);
        sni_result r = sni_parse(data, cuts[i], name);
        check_name(r, name);
        if (cuts[i] < size && r != SNI_NEED_MORE && r != whole)
            abort();
    }
    return 0;
}
