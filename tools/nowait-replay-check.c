// SPDX-License-Identifier: GPL-2.0
/*
 * nowait-replay-check: what a replayed crash state must hold, and the
 * copy of it that may be mounted (harness/crash-replay.sh).
 *
 *   nowait-replay-check verify JOURNAL MARKS DIR
 *       every promise of nowait-replay-load's JOURNAL made by mark MARKS
 *       and not withdrawn by then is in DIR: the file under its name, its
 *       size, the sum of its contents, its mtime (to the filesystem's
 *       granularity). One line per broken promise, then a summary line
 *       "nowait-replay-check: N promises checked, M broken"; exit 1 if M.
 *   nowait-replay-check live JOURNAL MARKS
 *       the name of one promise that holds at MARKS (for the checker's
 *       self-test, which breaks it on purpose).
 *   nowait-replay-check copy SRC DST
 *       DST becomes a copy of the sparse image SRC, holes kept: mounting
 *       a state replays its journal, which must not change the image the
 *       next state is replayed onto.
 */
#include "nowait_test.h"
#include "nowait_replay.h"

#define MAX_PROMISES	100000

struct promise {
	char path[64];
	long long size, mtime_sec;
	long mtime_nsec;
	uint64_t hash;
	bool live;
};

static struct promise *promises;

/* Read JOURNAL up to mark @upto: which promises hold there. */
static long load(const char *journal, long upto)
{
	char line[256];
	long max_id = 0;
	FILE *f = fopen(journal, "r");

	if (!f) {
		fprintf(stderr, "nowait-replay-check: %s: %s\n", journal, strerror(errno));
		exit(2);
	}
	promises = calloc(MAX_PROMISES + 1, sizeof(*promises));
	if (!promises)
		exit(2);
	while (fgets(line, sizeof(line), f)) {
		struct promise p = { .live = true };
		unsigned long long hash;
		long mark, id;

		if (line[0] == 'P' &&
		    sscanf(line, "P %ld %ld %63s %lld %llx %lld %ld", &mark, &id,
			   p.path, &p.size, &hash, &p.mtime_sec, &p.mtime_nsec) == 7 &&
		    id > 0 && id <= MAX_PROMISES) {
			if (mark > upto)
				break;
			p.hash = hash;
			promises[id] = p;
			if (id > max_id)
				max_id = id;
		} else if (line[0] == 'D' && sscanf(line, "D %ld %ld", &mark, &id) == 2 &&
			   id > 0 && id <= MAX_PROMISES) {
			if (mark > upto)
				break;
			promises[id].live = false;
		} else {
			fprintf(stderr, "nowait-replay-check: %s: bad line: %s", journal, line);
			exit(2);
		}
	}
	fclose(f);
	return max_id;
}

/* Whether promise @p holds in @dir; if not, say how it is broken. */
static bool holds(const char *dir, const struct promise *p, long long slack)
{
	char path[PATH_MAX];
	struct stat st;
	uint64_t hash;
	long long diff;
	bool ok;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, p->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		printf("nowait-replay-check: %s: missing (%s)\n", p->path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	diff = ((long long)st.st_mtim.tv_sec - p->mtime_sec) * 1000000000LL +
	       st.st_mtim.tv_nsec - p->mtime_nsec;
	ok = st.st_size == p->size && llabs(diff) <= slack;
	if (st.st_size == p->size && !nowait_replay_hash_fd(fd, st.st_size, &hash))
		hash = ~p->hash;	/* unreadable: not what was promised */
	else if (st.st_size != p->size)
		hash = 0;
	ok &= hash == p->hash;
	if (!ok)
		printf("nowait-replay-check: %s: size %jd (promised %lld), data %s, mtime %lld.%09ld (promised %lld.%09ld)\n",
		       p->path, (intmax_t)st.st_size, p->size,
		       st.st_size != p->size ? "not compared" :
		       hash == p->hash ? "as promised" : "differs",
		       (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec,
		       p->mtime_sec, p->mtime_nsec);
	close(fd);
	return ok;
}

/* SEEK_DATA/SEEK_HOLE: only the data, so a mostly empty image copies fast. */
static int copy_sparse(const char *src, const char *dst)
{
	static char buf[1 << 20];
	int in = open(src, O_RDONLY | O_CLOEXEC);
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	off_t end, data = 0, hole;

	if (in < 0 || out < 0 || (end = lseek(in, 0, SEEK_END)) < 0 || ftruncate(out, end))
		goto fail;
	while (data < end && (data = lseek(in, data, SEEK_DATA)) >= 0) {
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			goto fail;
		while (data < hole) {
			size_t want = hole - data < (off_t)sizeof(buf) ? (size_t)(hole - data) : sizeof(buf);
			ssize_t n = pread(in, buf, want, data);

			if (n <= 0 || pwrite(out, buf, (size_t)n, data) != n)
				goto fail;
			data += n;
		}
	}
	if (data < 0 && errno != ENXIO)	/* ENXIO: no data past @data */
		goto fail;
	close(in);
	return close(out) ? 1 : 0;
fail:
	fprintf(stderr, "nowait-replay-check: copy %s to %s: %s\n", src, dst, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	long upto, max_id, checked = 0, broken = 0;

	if (argc == 4 && !strcmp(argv[1], "copy"))
		return copy_sparse(argv[2], argv[3]);
	if (argc < 4 || (strcmp(argv[1], "verify") && strcmp(argv[1], "live")) ||
	    (!strcmp(argv[1], "verify") && argc != 5)) {
		fprintf(stderr, "usage: nowait-replay-check verify JOURNAL MARKS DIR | live JOURNAL MARKS | copy SRC DST\n");
		return 2;
	}
	upto = atol(argv[3]);
	max_id = load(argv[2], upto);
	if (!strcmp(argv[1], "live")) {
		for (long id = max_id; id > 0; id--)
			if (promises[id].live && promises[id].path[0]) {
				printf("%s\n", promises[id].path);
				return 0;
			}
		return 1;
	}
	for (long id = 1; id <= max_id; id++) {
		if (!promises[id].live || !promises[id].path[0])
			continue;
		checked++;
		broken += !holds(argv[4], &promises[id], nowait_mtime_slack_ns(argv[4]));
	}
	printf("nowait-replay-check: %ld promises checked, %ld broken\n", checked, broken);
	return broken ? 1 : 0;
}
