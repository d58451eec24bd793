/*
 * auth.c — bearer-token authentication: "Authorization: Bearer <token>" →
 * the configured svc_token whose SHA-256 matches.
 *
 * Invariants:
 *   - The header is hostile: the scheme is "Bearer" in any case, then one or
 *     more spaces, then an RFC 6750 b64token (ALPHA / DIGIT / "-" / "." /
 *     "_" / "~" / "+" / "/", then any "="), then optional trailing blanks;
 *     at most MAX_TOKEN_LEN bytes. Anything else is no token (NULL).
 *   - Only hashes are compared: the presented token is hashed, and the hash
 *     is compared with EVERY configured hash by CRYPTO_memcmp (constant
 *     time, no early exit on the first match or the first differing byte),
 *     so the time taken says nothing about which token or prefix matched.
 */
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "service.h"

#define MAX_TOKEN_LEN 4096

static bool is_b64token_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == '+' || ch == '/';
}

/* The token of "Bearer <token>" into out (NUL-terminated); false when the
 * header is not exactly that. */
static bool bearer_token(const char *h, char *out, size_t cap) {
    if (strncasecmp(h, "Bearer", 6) != 0 || h[6] != ' ') return false;
    const char *t = h + 6;
    while (*t == ' ') t++;
    size_t n = 0;
    while (is_b64token_char(t[n])) n++;
    if (n == 0) return false;
    while (t[n] == '=') n++;
    const char *rest = t + n;
    while (*rest == ' ' || *rest == '\t') rest++;
    if (*rest != '\0' || n >= cap) return false;
    memcpy(out, t, n);
    out[n] = '\0';
    return true;
}

const svc_token *svc_auth(const svc_config *c, const char *authorization) {
    if (!c || !authorization || c->ntokens == 0) return NULL;
    char token[MAX_TOKEN_LEN + 1];
    if (!bearer_token(authorization, token, sizeof token)) return NULL;
    uint8_t hash[32];
    svc_token_hash(token, hash);
    OPENSSL_cleanse(token, sizeof token);
    const svc_token *found = NULL;
    for (size_t i = 0; i < c->ntokens; i++) {
        /* no break: every token costs the same comparison */
        int differs = CRYPTO_memcmp(hash, c->tokens[i].sha256, sizeof hash);
        if (differs == 0 && !found) found = &c->tokens[i];
    }
    return found;
}
