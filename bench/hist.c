// SPDX-License-Identifier: MIT
#include "hist.h"

#include <string.h>

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

/* fio's plat_val_to_idx(). */
unsigned hist_val_to_idx(uint64_t val)
{
	unsigned msb, error_bits, base, offset, idx;

	msb = val ? 63u - (unsigned)__builtin_clzll(val) : 0;
	if (msb <= PLAT_BITS)
		return (unsigned)val;
	error_bits = msb - PLAT_BITS;
	base = (error_bits + 1) << PLAT_BITS;
	offset = (PLAT_VAL - 1) & (unsigned)(val >> error_bits);
	idx = base + offset;
	return idx < PLAT_NR - 1 ? idx : PLAT_NR - 1;
}

/* fio's plat_idx_to_val(): the middle of the bucket. */
uint64_t hist_idx_to_val(unsigned idx)
{
	unsigned error_bits;
	uint64_t k, base;

	if (idx < (PLAT_VAL << 1))
		return idx;
	error_bits = (idx >> PLAT_BITS) - 1;
	base = (uint64_t)1 << (error_bits + PLAT_BITS);
	k = idx % PLAT_VAL;
	return base + (uint64_t)((k + 0.5) * (double)(1ull << error_bits));
}

void hist_add(struct hist *h, uint64_t ns)
{
	h->plat[hist_val_to_idx(ns)]++;
	h->n++;
	h->sum += (double)ns;
	if (ns < h->min)
		h->min = ns;
	if (ns > h->max)
		h->max = ns;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned i = 0; i < PLAT_NR; i++)
		dst->plat[i] += src->plat[i];
	dst->n += src->n;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

/*
 * calc_clat_percentiles() for one entry: the first bucket whose cumulative
 * count reaches pct/100 of the samples.
 */
uint64_t hist_pct(const struct hist *h, double pct)
{
	long double want = (long double)pct / 100.0L * (long double)h->n;
	uint64_t sum = 0;

	if (!h->n)
		return 0;
	for (unsigned i = 0; i < PLAT_NR; i++) {
		sum += h->plat[i];
		if (h->plat[i] && (long double)sum >= want)
			return hist_idx_to_val(i);
	}
	return hist_idx_to_val(PLAT_NR - 1);
}

double hist_mean(const struct hist *h)
{
	return h->n ? h->sum / (double)h->n : 0.0;
}
