/*
 * sni.c — the server name (SNI) of a TLS ClientHello, read from hostile
 * bytes that a sandboxed program sent into a CONNECT tunnel (issue 5). The
 * proxy compares it with the CONNECT host so one allowed domain cannot be
 * used to front another.
 *
 * The parser is pure: no allocation, no globals, no I/O. The handshake
 * message may be fragmented over several TLS records, so it is first
 * reassembled into a bounded stack buffer; then the ClientHello is walked
 * with every length checked against the structure that contains it.
 *
 * Two kinds of "ran out of bytes" are kept apart on purpose:
 *   - a length reaching past its parent's declared end is an inconsistency
 *     (SNI_MALFORMED), decided as soon as that length has been read;
 *   - a read reaching past the bytes received so far, but within every
 *     declared length, is a valid prefix (SNI_NEED_MORE): the proxy reads
 *     more and calls again with the longer buffer.
 * A verdict other than NEED_MORE therefore never changes when more bytes
 * arrive, and FOUND/ABSENT are only given for a complete ClientHello (a
 * second server_name extension further on must still be able to refuse it).
 */
#include "net.h"

#include <string.h>

#define TLS_CT_HANDSHAKE 22
#define TLS_HS_CLIENT_HELLO 1
#define TLS_EXT_SERVER_NAME 0
#define TLS_SNI_HOST_NAME 0
#define TLS_RECORD_HEADER 5
#define TLS_HS_HEADER 4
/* RFC 8446 5.1/5.2: a plaintext fragment is at most 2^14 bytes; we allow the
 * 2^14 + 256 that older stacks tolerate, but no more. */
#define TLS_MAX_RECORD (16384 + 256)
/* The largest ClientHello body we reassemble. Real hellos are well under
 * 2 KiB (a few KiB with post-quantum key shares); 16 KiB bounds the stack. */
#define SNI_MAX_HELLO 16384
#define DNS_MAX_LABEL 63

/* Internal "keep going": a value no sni_result has. */
#define SNI_OK (-1)

/* May n bytes be read at pos of a structure ending at end, when avail bytes
 * have arrived? Invariant of every caller: pos <= end. The parent's end is
 * checked first: that overrun is decided by lengths already read, whatever
 * arrives later. */
static int need(size_t pos, size_t n, size_t end, size_t avail)
{
    if (n > end - pos)
        return SNI_MALFORMED;
    if (n > avail || pos > avail - n)
        return SNI_NEED_MORE;
    return SNI_OK;
}

static unsigned be16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }

/* A host_name as the proxy will compare it: letters, digits, '-' and '.',
 * lower-cased; one trailing dot (the absolute form) is stripped; no empty
 * label (leading dot, "..", trailing dot after stripping) and no label over
 * 63 bytes. Anything else (NUL, '_', '%', ...) could make two parsers or the
 * policy and the server disagree on which host this is, so it is refused.
 * out holds EGRESS_MAX_NAME + 1 bytes; n is 1..EGRESS_MAX_NAME. */
static int copy_host(const uint8_t *p, size_t n, char *out)
{
    if (n > 1 && p[n - 1] == '.')
        n--;
    size_t label = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (c == '.') {
            if (label == 0)          /* leading dot or ".." */
                return SNI_MALFORMED;
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') {
            label++;
        } else if (c >= 'A' && c <= 'Z') {
            c = (uint8_t)(c - 'A' + 'a');
            label++;
        } else {
            return SNI_MALFORMED;
        }
        if (label > DNS_MAX_LABEL)
            return SNI_MALFORMED;
        out[i] = (char)c;
    }
    if (label == 0)                  /* "." alone, or a second trailing dot */
        return SNI_MALFORMED;
    out[n] = '\0';
    return SNI_OK;
}

/* The server_name extension's body, data[pos..end) (all of it has arrived:
 * the caller checked the extension's length against avail). */
