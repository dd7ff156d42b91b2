/* gs_xxh64.c — the XXH64 hash (seed 0 and others), written from its
 * specification (the xxHash format description, which RFC 8878 cites for
 * zstd's content checksum), for the frames the collector stores without
 * compressing them (gs_frame_store in trace/gs_file.c): zstd keeps its own
 * copy private.
 *
 * Must never: allocate, or read past len bytes of the input.
 */
#include <string.h>

#include "gs_trace.h"

#define P1 11400714785074694791ull
#define P2 14029467366897019727ull
#define P3 1609587929392839161ull
#define P4 9650029242287828579ull
#define P5 2870177450012600261ull

static inline uint64_t rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* the lanes are little-endian: as every target here is */
    return v;
}

static inline uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t round1(uint64_t acc, uint64_t lane)
{
    return rotl(acc + lane * P2, 31) * P1;
}

static inline uint64_t merge(uint64_t acc, uint64_t v)
{
    return (acc ^ round1(0, v)) * P1 + P4;
}

uint64_t gs_xxh64(const void *data, size_t len, uint64_t seed)
{
    const uint8_t *p = data;
    const uint8_t *const end = p + len;
    uint64_t acc;
    if (len >= 32) {
        uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        const uint8_t *const last = end - 32;
        do {
            v1 = round1(v1, rd64(p));
            v2 = round1(v2, rd64(p + 8));
            v3 = round1(v3, rd64(p + 16));
            v4 = round1(v4, rd64(p + 24));
            p += 32;
        } while (p <= last);
        acc = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
        acc = merge(acc, v1);
        acc = merge(acc, v2);
        acc = merge(acc, v3);
        acc = merge(acc, v4);
    } else {
        acc = seed + P5;
    }
    acc += (uint64_t)len;
    for (; end - p >= 8; p += 8)
        acc = rotl(acc ^ round1(0, rd64(p)), 27) * P1 + P4;
    if (end - p >= 4) {
        acc = rotl(acc ^ ((uint64_t)rd32(p) * P1), 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; p++)
        acc = rotl(acc ^ (*p * P5), 11) * P1;
    acc ^= acc >> 33;
    acc *= P2;
    acc ^= acc >> 29;
    acc *= P3;
    acc ^= acc >> 32;
    return acc;
}
