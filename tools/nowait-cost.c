// SPDX-License-Identifier: MIT
/*
 * nowait-cost: what one cached 16 KiB call costs in instructions, for the
 * question "does the series slow the unflagged path?" (issue 12, item 6).
 *
 * Meant for a guest booted under QEMU with -icount shift=0 (harness/boot.sh
 * with NOWAIT_ICOUNT=1): the guest's clock then advances one nanosecond per
 * executed guest instruction, so a CLOCK_MONOTONIC delta around a loop of
 * calls counts the instructions they took, whatever the host's load. The
 * tool checks that assumption itself: a user-space loop of a known number
 * of instructions must read as that many nanoseconds, and a loop of 2N calls
 * must cost twice a loop of N.
 *
 * For each directory, on a 1 MiB file that is all in the page cache, three
 * loops of N calls, 16 KiB each at offsets that cycle through the file:
 *   pread    a plain pread()
 *   nowait   preadv2(RWF_NOWAIT), every call a hit
 *   pwrite   a plain pwrite() over cached data
 * and, once, getppid(): a syscall the series does not touch, the control.
 * Each loop runs --reps times (after one warm-up loop); its figure is the
 * median over the repetitions of instructions per call. Periodic writeback
 * should be off (vm.dirty_writeback_centisecs=0), or some pwrite loops
 * re-dirty clean pages and others do not.
 *
 *   nowait-cost [--calls N] [--reps R] [--json FILE] DIR...
 *
 * Exits 0 with a figure or an errno per cell, 1 on a setup error.
 *
 * Build: gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -static
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "nowait_die.h"

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008	/* uapi value; older glibc headers lack it */
#endif

#define IO (16 * 1024)		/* every call */
#define SLOTS 64		/* 16 KiB slots in the 1 MiB file */
#define CALIB_LOOPS 5000000	/* calibration: 2 instructions each */

enum op { OP_PREAD, OP_NOWAIT, OP_PWRITE, OP_GETPPID, NOPS };
static const char *const op_name[NOPS] = { "pread", "nowait", "pwrite", "getppid" };

struct cell {
	const char *fs;
	enum op op;
	int err;		/* errno of a failed call; 0: every call did 16 KiB */
	double per_call;	/* median instructions per call, loops of N */
	double spread;		/* (max - min) / median over those loops */
	double linearity;	/* median loop of 2N over median loop of N */
	double *samples;	/* per call, one per loop of N */
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of n values; sorts a copy. */
static double median(const double *v, unsigned n)
{
	double *s = malloc(n * sizeof(*s)), m;

	if (!s)
		die("malloc");
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

/*
 * One loop of n calls; returns the instructions (ns) it took, or -1 with
 * *err set when a call did not transfer 16 KiB.
 */
static int64_t run(enum op op, int fd, char *buf, unsigned n, int *err)
{
	struct iovec iov = { .iov_base = buf, .iov_len = IO };
	int64_t t0 = now_ns();
	ssize_t r = IO;

	for (unsigned i = 0; i < n; i++) {
		off_t off = (off_t)(i % SLOTS) * IO;

		switch (op) {
		case OP_PREAD: r = pread(fd, buf, IO, off); break;
		case OP_NOWAIT: r = preadv2(fd, &iov, 1, off, RWF_NOWAIT); break;
		case OP_PWRITE: r = pwrite(fd, buf, IO, off); break;
		case OP_GETPPID: getppid(); break;
		case NOPS: break;
		}
		if (r != IO) {
			*err = r < 0 ? errno : EIO;
			return -1;
		}
	}
	return now_ns() - t0;
}

/* A warm-up loop, then reps loops of n calls and reps of 2n, interleaved. */
static void measure(struct cell *c, int fd, char *buf, unsigned n, unsigned reps)
{
	double *twice = calloc(reps, sizeof(*twice));

	c->samples = calloc(reps, sizeof(*c->samples));
	if (!twice || !c->samples)
		die("calloc");
	if (run(c->op, fd, buf, n, &c->err) < 0)
		goto out;
	for (unsigned r = 0; r < reps; r++) {
		int64_t one = run(c->op, fd, buf, n, &c->err);
		int64_t two = one < 0 ? -1 : run(c->op, fd, buf, 2 * n, &c->err);

		if (two < 0)
			goto out;
		c->samples[r] = (double)one / n;
		twice[r] = (double)two;
	}
	c->per_call = median(c->samples, reps);
	double lo = c->samples[0], hi = c->samples[0];

	for (unsigned r = 1; r < reps; r++) {
		lo = c->samples[r] < lo ? c->samples[r] : lo;
		hi = c->samples[r] > hi ? c->samples[r] : hi;
	}
	c->spread = (hi - lo) / c->per_call;
	c->linearity = median(twice, reps) / (c->per_call * n);
out:
	free(twice);
}

/* A 1 MiB file in DIR, written, synced and read back: all cached. */
static int cost_file(const char *dir, char *buf)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/nowait-cost.dat", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open %s", path);
	for (int i = 0; i < SLOTS; i++) {
		memset(buf, 'a' + i % 26, IO);
		if (pwrite(fd, buf, IO, (off_t)i * IO) != IO)
			die("write %s", path);
	}
	if (fsync(fd) || pread(fd, buf, IO, 0) != IO)
		die("fsync or read %s", path);
	return fd;
}

/*
 * Instructions per nanosecond of the guest's clock, from a loop of
 * CALIB_LOOPS "dec; jnz" pairs: 1.000 under -icount shift=0, anything
 * (and varying) without it. Only the loop's own instructions are known,
 * so interrupts taken during it read as a ratio a little above 1.
 */
