/*
 * sort.c — sorting SORT_N 32-bit ints from a linear congruential generator,
 * twice: an in-place quicksort (median of three, insertion sort below 16)
 * and a bottom-up merge sort with a scratch buffer. Branchy integer code with
 * many memory loads and stores. The two results must agree and be ordered.
 */
#include "bench.h"

#ifndef SORT_N
#define SORT_N (1u << 19)
#endif

static int32_t a[SORT_N], b[SORT_N], tmp[SORT_N];

static void insertion_sort(int32_t *v, int32_t lo, int32_t hi)
{
    for (int32_t i = lo + 1; i <= hi; i++) {
        int32_t x = v[i];
        int32_t j = i - 1;
        while (j >= lo && v[j] > x) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = x;
    }
}

static void quicksort(int32_t *v, int32_t lo, int32_t hi)
{
    while (hi - lo >= 16) {
        int32_t mid = lo + (hi - lo) / 2;
        /* median of three into v[mid] */
        if (v[mid] < v[lo]) { int32_t t = v[mid]; v[mid] = v[lo]; v[lo] = t; }
        if (v[hi] < v[lo]) { int32_t t = v[hi]; v[hi] = v[lo]; v[lo] = t; }
        if (v[hi] < v[mid]) { int32_t t = v[hi]; v[hi] = v[mid]; v[mid] = t; }
        int32_t pivot = v[mid];
        int32_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                int32_t t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                j--;
            }
        }
        /* recurse into the smaller half, loop on the larger: O(log n) depth */
        if (j - lo < hi - i) {
            quicksort(v, lo, j);
            lo = i;
        } else {
            quicksort(v, i, hi);
            hi = j;
        }
    }
    insertion_sort(v, lo, hi);
}

static void merge_sort(int32_t *v, int32_t *scratch, uint32_t n)
{
    int32_t *src = v, *dst = scratch;
    for (uint32_t width = 1; width < n; width *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * width) {
            uint32_t mid = lo + width < n ? lo + width : n;
            uint32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = src[i] <= src[j] ? src[i++] : src[j++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        int32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        for (uint32_t i = 0; i < n; i++)
            v[i] = src[i];
}

int32_t run(void)
{
    uint32_t x = 12345;
    for (uint32_t i = 0; i < SORT_N; i++) {
        x = x * 1103515245u + 12345u;
        a[i] = b[i] = (int32_t)(x ^ (x >> 16));
    }
    quicksort(a, 0, (int32_t)SORT_N - 1);
    merge_sort(b, tmp, SORT_N);
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < SORT_N; i++) {
        if (a[i] != b[i] || (i > 0 && a[i - 1] > a[i]))
            return 2; /* unsorted or disagreeing: a checksum nobody expects */
        if ((i & 1023) == 0)
            h = (h ^ (uint32_t)a[i]) * 16777619u;
    }
    return BENCH_CHECKSUM(h);
}