static int parse_server_name(const uint8_t *b, size_t pos, size_t end, char *host,
                             bool *have_host)
{
    int r;
    if ((r = need(pos, 2, end, end)) != SNI_OK)
        return r;
    size_t list = be16(b + pos);
    pos += 2;
    /* ServerNameList is <1..2^16-1> and fills the extension exactly: slack
     * on either side would be bytes another parser may read differently. */
    if (list == 0 || list != end - pos)
        return SNI_MALFORMED;
    while (pos < end) {
        if ((r = need(pos, 3, end, end)) != SNI_OK)
            return r;
        unsigned type = b[pos];
        size_t n = be16(b + pos + 1);
        pos += 3;
        if ((r = need(pos, n, end, end)) != SNI_OK)
            return r;
        if (type == TLS_SNI_HOST_NAME) {
            /* RFC 6066 3: at most one name of each type. Two host_names are
             * an ambiguity (which one does the server use?): refuse. */
            if (*have_host)
                return SNI_MALFORMED;
            if (n < 1 || n > EGRESS_MAX_NAME)
                return SNI_MALFORMED;
            if ((r = copy_host(b + pos, n, host)) != SNI_OK)
                return r;
            *have_host = true;
        }
        /* other name types carry no host for us; their length was checked */
        pos += n;
    }
    return SNI_OK;
}

/* The handshake message in b[0..avail), avail bytes reassembled so far. */
static sni_result parse_hello(const uint8_t *b, size_t avail, char *name)
{
    if (avail < 1)
        return SNI_NEED_MORE;
    /* A handshake record that does not start with a ClientHello is not the
     * beginning of a TLS client's stream. */
    if (b[0] != TLS_HS_CLIENT_HELLO)
        return SNI_NOT_TLS;
    if (avail < TLS_HS_HEADER)
        return SNI_NEED_MORE;
    size_t msglen = (size_t)b[1] << 16 | (size_t)b[2] << 8 | b[3];
    if (msglen > SNI_MAX_HELLO)
        return SNI_MALFORMED;
    size_t end = TLS_HS_HEADER + msglen;
    size_t pos = TLS_HS_HEADER;
    int r;

    /* client_version (legacy_version): major 3 for every SSL3/TLS */
    if ((r = need(pos, 2, end, avail)) != SNI_OK)
        return (sni_result)r;
    if (b[pos] != 3)
        return SNI_MALFORMED;
    pos += 2;
    /* random */
    if ((r = need(pos, 32, end, avail)) != SNI_OK)
        return (sni_result)r;
    pos += 32;
    /* session_id <0..32> */
    if ((r = need(pos, 1, end, avail)) != SNI_OK)
        return (sni_result)r;
    size_t n = b[pos++];
    if (n > 32)
        return SNI_MALFORMED;
    if ((r = need(pos, n, end, avail)) != SNI_OK)
        return (sni_result)r;
    pos += n;
    /* cipher_suites <2..2^16-2>: pairs of bytes */
    if ((r = need(pos, 2, end, avail)) != SNI_OK)
        return (sni_result)r;
    n = be16(b + pos);
    pos += 2;
    if (n < 2 || n % 2 != 0)
        return SNI_MALFORMED;
    if ((r = need(pos, n, end, avail)) != SNI_OK)
        return (sni_result)r;
    pos += n;
    /* compression_methods <1..2^8-1> */
    if ((r = need(pos, 1, end, avail)) != SNI_OK)
        return (sni_result)r;
    n = b[pos++];
    if (n < 1)
        return SNI_MALFORMED;
    if ((r = need(pos, n, end, avail)) != SNI_OK)
        return (sni_result)r;
    pos += n;
    /* extensions are optional (SSL3/TLS 1.0-era hellos end here) */
    if (pos == end)
        return SNI_ABSENT;
    if ((r = need(pos, 2, end, avail)) != SNI_OK)
        return (sni_result)r;
    n = be16(b + pos);
    pos += 2;
    /* The extensions block must fill the rest of the message exactly;
     * trailing bytes are something a server might read differently. */
    if (n != end - pos)
        return SNI_MALFORMED;

    char host[EGRESS_MAX_NAME + 1];
    bool have_host = false, seen_sni = false;
    while (pos < end) {
        if ((r = need(pos, 4, end, avail)) != SNI_OK)
            return (sni_result)r;
        unsigned type = be16(b + pos);
        size_t elen = be16(b + pos + 2);
        pos += 4;
        if ((r = need(pos, elen, end, avail)) != SNI_OK)
            return (sni_result)r;
        if (type == TLS_EXT_SERVER_NAME) {
            /* RFC 8446 4.2: no extension type twice. Two server_name
             * extensions would let the proxy check one name while the
             * server uses the other. */
            if (seen_sni)
                return SNI_MALFORMED;
            seen_sni = true;
            if ((r = parse_server_name(b, pos, pos + elen, host, &have_host)) != SNI_OK)
                return (sni_result)r;
        }
        pos += elen;
    }
    if (!have_host)
        return SNI_ABSENT;
    memcpy(name, host, strlen(host) + 1);
    return SNI_FOUND;
}

