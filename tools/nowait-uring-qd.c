// SPDX-License-Identifier: GPL-2.0
/*
 * nowait-uring-qd: what cold buffered reads through io_uring cost at a given
 * queue depth.
 *
 * On a stock kernel a buffered IORING_OP_READ that misses the page cache is
 * an "async buffered read": io_uring tries it with IOCB_NOWAIT, then again
 * with IOCB_WAITQ, and the read completes from the folio's wait-queue
 * callback, with no io-wq thread. The series answers IOCB_WAITQ with EAGAIN
 * where it queued readahead (patch 15), so a miss goes to an io-wq worker.
 * This program measures both at queue depth 1, 8 and 32 (--qd): random 4 KiB
 * reads of a file whose pages were dropped, kept @qd in flight, each
 * submitted by its own io_uring_enter() as a server does on arrival.
 *
 * Per run it reports reads/s, the latency of each read from its submission
 * to its completion (p50, p99), the time spent inside io_uring_enter()
 * submitting (p99, max), the submissions that slept (a voluntary context
 * switch of the submitting thread during its io_uring_enter(): independent
 * of how busy the host of a virtual machine is, unlike the times), the
 * io-wq workers the ring started (peak of iou-wrk-* threads) and the CPU
 * time of the whole machine per read (/proc/stat: kworkers and io-wq
 * included). Each run is a child process, because io-wq belongs to the
 * task and would carry its workers over.
 *
 *   nowait-uring-qd [--size MiB] [--reads N] [--reps R] [--qd 1,8,32]
 *                   [--json FILE] DIR...
 *
 * Needs root (drop_caches). The file DIR/uring-qd.data is made once.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nowait_ring.h"
#include "nowait_die.h"
#include "nowait_test.h"

#define BLOCK	4096
#define MAX_QD	256
#define DATA_NAME "uring-qd.data"

struct run {
	unsigned qd, reads, errors, resident_pages, submits_slept;
	int first_error;
	unsigned iowq_peak;
	double wall_s;
	double lat_p50_us, lat_p99_us;
	double submit_p99_us, submit_max_us;
	double cpu_us_per_read;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* splitmix64 */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static double pct_us(int64_t *v, unsigned n, double p)
{
	if (!n)
		return 0;
	return (double)v[(unsigned)((n - 1) * p + 0.5)] / 1e3;
}

/* Busy time of every CPU, in ns: all but idle and iowait. */
static int64_t machine_busy_ns(void)
{
	unsigned long long v[10] = { 0 };
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "r");

	if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
			 &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
		die("/proc/stat");
	fclose(f);
	return (int64_t)((v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * (1000000000ULL / (unsigned long long)hz));
}

static void drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	sync();
	if (fd < 0 || write(fd, "3", 1) != 1)
		die("drop_caches");
	close(fd);
}

static void make_data(const char *path, off_t size)
{
	static char buf[1 << 20];
	struct stat st;
	uint64_t seed = 42;
	int fd;

	if (!stat(path, &st) && st.st_size == size)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("create %s", path);
	for (off_t done = 0; done < size; done += (off_t)sizeof(buf)) {
		for (size_t i = 0; i < sizeof(buf); i += 8) {
			uint64_t r = rnd(&seed);

			memcpy(buf + i, &r, 8);
		}
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			die("write %s", path);
	}
	if (fsync(fd))
		die("fsync %s", path);
	close(fd);
}

/* Pages of @fd resident now, out of @size bytes. */
static unsigned resident(int fd, off_t size)
{
	size_t pages = (size_t)size / BLOCK;
	unsigned char *vec = calloc(pages, 1);
	void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	unsigned n = 0;

	if (!vec || map == MAP_FAILED || mincore(map, (size_t)size, vec))
		die("mincore");
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	munmap(map, (size_t)size);
	free(vec);
	return n;
}

/* One run, in the calling (child) process. */
static void run_one(const char *path, off_t size, unsigned qd, unsigned reads,
		    uint64_t seed, struct run *out)
{
	uint64_t blocks = (uint64_t)size / BLOCK;
	int64_t *lat = calloc(reads, sizeof(*lat));
	int64_t *sub = calloc(reads, sizeof(*sub));
	int64_t started[MAX_QD];
	unsigned free_slots[MAX_QD], nfree = qd;
	char *bufs;
	struct ring ring;
	unsigned submitted = 0, done = 0;
	int64_t t0, busy0;
	int fd;

	if (!lat || !sub || posix_memalign((void **)&bufs, BLOCK, (size_t)qd * BLOCK))
		die("out of memory");
	drop_caches();
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die("open %s", path);
	/* One I/O per miss: no readahead around the random reads. */
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	out->resident_pages = resident(fd, size);
	if (ring_init_entries(&ring, qd))
		die("io_uring_setup(%u)", qd);
	out->qd = qd;
	for (unsigned i = 0; i < qd; i++)
		free_slots[i] = i;
	t0 = now_ns();
	busy0 = machine_busy_ns();
	while (done < reads) {
		while (nfree && submitted < reads) {
			/* Each read in flight owns a slot: its buffer and start time. */
			unsigned slot = free_slots[--nfree];
			off_t off = (off_t)(rnd(&seed) % blocks) * BLOCK;
			long sleeps = nowait_nvcsw();
			int64_t s = now_ns();
			int rc;

			started[slot] = s;
			rc = ring_rw_tagged(&ring, IORING_OP_READ, fd, bufs + (size_t)slot * BLOCK,
					    BLOCK, off, 0, slot);
			sub[submitted] = now_ns() - s;
			out->submits_slept += nowait_nvcsw() != sleeps;
			if (rc)
				die("io_uring_enter: %d", rc);
			submitted++;
		}
		{
			int res;
			__u64 slot;

			if (!ring_reap_tagged(&ring, true, &res, &slot))
				continue;
			lat[done++] = now_ns() - started[slot];
			free_slots[nfree++] = (unsigned)slot;
			if (res != BLOCK) {
				if (!out->errors)
					out->first_error = res;
				out->errors++;
			}
			if (!(done % 16)) {
				int n = ring_iowq_workers();

				if (n > (int)out->iowq_peak)
					out->iowq_peak = (unsigned)n;
			}
		}
	}
	out->wall_s = (double)(now_ns() - t0) / 1e9;
	out->cpu_us_per_read = (double)(machine_busy_ns() - busy0) / 1e3 / reads;
	{
		int n = ring_iowq_workers();

		if (n > (int)out->iowq_peak)
			out->iowq_peak = (unsigned)n;
	}
	out->reads = reads;
	qsort(lat, reads, sizeof(*lat), cmp_i64);
	qsort(sub, reads, sizeof(*sub), cmp_i64);
	out->lat_p50_us = pct_us(lat, reads, 0.50);
	out->lat_p99_us = pct_us(lat, reads, 0.99);
	out->submit_p99_us = pct_us(sub, reads, 0.99);
	out->submit_max_us = (double)sub[reads - 1] / 1e3;
}

