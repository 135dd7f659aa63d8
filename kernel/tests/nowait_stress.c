// SPDX-License-Identifier: GPL-2.0
/*
 * Data integrity of RWF_NOWAIT reads under concurrency, on every filesystem
 * the guest makes.
 *
 * Two readers do what a server does: preadv2(RWF_NOWAIT), and on EAGAIN, or
 * for the rest of a short read, a blocking pread(). Two writers meanwhile
 * write (half of the writes as a server does, pwritev2(RWF_NOWAIT) first
 * and pwrite() for what it did not write), truncate, punch holes, collapse
 * ranges and fallocate (each where the filesystem supports it), and in the guest a pressure thread drops
 * caches, fills a cgroup v2 memory.max with anonymous memory and writes
 * the cgroup's memory.reclaim, so that page cache is reclaimed and tmpfs
 * pages go to swap under the readers.
 *
 * What a read may return:
 *  - every byte is 0 (a hole, or the zeros a truncate or fallocate extends
 *    the file with) or the pattern some writer wrote at that offset in any
 *    generation. The pattern is a function of (offset mod P, generation),
 *    P = 64 KiB, and collapse-range moves data by multiples of P, so data it
 *    moves stays valid; data misplaced by a multiple of P is the one error
 *    this cannot see. Bytes come from G = 4 generations, and are never 0.
 *  - [0, P) is never touched by a writer: truncate and collapse stay above
 *    it, so the file is always at least P long and those bytes are exactly
 *    generation 0. A read that starts below P returns at least one byte
 *    (NOWAIT: or EAGAIN), and the blocking read all of it up to P.
 *  - the file never grows past FILE_MAX: a read at or past it returns 0.
 *  - the writers serialise on a mutex, keep a shadow copy of the file, and
 *    bump a sequence count around every operation (odd while one runs). A
 *    reader that sees the same even count before its syscalls and after
 *    comparing knows no operation overlapped them, so the file was the
 *    shadow throughout: the read must return exactly min(len, size - off)
 *    bytes of it (a NOWAIT part may be short, never 0 before EOF).
 *
 * NOWAIT_STRESS_SECONDS is the budget of one program, split over the
 * filesystems: 16 s by default for x86_64 and 4 s for i386 (whose compat
 * entry is the only difference), 20 s in all.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#include <pthread.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <time.h>
#include <linux/falloc.h>

#ifdef __i386__
#define ABI "i386"
#define DEFAULT_SECONDS 4
#else
#define ABI "x86_64"
#define DEFAULT_SECONDS 16
#endif

#define NFS		8
#define P		(64 * 1024)
#define FILE_MAX	(4 * 1024 * 1024)
#define G		4
#define MAXLEN		(64 * 1024)
#define CGROOT		"/sys/fs/cgroup"
#define CG_MAX		(32 << 20)	/* memory.max of the test's cgroup */
#define HOG		(40 << 20)	/* more than fits: all else must go */

enum op { OP_WRITE, OP_TRUNCATE, OP_PUNCH, OP_COLLAPSE, OP_FALLOC, NOPS };
static const char *const op_name[NOPS] = {
	"write", "truncate", "punch", "collapse", "fallocate" };

struct stats {
	long reads, exact, hits, short_reads, eagain, eagain_eof;
	long long bytes;	/* past 2 GiB in a long run of the i386 build */
	long ops[NOPS], drops, hogs, reclaims, mismatches;
	long wflagged, wshort, wrefused;	/* NOWAIT writes: whole, part, none */
	long falloc_nomem;			/* fallocate()s refused: ENOMEM */
};

struct state {
	int fd;
	volatile bool stop, stop_writers;
	bool op_ok[NOPS];		/* cleared when the fs says EOPNOTSUPP */
	unsigned char valid[G][P];	/* the pattern of each generation */
	unsigned char *shadow;		/* FILE_MAX bytes: the file, per the writers */
	off_t size;
	unsigned int seq;		/* odd while a writer operation runs */
	unsigned int gen;
	pthread_mutex_t wlock;
	pthread_mutex_t flock;		/* guards st and fail */
	char reclaim[300];		/* the cgroup's memory.reclaim */
	struct stats st;
	char fail[512];
};

static uint32_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)*s;
}

