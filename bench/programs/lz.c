/*
 * lz.c — an LZ77 compressor and decompressor, round trip over LZ_BYTES of
 * generated text-like data. Hash-chain match finding (4-byte hash, window of
 * 64 KiB, bounded chain depth) and an LZ4-like token format:
 *
 *   token = (literal_length << 4) | (match_length - 4), 15 = "more follows"
 *   [extra literal length bytes, 255 = continue] literals
 *   offset (2 bytes LE, 1..65535) [extra match length bytes]
 *
 * The last sequence carries literals only. The checksum mixes the compressed
 * size with a hash of the decompressed output, which must equal the input.
 */
#include "bench.h"

#ifndef LZ_BYTES
#define LZ_BYTES (2u << 20)
#endif
#define HASH_BITS 15
#define WINDOW 65535u
#define MAX_CHAIN 16
#define MIN_MATCH 4

static uint8_t input[LZ_BYTES];
static uint8_t packed[LZ_BYTES + LZ_BYTES / 128 + 64];
static uint8_t output[LZ_BYTES];
static int32_t head[1u << HASH_BITS];
static int32_t chain[LZ_BYTES];

static const char *const words[] = {
    "the ",     "engine ",  "validates ", "every ",   "module ", "before ",  "it ",
    "runs; ",   "a ",       "sandbox ",   "keeps ",   "guest ",  "code ",    "away ",
    "from ",    "host ",    "memory. ",   "WebAssembly ", "tables ", "and ", "globals ",
    "live ",    "in ",      "one ",       "store, ",  "freed ",  "together. ", "\n",
};
#define NWORDS (sizeof words / sizeof words[0])

static uint32_t generate(void)
{
    uint32_t s = 2463534242u, n = 0;
    while (n < LZ_BYTES) {
        uint32_t r = bench_xorshift32(&s);
        if ((r & 31) == 0) { /* some noise so not everything matches */
            input[n++] = (uint8_t)(r >> 8);
            continue;
        }
        const char *w = words[(r >> 8) % NWORDS];
        while (*w && n < LZ_BYTES)
            input[n++] = (uint8_t)*w++;
    }
    return n;
}

static inline uint32_t hash4(const uint8_t *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                 (uint32_t)p[3] << 24;
    return (v * 2654435761u) >> (32 - HASH_BITS);
}

static uint8_t *put_length(uint8_t *o, uint32_t len)
{
    while (len >= 255) {
        *o++ = 255;
        len -= 255;
    }
    *o++ = (uint8_t)len;
    return o;
}

static uint8_t *emit(uint8_t *o, const uint8_t *lit, uint32_t nlit, uint32_t off, uint32_t mlen)
{
    uint32_t ml = mlen ? mlen - MIN_MATCH : 0;
    *o++ = (uint8_t)((nlit < 15 ? nlit : 15) << 4 | (ml < 15 ? ml : 15));
    if (nlit >= 15)
        o = put_length(o, nlit - 15);
    for (uint32_t i = 0; i < nlit; i++)
        *o++ = lit[i];
    if (mlen) {
        *o++ = (uint8_t)off;
        *o++ = (uint8_t)(off >> 8);
        if (ml >= 15)
            o = put_length(o, ml - 15);
    }
    return o;
}

static uint32_t compress(const uint8_t *in, uint32_t n, uint8_t *out)
{
    for (uint32_t i = 0; i < (1u << HASH_BITS); i++)
        head[i] = -1;
    uint8_t *o = out;
    uint32_t anchor = 0, i = 0;
    while (i + MIN_MATCH <= n) {
        uint32_t h = hash4(in + i);
        int32_t cand = head[h];
        chain[i] = cand;
        head[h] = (int32_t)i;
        uint32_t best_len = 0, best_off = 0;
        for (int depth = 0; cand >= 0 && depth < MAX_CHAIN; depth++) {
            uint32_t off = i - (uint32_t)cand;
            if (off > WINDOW)
                break;
            uint32_t len = 0;
            while (i + len < n && in[(uint32_t)cand + len] == in[i + len])
                len++;
            if (len > best_len) {
                best_len = len;
                best_off = off;
            }
            cand = chain[cand];
        }
        if (best_len >= MIN_MATCH) {
            o = emit(o, in + anchor, i - anchor, best_off, best_len);
            /* insert the skipped positions into the hash chains */
            uint32_t end = i + best_len;
            for (uint32_t k = i + 1; k < end && k + MIN_MATCH <= n; k++) {
                uint32_t hk = hash4(in + k);
                chain[k] = head[hk];
                head[hk] = (int32_t)k;
            }
            i = end;
            anchor = i;
        } else {
            i++;
        }
    }
    o = emit(o, in + anchor, n - anchor, 0, 0);
    return (uint32_t)(o - out);
}

static uint32_t get_length(const uint8_t **pp, uint32_t len)
{
    const uint8_t *p = *pp;
    uint8_t b;
    do {
        b = *p++;
        len += b;
    } while (b == 255);
    *pp = p;
    return len;
}

static uint32_t decompress(const uint8_t *in, uint32_t n, uint8_t *out, uint32_t cap)
{
    const uint8_t *p = in, *end = in + n;
    uint32_t o = 0;
    while (p < end) {
        uint8_t tok = *p++;
        uint32_t nlit = tok >> 4;
        if (nlit == 15)
            nlit = get_length(&p, nlit);
        if (o + nlit > cap || p + nlit > end)
            return 0;
        for (uint32_t i = 0; i < nlit; i++)
            out[o++] = *p++;
        if (p >= end)
            break; /* last sequence: literals only */
        uint32_t off = (uint32_t)p[0] | (uint32_t)p[1] << 8;
        p += 2;
        uint32_t mlen = tok & 15;
        if (mlen == 15)
            mlen = get_length(&p, mlen);
        mlen += MIN_MATCH;
        if (off == 0 || off > o || o + mlen > cap)
            return 0;
        for (uint32_t i = 0; i < mlen; i++, o++) /* byte by byte: overlaps are legal */
            out[o] = out[o - off];
    }
    return o;
}

int32_t run(void)
{
    uint32_t n = generate();
    uint32_t clen = compress(input, n, packed);
    uint32_t dlen = decompress(packed, clen, output, LZ_BYTES);
    if (dlen != n)
        return 3;
    for (uint32_t i = 0; i < n; i++)
        if (output[i] != input[i])
            return 4;
    uint32_t h = bench_fnv1a(2166136261u, output, n);
    return BENCH_CHECKSUM(h ^ (clen * 0x9e3779b1u));
}