sni_result sni_parse(const uint8_t *bytes, size_t len, char *name)
{
    /* The handshake message, reassembled from the records' fragments. */
    uint8_t hs[TLS_HS_HEADER + SNI_MAX_HELLO];
    size_t have = 0;              /* bytes of hs filled */
    size_t want = sizeof hs;      /* the message's size once its header is in */
    size_t off = 0;

    if (name)
        name[0] = '\0';
    if (!bytes || !name)
        return SNI_MALFORMED;

    for (bool first = true; have < want; first = false) {
        /* Judge the record header from as many of its bytes as are here, so
         * that "GET / HTTP/1.1" is NOT_TLS from its first byte. The first
         * record decides whether this is TLS at all; a later one that is not
         * a handshake record interrupts the ClientHello (MALFORMED). */
        size_t hdr = len - off < TLS_RECORD_HEADER ? len - off : TLS_RECORD_HEADER;
        sni_result bad = first ? SNI_NOT_TLS : SNI_MALFORMED;
        const uint8_t *rec = bytes + off;
        if (hdr >= 1 && rec[0] != TLS_CT_HANDSHAKE)
            return bad;
        if (hdr >= 2 && rec[1] != 3)
            return bad;
        if (hdr >= 3 && (rec[2] < 1 || rec[2] > 4))
            return bad;
        if (hdr < TLS_RECORD_HEADER)
            break;                /* partial header: parse what we have */
        size_t rlen = be16(rec + 3);
        /* RFC 8446 5.1: no zero-length handshake fragments */
        if (rlen == 0 || rlen > TLS_MAX_RECORD)
            return SNI_MALFORMED;
        size_t got = len - off - TLS_RECORD_HEADER;
        if (got > rlen)
            got = rlen;
        /* Never more than the buffer holds: hs has room for the largest
         * message we accept, and a larger one is refused by its length as
         * soon as its 4-byte header is in (room >= 4 while have < 4). */
        if (got > sizeof hs - have)
            got = sizeof hs - have;
        memcpy(hs + have, rec + TLS_RECORD_HEADER, got);
        have += got;
        /* Decide "not a ClientHello" before looking at later records, so
         * the verdict does not depend on how much has arrived. */
        if (have >= 1 && hs[0] != TLS_HS_CLIENT_HELLO)
            return SNI_NOT_TLS;
        if (have >= TLS_HS_HEADER) {
            size_t msglen = (size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3];
            if (msglen > SNI_MAX_HELLO)
                return SNI_MALFORMED;     /* larger than any hello we take */
            want = TLS_HS_HEADER + msglen;
            /* Bytes after the ClientHello in its last record are not ours to
             * judge: the SNI is decided by the message alone. */
            if (have > want)
                have = want;
        }
        if (have == want || off + TLS_RECORD_HEADER + rlen > len)
            break;                /* done, or input ends inside this record */
        off += TLS_RECORD_HEADER + rlen;
    }
    return parse_hello(hs, have, name);
}
