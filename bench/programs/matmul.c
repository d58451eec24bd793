/*
 * matmul.c — dense float64 matrix multiplication, MM_N x MM_N: C = A*B, then
 * D = C*A, in i-k-j order. Floating-point multiply-add throughput and
 * strided memory access. Checksum: a hash of the raw bits of a sample of D.
 */
#include "bench.h"

#ifndef MM_N
#define MM_N 300
#endif

static double A[MM_N][MM_N], B[MM_N][MM_N], C[MM_N][MM_N], D[MM_N][MM_N];

static void mul(double (*r)[MM_N], double (*x)[MM_N], double (*y)[MM_N])
{
    for (int i = 0; i < MM_N; i++) {
        for (int j = 0; j < MM_N; j++)
            r[i][j] = 0;
        for (int k = 0; k < MM_N; k++) {
            double xik = x[i][k];
            for (int j = 0; j < MM_N; j++)
                r[i][j] += xik * y[k][j];
        }
    }
}

int32_t run(void)
{
    uint32_t s = 777;
    for (int i = 0; i < MM_N; i++)
        for (int j = 0; j < MM_N; j++) {
            /* small values keep the products well inside double range */
            A[i][j] = (double)(int32_t)(bench_xorshift32(&s) % 2001u - 1000) / 1000.0;
            B[i][j] = (double)(bench_xorshift32(&s) % 1000u) / 997.0;
        }
    mul(C, A, B);
    mul(D, C, A);
    uint32_t h = 2166136261u;
    for (int i = 0; i < MM_N; i += 7)
        for (int j = 0; j < MM_N; j += 3) {
            union {
                double d;
                uint64_t u;
            } v = {D[i][j]};
            h = (h ^ (uint32_t)v.u) * 16777619u;
            h = (h ^ (uint32_t)(v.u >> 32)) * 16777619u;
        }
    return BENCH_CHECKSUM(h);
}
