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
 * prints totals 2, 4, 6. A NUL byte is never a vowel.
 *
 * It is also what bench/plugin.sh measures (calls per second), so it does
 * per call only what a call needs: the input is read 8 bytes per host call
 * and each byte is one look-up in a 256-entry membership table; the table
 * and the quoted vowel set are rebuilt only when config "vowels" differs
 * from the previous call's (the config is read every call: an Extism host
 * may change it between calls); the answer is formatted by hand into a
 * static buffer (snprintf and malloc cost more than the counting).
 *
 * Built by examples/plugins/build.sh with clang-14 for wasm32-wasi.
 */
#include "airlock_pdk.h"

#define DEFAULT_VOWELS "aeiouAEIOU"

/* What the vowel set in force implies, kept between calls of an instance. */
typedef struct vowel_set {
    bool ready;
    char *text;            /* config "vowels" (malloc'ed), NULL: the default */
    size_t len;
    char *json;            /* the set as a JSON string literal (malloc'ed) */
    size_t json_len;
    uint8_t member[256];   /* member[b]: b is a vowel (member[0] stays 0) */
} vowel_set;

static vowel_set current;

/* Make current describe text (NULL: the default set); takes text. */
static bool vowels_set(char *text, size_t len) {
    const char *s = text ? text : DEFAULT_VOWELS;
    size_t n = text ? len : sizeof DEFAULT_VOWELS - 1;
    char *json = pdk_json_quote(s, n);
    if (!json) {
        free(text);
        return false;
    }
    free(current.text);
    free(current.json);
    current.text = text;
    current.len = len;
    current.json = json;
    current.json_len = strlen(json);
    memset(current.member, 0, sizeof current.member);
    for (size_t i = 0; i < n; i++) current.member[(uint8_t)s[i]] = 1;
    current.member[0] = 0;
    current.ready = true;
    return true;
}

/* The set for this call: config "vowels" when set, else the default. */
static bool vowels_for_call(void) {
    size_t len;
    char *text = pdk_config_dup("vowels", &len);
    bool same = current.ready &&
                (text ? current.text && current.len == len && memcmp(current.text, text, len) == 0
                      : !current.text);
    if (same) {
        free(text);
        return true;
    }
    return vowels_set(text, len);
}

/* Vowels among the 4 bytes of w. */
static uint32_t count4(uint32_t w) {
    const uint8_t *m = current.member;
    return m[w & 255] + m[(w >> 8) & 255] + m[(w >> 16) & 255] + m[w >> 24];
}

/* Vowels in the input, read 8 bytes per host call; a tail of 1 to 7 bytes
 * is the top bytes of one more load of the input's last 8 bytes. */
static uint64_t count_input(void) {
    uint64_t n = pdk_env_input_length(), whole = n & ~(uint64_t)7, count = 0;
    for (uint64_t off = 0; off < whole; off += 8) {
        uint64_t w = pdk_env_input_load_u64(off);
        count += count4((uint32_t)w) + count4((uint32_t)(w >> 32));
    }
    uint64_t rest = n - whole;
    if (rest && n >= 8) {
        uint64_t w = pdk_env_input_load_u64(n - 8) >> (8 * (8 - rest));
        for (; rest; rest--, w >>= 8) count += current.member[w & 255];
    }
    for (uint64_t off = whole; off < n && n < 8; off++)
        count += current.member[pdk_env_input_load_u8(off)];
    return count;
}

/* total += count in var "total" (a little-endian u64; anything else counts
 * as 0), one key block for both host calls. Returns the new total. */
static bool add_to_total(uint64_t count, uint64_t *total) {
    pdk_handle key = pdk_alloc_copy("total", 5);
    if (!key) return false;
    uint64_t t = 0;
    pdk_handle old = pdk_env_var_get(key);
    if (old) {
        if (pdk_env_length(old) == 8) t = pdk_env_load_u64(old);
        pdk_env_free(old);
    }
    t += count;
    pdk_handle value = pdk_env_alloc(8);
    if (value) {
        pdk_env_store_u64(value, t);
        pdk_env_var_set(key, value);
        pdk_env_free(value);
    }
    pdk_env_free(key);
    *total = t;
    return value != 0;
}

static char *put_str(char *o, const char *s, size_t n) {
    memcpy(o, s, n);
    return o + n;
}

static char *put_u64(char *o, uint64_t v) {
    char digits[20];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n) *o++ = digits[--n];
    return o;
}

PDK_EXPORT(count_vowels) {
    if (!vowels_for_call()) return pdk_error_set("count_vowels: out of memory");
    uint64_t count = count_input(), total;
    if (!add_to_total(count, &total)) return pdk_error_set("count_vowels: out of memory");

    /* {"count":,"total":,"vowels":} is 29 bytes, each number at most 20. */
    static char small[256];
    size_t cap = current.json_len + 29 + 40;
    char *out = cap <= sizeof small ? small : malloc(cap);
    if (!out) return pdk_error_set("count_vowels: out of memory");
    char *o = put_str(out, "{\"count\":", 9);
    o = put_u64(o, count);
    o = put_str(o, ",\"total\":", 9);
    o = put_u64(o, total);
    o = put_str(o, ",\"vowels\":", 10);
    o = put_str(o, current.json, current.json_len);
    *o++ = '}';
    bool ok = pdk_output_set(out, (size_t)(o - out));
    if (out != small) free(out);
    return ok ? 0 : pdk_error_set("count_vowels: the host refused the output");
}
