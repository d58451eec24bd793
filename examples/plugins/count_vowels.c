/*
 * count_vowels.c — an example plugin (pdk/airlock_pdk.h): the function
 * `count_vowels` counts the vowels of its input and answers
 *
 *   {"count": N, "total": T, "vowels": "aeiouAEIOU"}
 *
 * where the vowel set is config "vowels" when it is set (manifest "config" or
 * `--config vowels=...`), and T is a running total kept in var "total": vars
 * live in the host and survive between calls of one instance, so
 * `airlock plugin call count_vowels.wasm count_vowels --input hello --repeat 3`
 * prints totals 2, 4, 6.
 *
 * Built by examples/plugins/build.sh with clang-14 for wasm32-wasi.
 */
#include "airlock_pdk.h"

#define DEFAULT_VOWELS "aeiouAEIOU"

PDK_EXPORT(count_vowels) {
    size_t len;
    uint8_t *input = pdk_input(&len);
    size_t nvowels;
    char *vowels = pdk_config_dup("vowels", &nvowels);
    if (!vowels) {
        vowels = strdup(DEFAULT_VOWELS);
        nvowels = strlen(DEFAULT_VOWELS);
    }
    if (!input || !vowels) return pdk_error_set("count_vowels: out of memory");

    uint64_t count = 0;
    for (size_t i = 0; i < len; i++)
        if (input[i] && memchr(vowels, input[i], nvowels)) count++;
    uint64_t total = pdk_var_get_u64("total") + count;
    pdk_var_set_u64("total", total);

    char *quoted = pdk_json_quote(vowels, nvowels);
    size_t cap = (quoted ? strlen(quoted) : 0) + 96;
    char *out = malloc(cap);
    int32_t rc = 0;
    if (!quoted || !out) {
        rc = pdk_error_set("count_vowels: out of memory");
    } else {
        int n = snprintf(out, cap, "{\"count\":%llu,\"total\":%llu,\"vowels\":%s}",
                         (unsigned long long)count, (unsigned long long)total, quoted);
        pdk_output_set(out, (size_t)n);
    }
    free(out);
    free(quoted);
    free(vowels);
    free(input);
    return rc;
}