static void print_run(FILE *f, const char *dir, unsigned rep, const struct run *r)
{
	fprintf(f, "{\"dir\": \"%s\", \"rep\": %u, \"qd\": %u, \"reads\": %u, \"errors\": %u, "
		"\"first_error\": %d, \"resident_pages\": %u, \"iowq_peak\": %u, "
		"\"reads_per_s\": %.1f, \"lat_p50_us\": %.1f, \"lat_p99_us\": %.1f, "
		"\"submit_p99_us\": %.1f, \"submit_max_us\": %.1f, \"submits_slept\": %u, "
		"\"cpu_us_per_read\": %.2f}",
		dir, rep, r->qd, r->reads, r->errors, r->first_error, r->resident_pages,
		r->iowq_peak, r->reads / r->wall_s, r->lat_p50_us, r->lat_p99_us,
		r->submit_p99_us, r->submit_max_us, r->submits_slept, r->cpu_us_per_read);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "reads", required_argument, NULL, 'n' },
		{ "reps", required_argument, NULL, 'r' },
		{ "qd", required_argument, NULL, 'q' },
		{ "json", required_argument, NULL, 'j' },
		{ 0 }
	};
	unsigned qds[16], nqd = 0, reads = 2048, reps = 5;
	off_t size = (off_t)256 << 20;
	const char *qd_list = "1,8,32", *json = NULL;
	struct run *shared;
	FILE *jf = NULL;
	int c, bad = 0;
	const char *sep = "";

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': size = (off_t)strtoull(optarg, NULL, 0) << 20; break;
		case 'n': reads = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'r': reps = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'q': qd_list = optarg; break;
		case 'j': json = optarg; break;
		default: bad = 1;
		}
	}
	for (char *l = strdup(qd_list), *t = strtok(l, ","); t && nqd < 16; t = strtok(NULL, ","))
		qds[nqd++] = (unsigned)strtoul(t, NULL, 0);
	for (unsigned i = 0; i < nqd; i++)
		bad |= !qds[i] || qds[i] > MAX_QD;
	if (bad || optind >= argc || !reads || !reps || size < BLOCK) {
		fprintf(stderr, "usage: %s [--size MiB] [--reads N] [--reps R] [--qd 1,8,32] [--json FILE] DIR...\n",
			argv[0]);
		return 2;
	}
	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		die("mmap");
	if (json && !(jf = fopen(json, "w")))
		die("%s", json);
	if (jf)
		fputs("[\n", jf);
	for (int d = optind; d < argc; d++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/" DATA_NAME, argv[d]);
		make_data(path, size);
	}
	printf("# %-12s %3s %4s %9s %9s %9s %10s %10s %7s %6s %8s\n", "dir", "qd", "rep",
	       "reads/s", "p50 us", "p99 us", "sub99 us", "submax us", "slept", "io-wq", "cpu us");
	/* Interleaved: every directory and depth once per repetition. */
	for (unsigned rep = 1; rep <= reps; rep++) {
		for (int d = optind; d < argc; d++) {
			for (unsigned i = 0; i < nqd; i++) {
				char path[4096];
				pid_t pid;
				int status;

				snprintf(path, sizeof(path), "%s/" DATA_NAME, argv[d]);
				memset(shared, 0, sizeof(*shared));
				pid = fork();
				if (pid < 0)
					die("fork");
				if (!pid) {
					run_one(path, size, qds[i], reads, rep * 1000003ULL + qds[i], shared);
					_exit(0);
				}
				if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
					die("run %s qd %u failed", argv[d], qds[i]);
				printf("  %-12s %3u %4u %9.0f %9.1f %9.1f %10.1f %10.1f %7u %6u %8.2f%s\n",
				       argv[d], shared->qd, rep, shared->reads / shared->wall_s,
				       shared->lat_p50_us, shared->lat_p99_us, shared->submit_p99_us,
				       shared->submit_max_us, shared->submits_slept, shared->iowq_peak,
				       shared->cpu_us_per_read,
				       shared->errors ? " ERRORS" : shared->resident_pages ? " (not cold)" : "");
				fflush(stdout);
				if (jf) {
					fputs(sep, jf);
					print_run(jf, argv[d], rep, shared);
					sep = ",\n";
				}
			}
		}
	}
	if (jf) {
		fputs("\n]\n", jf);
		fclose(jf);
	}
	return 0;
}
