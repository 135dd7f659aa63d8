/* SPDX-License-Identifier: MIT */
/*
 * Latency histogram with fio's layout (stat.h: FIO_IO_U_PLAT_BITS=6,
 * FIO_IO_U_PLAT_GROUP_NR=29): values in ns, grouped by their most
 * significant bit, 64 linear sub-buckets per group, so a bucket's width is
 * at most 1/128 of its value (<= 0.78% error); range up to 2^34 ns (~17 s),
 * larger values land in the last bucket. Percentiles are computed like
 * fio's calc_clat_percentiles(); min, max and mean are exact.
 */
#ifndef BENCH_HIST_H
#define BENCH_HIST_H

#include <stdint.h>

#define PLAT_BITS 6
#define PLAT_VAL (1u << PLAT_BITS)
#define PLAT_GROUP_NR 29
#define PLAT_NR (PLAT_GROUP_NR * PLAT_VAL)

struct hist {
	uint64_t n;
	uint64_t min, max;
	double sum;		/* ns, for the mean */
	uint64_t plat[PLAT_NR];
};

void hist_init(struct hist *h);
void hist_add(struct hist *h, uint64_t ns);
void hist_merge(struct hist *dst, const struct hist *src);
/* The value fio reports for percentile pct (0 < pct <= 100); 0 when empty. */
uint64_t hist_pct(const struct hist *h, double pct);
double hist_mean(const struct hist *h);
unsigned hist_val_to_idx(uint64_t ns);
uint64_t hist_idx_to_val(unsigned idx);

#endif