static double calibrate(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned long k = CALIB_LOOPS;
	int64_t t0 = now_ns();

	__asm__ __volatile__("1: dec %0\n\tjnz 1b" : "+r"(k) : : "cc");
	return (double)(now_ns() - t0) / (2.0 * CALIB_LOOPS);
#else
	return 0;
#endif
}

/*
 * What one 16 KiB "rep movsb" counts as: TCG counts every iteration of a
 * string instruction, so a 16 KiB copy to or from user space (the kernel's
 * copy_user uses rep movsb on -cpu max) is about 16384 of each call's
 * instructions, the same on both kernels. The least of 100 copies, less
 * the least of 100 empty clock reads: an interrupt only adds.
 */
static double copy_cost(char *buf)
{
#if defined(__x86_64__) || defined(__i386__)
	static char dst[IO];
	int64_t copy = INT64_MAX, empty = INT64_MAX;

	for (int i = 0; i < 100; i++) {
		void *d = dst, *s = buf;
		unsigned long c = IO;
		int64_t t0 = now_ns(), t1;

		__asm__ __volatile__("rep movsb" : "+D"(d), "+S"(s), "+c"(c) : : "memory");
		t1 = now_ns();
		copy = t1 - t0 < copy ? t1 - t0 : copy;
		t0 = now_ns();
		t1 = now_ns();
		empty = t1 - t0 < empty ? t1 - t0 : empty;
	}
	return (double)(copy - empty);
#else
	(void)buf;
	return 0;
#endif
}

static void print_cell(FILE *f, const struct cell *c, unsigned reps, const char *sep)
{
	fprintf(f, "    {\"fs\": \"%s\", \"op\": \"%s\", ", c->fs, op_name[c->op]);
	if (c->err) {
		fprintf(f, "\"error\": \"%s\"}%s\n", strerrorname_np(c->err), sep);
		return;
	}
	fprintf(f, "\"insn_per_call\": %.1f, \"spread\": %.5f, \"linearity\": %.5f, \"samples\": [",
		c->per_call, c->spread, c->linearity);
	for (unsigned r = 0; r < reps; r++)
		fprintf(f, "%s%.1f", r ? ", " : "", c->samples[r]);
	fprintf(f, "]}%s\n", sep);
}

static char *clocksource(void)
{
	static char name[64] = "unknown";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");

	if (f) {
		if (fgets(name, sizeof(name), f))
			name[strcspn(name, "\n")] = 0;
		fclose(f);
	}
	return name;
}

static void usage(void)
{
	fprintf(stderr, "usage: nowait-cost [--calls N] [--reps R] [--json FILE] DIR...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "calls", required_argument, NULL, 'n' },
		{ "reps", required_argument, NULL, 'r' },
		{ "json", required_argument, NULL, 'j' },
		{ 0 }
	};
	unsigned n = 2000, reps = 7, ncells = 0;
	const char *json = NULL;
	struct cell *cells;
	double calib[2], copy;
	struct utsname u;
	char *buf;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'n': n = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'r': reps = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'j': json = optarg; break;
		default: usage();
		}
	}
	if (optind >= argc || !n || !reps)
		usage();
	cells = calloc((size_t)(argc - optind) * 3 + 1, sizeof(*cells));
	buf = aligned_alloc(4096, IO);
	if (!cells || !buf)
		die("alloc");
	uname(&u);

	calib[0] = calibrate();
	copy = copy_cost(buf);
	/* Ten times the calls: a timer tick is a large share of a short loop. */
	cells[ncells] = (struct cell){ .fs = "-", .op = OP_GETPPID };
	measure(&cells[ncells++], -1, buf, 10 * n, reps);
	for (int i = optind; i < argc; i++) {
		const char *fs = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
		int fd = cost_file(argv[i], buf);

		for (enum op op = OP_PREAD; op <= OP_PWRITE; op++) {
			cells[ncells] = (struct cell){ .fs = fs, .op = op };
			measure(&cells[ncells++], fd, buf, n, reps);
		}
		close(fd);
	}
	calib[1] = calibrate();

	printf("nowait-cost: kernel %s, clocksource %s, %u calls x %u loops per cell\n",
	       u.release, clocksource(), n, reps);
	printf("nowait-cost: clock ns per known instruction: %.5f before, %.5f after (1: icount)\n",
	       calib[0], calib[1]);
	printf("nowait-cost: a 16 KiB rep movsb in user space: %.0f instructions\n", copy);
	printf("%-6s %-8s %12s %8s %9s\n", "fs", "op", "insn/call", "spread", "2N/N");
	for (unsigned i = 0; i < ncells; i++) {
		const struct cell *c = &cells[i];

		if (c->err)
			printf("%-6s %-8s %12s\n", c->fs, op_name[c->op], strerrorname_np(c->err));
		else
			printf("%-6s %-8s %12.1f %7.3f%% %9.5f\n", c->fs, op_name[c->op],
			       c->per_call, 100 * c->spread, c->linearity);
	}
	if (json) {
		FILE *f = fopen(json, "w");

		if (!f)
			die("%s", json);
		fprintf(f, "{\"kernel\": \"%s\", \"clocksource\": \"%s\", \"calls\": %u, \"reps\": %u,\n",
			u.release, clocksource(), n, reps);
		fprintf(f, "  \"ns_per_insn\": [%.5f, %.5f], \"rep_movsb_16k\": %.0f,\n  \"cells\": [\n",
			calib[0], calib[1], copy);
		for (unsigned i = 0; i < ncells; i++)
			print_cell(f, &cells[i], reps, i + 1 < ncells ? "," : "");
		fprintf(f, "  ]\n}\n");
		fclose(f);
	}
	return 0;
}
