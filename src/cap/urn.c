/*
 * urn.c — the grammar of capability references: URNs
 * (urn:airlock:cap:NAME:TAG, urn:airlock:cap:NAME@sha256:HEX) and the OCI
 * distribution spec's name, tag and digest rules; media types (RFC 6838).
 *
 * Invariants:
 * - Pure and total: every function takes a length, reads exactly that many
 *   bytes, and refuses a NUL inside them (a C string cut short would make
 *   the checked text differ from the used one).
 * - Whatever passes is safe to paste into a URL path unescaped: names are
 *   [a-z0-9._/-] without empty, "." or ".." components (a separator must sit
 *   between two alphanumerics), tags [A-Za-z0-9._-], digests lowercase hex.
 *   That is the defence against path traversal ("../../v2/other"), query or
 *   fragment injection ("?", "#") and header splitting (CR/LF) through a URN.
 * - Messages quote hostile input through cap_quote: bounded, printable.
 */
#include <stdio.h>
#include <string.h>

#include "cap.h"

void cap_quote(char *out, size_t outlen, const char *s, size_t len) {
    if (outlen == 0) return;
    size_t o = 0;
    const size_t shown = len > 40 ? 40 : len;
    /* room kept for: a 4-byte escape, "...", the closing quote and NUL */
    if (outlen < 10) {
        out[0] = '\0';
        return;
    }
    out[o++] = '"';
    for (size_t i = 0; i < shown && o + 9 < outlen; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\') {
            out[o++] = (char)ch;
        } else {
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
        }
    }
    if (shown < len) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '"';
    out[o] = '\0';
}

static bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

static bool is_alnum(char c) {
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* One path component: [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* */
static bool component_valid(const char *s, size_t len) {
    size_t i = 0;
    if (len == 0 || !is_lower_alnum(s[0])) return false;
    while (i < len) {
        while (i < len && is_lower_alnum(s[i])) i++;
        if (i == len) return true;
        /* a separator, then at least one alphanumeric */
        if (s[i] == '.') {
            i++;
        } else if (s[i] == '_') {
            i++;
            if (i < len && s[i] == '_') i++;
        } else if (s[i] == '-') {
            while (i < len && s[i] == '-') i++;
        } else {
            return false;
        }
        if (i == len || !is_lower_alnum(s[i])) return false;
    }
    return true;
}

bool cap_name_valid(const char *s, size_t len) {
    if (!s || len == 0 || len > CAP_NAME_MAX) return false;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '/') {
            if (!component_valid(s + start, i - start)) return false;
            start = i + 1;
        }
    }
    return true;
}

bool cap_tag_valid(const char *s, size_t len) {
    if (!s || len == 0 || len > CAP_TAG_MAX) return false;
    if (!is_alnum(s[0]) && s[0] != '_') return false;
    for (size_t i = 1; i < len; i++)
        if (!is_alnum(s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-') return false;
    return true;
}

bool cap_digest_valid(const char *s, size_t len) {
    static const char prefix[] = "sha256:";
    if (!s || len != sizeof prefix - 1 + 64) return false;
    if (memcmp(s, prefix, sizeof prefix - 1) != 0) return false;
    for (size_t i = sizeof prefix - 1; i < len; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

/* RFC 6838 restricted-name: [A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126} */
static bool restricted_name_valid(const char *s, size_t len) {
    if (len == 0 || len > 127 || !is_alnum(s[0])) return false;
    for (size_t i = 1; i < len; i++)
        if (!is_alnum(s[i]) && !strchr("!#$&^_.+-", s[i])) return false;
    return true;
}

bool cap_media_type_valid(const char *s, size_t len) {
    if (!s || len == 0 || len > CAP_MEDIA_TYPE_MAX || memchr(s, '\0', len)) return false;
    const char *slash = memchr(s, '/', len);
    if (!slash) return false;
    size_t type_len = (size_t)(slash - s);
    return restricted_name_valid(s, type_len) &&
           restricted_name_valid(slash + 1, len - type_len - 1);
}

bool cap_urn_parse(const char *urn, size_t len, cap_ref *out, al_error *err) {
    const size_t plen = sizeof CAP_URN_PREFIX - 1;
    char q[64];
    memset(out, 0, sizeof *out);
    if (!urn) {
        al_error_set(err, AL_ERR_ARGUMENT, "no capability URN given");
        return false;
    }
    cap_quote(q, sizeof q, urn, len);
    if (memchr(urn, '\0', len)) {
        al_error_set(err, AL_ERR_ARGUMENT, "capability URN %s contains a NUL byte", q);
        return false;
    }
    if (len > CAP_URN_MAX) {
        al_error_set(err, AL_ERR_ARGUMENT, "capability URN %s is longer than %zu bytes", q,
                     (size_t)CAP_URN_MAX);
        return false;
    }
    if (len < plen || memcmp(urn, CAP_URN_PREFIX, plen) != 0) {
        al_error_set(err, AL_ERR_ARGUMENT, "capability URN %s does not start with \"%s\"", q,
                     CAP_URN_PREFIX);
        return false;
    }
    const char *rest = urn + plen;
    size_t rlen = len - plen;
    const char *at = memchr(rest, '@', rlen);
    const char *colon = memchr(rest, ':', rlen);
    /* NAME has neither '@' nor ':', so the first of them ends it. */
    const char *sep = at && (!colon || at < colon) ? at : colon;
    if (!sep) {
        al_error_set(err, AL_ERR_ARGUMENT,
                     "capability URN %s names no version: expected NAME:VERSION or "
                     "NAME@sha256:HEX",
                     q);
        return false;
    }
    size_t name_len = (size_t)(sep - rest);
    if (!cap_name_valid(rest, name_len)) {
        char qn[64];
        cap_quote(qn, sizeof qn, rest, name_len);
        al_error_set(err, AL_ERR_ARGUMENT,
                     "capability name %s is not a valid OCI repository name (lowercase "
                     "[a-z0-9] components joined by '.', '_', '__' or '-', separated by '/', "
                     "at most %d characters)",
                     qn, CAP_NAME_MAX);
        return false;
    }
    memcpy(out->name, rest, name_len);
    const char *ref = sep + 1;
    size_t ref_len = rlen - name_len - 1;
    char qr[64];
    cap_quote(qr, sizeof qr, ref, ref_len);
    if (*sep == '@') {
        if (!cap_digest_valid(ref, ref_len)) {
            al_error_set(err, AL_ERR_ARGUMENT,
                         "capability digest %s is not sha256: followed by 64 lowercase hex digits",
                         qr);
            memset(out, 0, sizeof *out);
            return false;
        }
        memcpy(out->digest, ref, ref_len);
    } else {
        if (!cap_tag_valid(ref, ref_len)) {
            al_error_set(err, AL_ERR_ARGUMENT,
                         "capability version %s is not a valid OCI tag ([A-Za-z0-9_] then "
                         "[A-Za-z0-9._-], at most %d characters; a digest is written NAME@sha256:HEX)",
                         qr, CAP_TAG_MAX);
            memset(out, 0, sizeof *out);
            return false;
        }
        memcpy(out->tag, ref, ref_len);
    }
    return true;
}

bool cap_urn_format_tag(char *out, size_t outlen, const char *name, const char *tag) {
    int n = snprintf(out, outlen, "%s%s:%s", CAP_URN_PREFIX, name, tag);
    return n >= 0 && (size_t)n < outlen;
}