static void failf(struct state *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void failf(struct state *s, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&s->flock);
	if (!s->st.mismatches++) {
		va_start(ap, fmt);
		vsnprintf(s->fail, sizeof(s->fail), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&s->flock);
}

static void count(long *c, long n)
{
	__atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

/* ---- writers: one operation at a time, mirrored in the shadow ---- */

static void shrink_shadow(struct state *s, off_t size)
{
	if (size < s->size)
		memset(s->shadow + size, 0, (size_t)(s->size - size));
	s->size = size;
}

/*
 * Write @len bytes at @off. Half the time as a server does: with RWF_NOWAIT
 * first, and a blocking pwrite() for what that did not write (all of it
 * after EAGAIN or EOPNOTSUPP, the rest after a short write).
 */
static bool flagged_then_plain_write(struct state *s, uint64_t *r,
				     const unsigned char *buf, off_t len,
				     off_t off)
{
	ssize_t n = 0;

	if (rnd(r) % 2) {
		n = nowait_pwritev2(s->fd, buf, (size_t)len, off, RWF_NOWAIT);
		if (n < 0 && errno != EAGAIN && errno != EOPNOTSUPP) {
			failf(s, "pwritev2(RWF_NOWAIT) at %jd: %s",
			      (intmax_t)off, nowait_errname(errno));
			return false;
		}
		if (n < 0)
			n = 0;
		count(n == len ? &s->st.wflagged :
		      n ? &s->st.wshort : &s->st.wrefused, 1);
	}
	return n == len || pwrite(s->fd, buf + n, (size_t)(len - n), off + n) ==
			   len - n;
}

/*
 * fallocate() may fail with ENOMEM under the pressure thread: tmpfs gives
 * up when reclaim keeps finding the folios it is allocating
 * (mm/shmem.c:shmem_fallocate, nr_unswapped), and other filesystems when an
 * allocation fails. That is no error of the file's data, which fallocate()
 * never changes, but the size may have grown (with zeros, as the shadow is
 * past EOF) before the failure: take it from the file.
 */
static void fallocate_refused(struct state *s)
{
	struct stat st;

	if (fstat(s->fd, &st)) {
		failf(s, "fstat after fallocate's ENOMEM: %s",
		      nowait_errname(errno));
	} else if (st.st_size < s->size || st.st_size > FILE_MAX) {
		failf(s, "fallocate failed with ENOMEM and left size %jd, was %jd",
		      (intmax_t)st.st_size, (intmax_t)s->size);
	} else {
		s->size = st.st_size;
		count(&s->st.falloc_nomem, 1);
	}
}

/* Run one random operation; false if the filesystem failed it. */
static bool writer_op(struct state *s, uint64_t *r, unsigned char *buf)
{
	enum op op = (enum op)(rnd(r) % NOPS);
	bool ran = false;
	off_t off, len;
	int ret = 0;

	if (!s->op_ok[op] || rnd(r) % 2)	/* writes: half of all ops */
		op = OP_WRITE;
	pthread_mutex_lock(&s->wlock);
	__atomic_add_fetch(&s->seq, 1, __ATOMIC_SEQ_CST);
	switch (op) {
	case OP_WRITE: {
		unsigned int g = 1 + s->gen++ % (G - 1);

		off = P + rnd(r) % (FILE_MAX - P);
		len = 1 + rnd(r) % MAXLEN;
		if (rnd(r) % 2) {	/* page-aligned half the time */
			off &= ~4095L;
			len = (len + 4095) & ~4095L;
		}
		if (len > FILE_MAX - off)
			len = FILE_MAX - off;
		for (off_t i = 0; i < len; i++)
			buf[i] = s->valid[g][(off + i) % P];
		if (!flagged_then_plain_write(s, r, buf, len, off)) {
			ret = -1;
			break;
		}
		memcpy(s->shadow + off, buf, (size_t)len);
		if (off + len > s->size)
			s->size = off + len;
		ran = true;
		break;
	}
	case OP_TRUNCATE:
		off = P + rnd(r) % (FILE_MAX - P + 1);
		ret = ftruncate(s->fd, off);
		if ((ran = !ret))
			shrink_shadow(s, off);	/* or extends it with zeros */
		break;
	case OP_PUNCH:
		off = P + rnd(r) % (s->size - P + 1);
		len = 1 + rnd(r) % (4 * MAXLEN);
		if (len > s->size - off)
			len = s->size - off;
		if (!len)
			break;
		ret = fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				off, len);
		if ((ran = !ret))
			memset(s->shadow + off, 0, (size_t)len);
		break;
	case OP_COLLAPSE:
		/* Multiples of P, above [0, P), short of EOF (which is EINVAL). */
		off = P * (1 + rnd(r) % (FILE_MAX / P - 1));
		len = P * (1 + rnd(r) % 4);
		if (off + len >= s->size)
			break;
		ret = fallocate(s->fd, FALLOC_FL_COLLAPSE_RANGE, off, len);
		if ((ran = !ret)) {
			memmove(s->shadow + off, s->shadow + off + len,
				(size_t)(s->size - off - len));
			shrink_shadow(s, s->size - len);
		}
		break;
	case OP_FALLOC:
		off = P + rnd(r) % (FILE_MAX - P);
		len = 1 + rnd(r) % (4 * MAXLEN);
		if (len > FILE_MAX - off)
			len = FILE_MAX - off;
		ret = fallocate(s->fd, 0, off, len);
		if ((ran = !ret) && off + len > s->size)
			s->size = off + len;	/* the shadow is 0 past EOF */
		if (ret && errno == ENOMEM) {
			fallocate_refused(s);
			ret = 0;
		}
		break;
	default:
		break;
	}
	if (ret && errno == EOPNOTSUPP && op != OP_WRITE) {
		s->op_ok[op] = false;	/* said once, at the first try */
		ret = 0;
	} else if (ran) {
		count(&s->st.ops[op], 1);
	}
	__atomic_add_fetch(&s->seq, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&s->wlock);
	if (ret)
		failf(s, "%s: %s", op_name[op], nowait_errname(errno));
	return !ret;
}

static void *writer(void *arg)
{
	struct state *s = arg;
	uint64_t r = ((uint64_t)(uintptr_t)&r ^ (uint64_t)time(NULL)) | 1;
	unsigned char *buf = malloc(MAXLEN);

	while (buf && !s->stop_writers && writer_op(s, &r, buf))
		usleep(rnd(&r) % 2000);
	free(buf);
	return NULL;
}

/* ---- readers ---- */

/* Check what [off, off + n) returned, byte by byte. */
static void check_bytes(struct state *s, const unsigned char *buf, off_t off,
			ssize_t n, const char *how)
{
	for (ssize_t i = 0; i < n; i++) {
		off_t o = off + i;
		unsigned char b = buf[i];
		bool ok = false;

		if (o < P) {
			ok = b == s->valid[0][o];
		} else {
			ok = !b;
			for (int g = 0; g < G && !ok; g++)
				ok = b == s->valid[g][o % P];
		}
		if (!ok) {
			failf(s, "%s read at %jd: byte 0x%02x at offset %jd was never written there (gen 0 wants 0x%02x)",
			      how, (intmax_t)off, b, (intmax_t)o,
			      s->valid[0][o % P]);
			return;
		}
	}
}

static void read_once(struct state *s, uint64_t *r, unsigned char *buf,
		      unsigned char *want)
{
	uint32_t pick = rnd(r) % 100;
	off_t off, size, expect;
	size_t len = 1 + rnd(r) % MAXLEN;
	ssize_t n, m = 0;
	unsigned int s1, s2;
	bool eagain = false;

	if (pick < 10)
		off = rnd(r) % P;			/* the region never written */
	else if (pick < 15)
		off = FILE_MAX + rnd(r) % MAXLEN;	/* past any EOF */
	else
		off = rnd(r) % FILE_MAX;
	if (rnd(r) % 2) {
		off &= ~4095L;
		len = (len + 4095) & ~4095UL;
	}

	s1 = __atomic_load_n(&s->seq, __ATOMIC_SEQ_CST);
	n = nowait_preadv2(s->fd, buf, len, off, RWF_NOWAIT);
	if (n < 0 && errno == EAGAIN) {
		eagain = true;
		count(&s->st.eagain, 1);
		n = 0;
	} else if (n < 0) {
		failf(s, "preadv2(RWF_NOWAIT) at %jd: %s", (intmax_t)off,
		      nowait_errname(errno));
		return;
	} else if (n == 0 && off < P) {
		failf(s, "preadv2(RWF_NOWAIT) at %jd < %d returned 0",
		      (intmax_t)off, P);
	}
	check_bytes(s, buf, off, n, "RWF_NOWAIT");
	if (n > 0 && (size_t)n < len)
		count(&s->st.short_reads, 1);
	else if (n > 0)
		count(&s->st.hits, 1);
	/* The server's fallback: a blocking read of what is left. */
	if (eagain || (n > 0 && (size_t)n < len)) {
		m = pread(s->fd, buf + n, len - (size_t)n, off + n);
		if (m < 0) {
			failf(s, "pread at %jd: %s", (intmax_t)(off + n),
			      nowait_errname(errno));
			return;
		}
		check_bytes(s, buf + n, off + n, m, "blocking");
		if (off + n < P && off + n + m < (off_t)(off + len < P ? off + len : P))
			failf(s, "pread at %jd returned %zd, short of %d",
			      (intmax_t)(off + n), m, P);
	}
	if (off >= FILE_MAX && n + m)
		failf(s, "read at %jd, past any EOF, returned %zd", (intmax_t)off,
		      n + m);

	/*
	 * Exact check, if no writer operation overlapped the syscalls: a
	 * seqlock read of the shadow (size can tear on i386 while a writer
	 * runs; that read is then thrown away, but must not overrun).
	 */
	size = s->size;
	if (size > FILE_MAX)
		size = FILE_MAX;
	expect = off < size ? size - off : 0;
	if (expect > (off_t)len)
		expect = (off_t)len;
	if (expect)
		memcpy(want, s->shadow + off, (size_t)expect);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	s2 = __atomic_load_n(&s->seq, __ATOMIC_SEQ_CST);
	if (s1 == s2 && !(s1 & 1)) {
		count(&s->st.exact, 1);
		if (eagain && off >= size)
			count(&s->st.eagain_eof, 1);
		if (n + m != expect)
			failf(s, "quiet read at %jd, size %jd: %zd + %zd bytes, want %jd%s",
			      (intmax_t)off, (intmax_t)size, n, m,
			      (intmax_t)expect, eagain ? " (NOWAIT: EAGAIN)" : "");
		else if (memcmp(buf, want, (size_t)expect))
			failf(s, "quiet read at %jd: the data is not the file's",
			      (intmax_t)off);
	}
	count(&s->st.reads, 1);
	__atomic_add_fetch(&s->st.bytes, n + m, __ATOMIC_RELAXED);
}

static void *reader(void *arg)
{
	struct state *s = arg;
	uint64_t r = ((uint64_t)(uintptr_t)&r ^ (uint64_t)time(NULL) << 1) | 1;
	unsigned char *buf = malloc(MAXLEN), *want = malloc(MAXLEN);

	while (buf && want && !s->stop)
		read_once(s, &r, buf, want);
	free(buf);
	free(want);
	return NULL;
}

/* ---- memory pressure (guest only) ---- */

static void *pressure(void *arg)
{
	struct state *s = arg;
	uint64_t r = (uint64_t)time(NULL) | 1;

	while (!s->stop) {
		switch (rnd(&r) % 3) {
		case 0:
			if (nowait_write_file("/proc/sys/vm/drop_caches",
				      rnd(&r) % 2 ? "1" : "3"))
				count(&s->st.drops, 1);
			break;
		case 1:
			/*
			 * Ask the cgroup to give back 8 MiB: the readers keep
			 * the file's pages active, and this deactivates and
			 * reclaims them anyway, tmpfs pages to swap.
			 */
			if (nowait_write_file(s->reclaim, "8M"))
				count(&s->st.reclaims, 1);
			break;
		default: {
			/* Fill the cgroup past memory.max: all else must go. */
			char *p = mmap(NULL, HOG, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p != MAP_FAILED) {
				for (size_t i = 0; i < HOG && !s->stop; i += 4096)
					p[i] = 1;
				munmap(p, HOG);
				count(&s->st.hogs, 1);
			}
		}
		}
		usleep(50000 + rnd(&r) % 100000);
	}
	return NULL;
}

/* Move this process into a fresh cgroup with memory.max; its path in @cg. */
static bool cgroup_enter(char *cg, size_t n, char *why, size_t whylen)
{
	char path[PATH_MAX + 32], val[32];

	if (access(CGROOT "/cgroup.controllers", F_OK) &&
	    mount("cgroup2", CGROOT, "cgroup2", 0, NULL)) {
		snprintf(why, whylen, "mount cgroup2: %s", nowait_errname(errno));
		return false;
	}
	nowait_write_file(CGROOT "/cgroup.subtree_control", "+memory");
	snprintf(cg, n, CGROOT "/nowait-stress.%d", getpid());
	if (mkdir(cg, 0755) && errno != EEXIST) {
		snprintf(why, whylen, "mkdir %s: %s", cg, nowait_errname(errno));
		return false;
	}
	snprintf(path, sizeof(path), "%s/memory.max", cg);
	snprintf(val, sizeof(val), "%d", CG_MAX);
	if (!nowait_write_file(path, val)) {
		snprintf(why, whylen, "%s: %s", path, nowait_errname(errno));
		return false;
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	snprintf(val, sizeof(val), "%d", getpid());
	if (!nowait_write_file(path, val)) {
		snprintf(why, whylen, "%s: %s", path, nowait_errname(errno));
		return false;
	}
	return true;
}

/* A counter from /proc/vmstat (the guest runs nothing else). */
static long vmstat(const char *name)
{
	char key[64];
	long v, found = 0;
	FILE *f = fopen("/proc/vmstat", "re");

	if (!f)
		return 0;
	while (fscanf(f, "%63s %ld", key, &v) == 2)
		if (!strcmp(key, name))
			found = v;
	fclose(f);
	return found;
}

/* ---- the test ---- */

FIXTURE(stress) {
	char path[PATH_MAX];
	char cg[256];
};

FIXTURE_VARIANT(stress) {
	struct nowait_fs fs;
};

NOWAIT_FS_VARIANTS_RW(stress)

FIXTURE_SETUP(stress)
{
	self->path[0] = self->cg[0] = '\0';
}

/*
 * The cgroup's memory.events, read by the parent: how often the test hit
 * memory.max, and whether that came to an OOM kill, which ends the test's
 * process without a word of its own.
 */
static void print_memory_events(const char *cg)
{
	char path[300], line[64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.events", cg);
	f = fopen(path, "re");
	if (!f)
		return;
	printf("# stress: %s:", path);
	while (fgets(line, sizeof(line), f))
		printf(" %.*s", (int)strcspn(line, "\n"), line);
	printf("\n");
	fclose(f);
}

FIXTURE_TEARDOWN_PARENT(stress)
{
	if (self->path[0])
		unlink(self->path);
	if (self->cg[0]) {
		print_memory_events(self->cg);
		rmdir(self->cg);
	}
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int budget(void)
{
	const char *e = getenv("NOWAIT_STRESS_SECONDS");
	int total = e && atoi(e) > 0 ? atoi(e) : DEFAULT_SECONDS;

	return total;
}

/* The budget is NOWAIT_STRESS_SECONDS; the timeout only catches a hang. */
TEST_F_TIMEOUT(stress, mixed, 3600)
{
	char dir[PATH_MAX - 32], tmpl[PATH_MAX], why[NOWAIT_WHY_MAX];
	bool guest = nowait_in_guest();
	pthread_t th[5];
	int nth = 0, ms = budget() * 1000 / NFS;
	long long t0, t_loop, t_writers;
	long swapped, exact;
	struct state *s;

	if (!nowait_fs_check(&variant->fs, dir, sizeof(dir), why, sizeof(why)))
		SKIP(return, "%.1000s", why);
	s = calloc(1, sizeof(*s));
	ASSERT_NE(NULL, s);
	s->shadow = calloc(1, FILE_MAX);
	ASSERT_NE(NULL, s->shadow);
	pthread_mutex_init(&s->wlock, NULL);
	pthread_mutex_init(&s->flock, NULL);
	for (int i = 0; i < NOPS; i++)
		s->op_ok[i] = true;
	for (int g = 0; g < G; g++)
		for (int o = 0; o < P; o++)
			s->valid[g][o] = (unsigned char)(1 + nowait_pattern_byte(
				(uint64_t)o, (uint32_t)getpid() * 4 + (uint32_t)g) % 255);

	/* In the cgroup first, so that the file's pages are charged to it. */
	if (guest) {
		char cg[sizeof(self->cg)];

		ASSERT_TRUE(cgroup_enter(cg, sizeof(cg), why, sizeof(why)))
			TH_LOG("setup: %s", why);
		memcpy(self->cg, cg, sizeof(cg));
		snprintf(s->reclaim, sizeof(s->reclaim), "%s/memory.reclaim", cg);
	}

	snprintf(tmpl, sizeof(tmpl), "%s/nowait-stress.XXXXXX", dir);
	s->fd = mkostemp(tmpl, O_CLOEXEC);
	ASSERT_LE(0, s->fd) TH_LOG("mkostemp %s: %s", tmpl, nowait_errname(errno));
	memcpy(self->path, tmpl, sizeof(tmpl));

	/* Generation 0 everywhere below FILE_MAX / 2; writers do the rest. */
	s->size = FILE_MAX / 2;
	for (off_t o = 0; o < s->size; o++)
		s->shadow[o] = s->valid[0][o % P];
	ASSERT_EQ(s->size, pwrite(s->fd, s->shadow, (size_t)s->size, 0));

	swapped = vmstat("pswpout");
	/*
	 * Readers and pressure run throughout; writers in the middle. Every
	 * 250 ms, and for the last 200 ms, no writer runs, so that readers
	 * then check exactly what they get against the shadow.
	 */
	for (int i = 0; i < 2; i++)
		pthread_create(&th[nth++], NULL, reader, s);
	if (guest)
		pthread_create(&th[nth++], NULL, pressure, s);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[nth++], NULL, writer, s);
	/*
	 * A wall-clock deadline: on the debug kernel one writer's operation
	 * can hold wlock for seconds, and counting 250 ms steps overran the
	 * budget several times over.
	 */
	t0 = now_ms();
	while (now_ms() - t0 < ms && !s->st.mismatches) {
		usleep(225000);
		pthread_mutex_lock(&s->wlock);
		usleep(25000);
		pthread_mutex_unlock(&s->wlock);
	}
	t_loop = now_ms();
	s->stop_writers = true;
	for (int i = nth - 2; i < nth; i++)
		pthread_join(th[i], NULL);
	t_writers = now_ms();
	exact = __atomic_load_n(&s->st.exact, __ATOMIC_RELAXED);
	for (int t = 0; t < 5000 && (t < 200 ||
	     __atomic_load_n(&s->st.exact, __ATOMIC_RELAXED) < exact + 4); t += 10)
		usleep(10000);
	s->stop = true;
	for (int i = 0; i < nth - 2; i++)
		pthread_join(th[i], NULL);
	if (guest)	/* back to the root, so that the parent can rmdir it */
		nowait_write_file(CGROOT "/cgroup.procs", "0");
	swapped = vmstat("pswpout") - swapped;
	printf("# stress %s/%s: %lld ms with writers (budget %d), %lld ms to stop them, %lld ms to stop the readers\n",
	       variant->fs.dir, ABI, t_loop - t0, ms, t_writers - t_loop,
	       now_ms() - t_writers);

	printf("# stress %s/%s: %ld reads checked (%lld MiB), %ld exact; NOWAIT: %ld whole, %ld short, %ld EAGAIN (%ld of them at or past EOF); "
	       "ops: %ld write (NOWAIT: %ld whole, %ld short, %ld refused), %ld truncate, %ld punch, %ld collapse, %ld fallocate (%ld more ENOMEM); %ld drop_caches, %ld memory.max fills, %ld memory.reclaim, %ld pages swapped out; %ld mismatches\n",
	       variant->fs.dir, ABI, s->st.reads, s->st.bytes >> 20,
	       s->st.exact, s->st.hits, s->st.short_reads, s->st.eagain,
	       s->st.eagain_eof, s->st.ops[OP_WRITE], s->st.wflagged,
	       s->st.wshort, s->st.wrefused, s->st.ops[OP_TRUNCATE],
	       s->st.ops[OP_PUNCH], s->st.ops[OP_COLLAPSE],
	       s->st.ops[OP_FALLOC], s->st.falloc_nomem, s->st.drops, s->st.hogs, s->st.reclaims, swapped,
	       s->st.mismatches);
	fflush(stdout);
	EXPECT_EQ(0, s->st.mismatches) TH_LOG("first: %s", s->fail);
	EXPECT_LT(0, s->st.exact) TH_LOG("no read ran without a writer beside it");
	close(s->fd);
}

TEST_HARNESS_MAIN
