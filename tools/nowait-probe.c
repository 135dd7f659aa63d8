// SPDX-License-Identifier: GPL-2.0
/*
 * nowait-probe: what RWF_NOWAIT does on this kernel, per filesystem and
 * file type.
 *
 *   nowait-probe [--json FILE] [LABEL=DIR ...]
 *
 * Without LABEL=DIR arguments it probes whichever of the standard mounts
 * under $NOWAIT_MNT (default /mnt: ext4 xfs btrfs tmpfs vfat exfat ext2 ovl,
 * and the network filesystems nfs3 nfs4 cifs fuse 9p ocfs2 ceph) exist and are of
 * the named type. An anonymous pipe and an AF_UNIX socket
 * pair are always probed. For each directory a temporary file is created
 * and removed again. Each cell is the byte count the call returned or the
 * errno it failed with.
 *
 *   read hit        preadv2(RWF_NOWAIT) of a 16 KiB range that is cached
 *   read miss       the same after fsync + POSIX_FADV_DONTNEED, with mincore
 *                   confirming nothing is cached ("not evictable" if it is)
 *   write           pwritev2(RWF_NOWAIT) overwriting the cached 16 KiB
 *   O_DIRECT read   preadv2(RWF_NOWAIT) of 4 KiB through an O_DIRECT fd
 *   O_DIRECT write  pwritev2(RWF_NOWAIT) overwriting 4 KiB through it
 *
 * For a pipe "miss" means empty and the O_DIRECT columns use a packet-mode
 * pipe (pipe2(O_DIRECT)); sockets have no O_DIRECT. Set
 * NOWAIT_DROP_CACHES=1 to let the miss fall back to drop_caches when
 * DONTNEED leaves pages behind (that drops every clean page on the machine).
 */
#include "nowait_test.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/utsname.h>

/* Which ABI this binary uses: the i386 build goes through compat syscalls. */
#if defined(__x86_64__)
#define PROBE_ABI "x86_64"
#elif defined(__i386__)
#define PROBE_ABI "i386"
#else
#define PROBE_ABI "native"
#endif

#define PROBE_LEN 16384
#define DIO_LEN 4096
/* A NOWAIT call that ignores the flag on an empty pipe would never return. */
#define HANG_SECONDS 5

enum { READ_HIT, READ_MISS, WRITE, DIO_READ, DIO_WRITE, NCOLS };

static const char *const col_title[NCOLS] = {
	"read hit", "read miss", "write", "O_DIRECT read", "O_DIRECT write",
};
static const char *const col_key[NCOLS] = {
	"read_hit", "read_miss", "write", "odirect_read", "odirect_write",
};

struct cell {
	char text[48];
	ssize_t bytes;		/* what the call returned, or -1 */
	int err;		/* its errno, or 0 */
	bool open_failed;	/* err came from open/pipe2, not the call */
	bool bad_data;		/* it returned bytes that were not the file's */
	char detail[NOWAIT_WHY_MAX];
};

struct target {
	char label[64];
	char path[PATH_MAX];
	char type[64];
	char skip[NOWAIT_WHY_MAX];	/* non-empty: not probed, and why */
	struct cell cell[NCOLS];
};

static void cell_init(struct cell *c)
{
	memset(c, 0, sizeof(*c));
	c->bytes = -1;
	snprintf(c->text, sizeof(c->text), "n/a");
}

static void cell_result(struct cell *c, ssize_t r, int err)
{
	if (r >= 0) {
		c->bytes = r;
		snprintf(c->text, sizeof(c->text), "%zd", r);
	} else {
		c->err = err;
		snprintf(c->text, sizeof(c->text), "%s", nowait_errname(err));
	}
}

static void cell_open_error(struct cell *c, int err)
{
	c->err = err;
	c->open_failed = true;
	snprintf(c->text, sizeof(c->text), "open: %s", nowait_errname(err));
}

static void cell_check(struct cell *c, const unsigned char *got,
		       const unsigned char *want)
{
	if (c->bytes > 0 && memcmp(got, want, (size_t)c->bytes)) {
		c->bad_data = true;
		snprintf(c->text, sizeof(c->text), "%zd (bad data)", c->bytes);
	}
}

static void on_alarm(int sig)
{
	(void)sig;
}

/*
 * One NOWAIT call into @c, under an alarm so that a call that ignores the
 * flag on an empty pipe comes back as EINTR instead of hanging.
 */
static void nw_read(struct cell *c, int fd, void *buf, size_t len, off_t off)
{
	ssize_t r;
	int e;

	alarm(HANG_SECONDS);
	r = nowait_preadv2(fd, buf, len, off, RWF_NOWAIT);
	e = errno;
	alarm(0);
	cell_result(c, r, e);
}

static void nw_write(struct cell *c, int fd, const void *buf, size_t len,
		     off_t off)
{
	ssize_t r;
	int e;

	alarm(HANG_SECONDS);
	r = nowait_pwritev2(fd, buf, len, off, RWF_NOWAIT);
	e = errno;
	alarm(0);
	cell_result(c, r, e);
}

static bool read_all(int fd, unsigned char *buf, size_t len)
{
	return pread(fd, buf, len, 0) == (ssize_t)len;
}

static void probe_odirect(struct target *t, const char *path,
			  const unsigned char *truth)
{
	struct cell *rd = &t->cell[DIO_READ], *wr = &t->cell[DIO_WRITE];
	unsigned char *dbuf;
	int dfd;

	dfd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (dfd < 0) {
		cell_open_error(rd, errno);
		cell_open_error(wr, errno);
		return;
	}
	if (posix_memalign((void **)&dbuf, DIO_LEN, DIO_LEN)) {
		snprintf(t->skip, sizeof(t->skip), "posix_memalign failed");
		close(dfd);
		return;
	}
	memset(dbuf, 0, DIO_LEN);
	nw_read(rd, dfd, dbuf, DIO_LEN, 0);
	cell_check(rd, dbuf, truth);

	nowait_fill(dbuf, DIO_LEN, 0, 3);
	nw_write(wr, dfd, dbuf, DIO_LEN, 0);
	free(dbuf);
	close(dfd);
}

static void probe_dir(struct target *t)
{
	static unsigned char want[PROBE_LEN], got[PROBE_LEN];
	char path[PATH_MAX + 32], why[NOWAIT_WHY_MAX];
	struct cell *c = t->cell;
	int fd;

	snprintf(path, sizeof(path), "%s/.nowait-probe.XXXXXX", t->path);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		snprintf(t->skip, sizeof(t->skip), "create %.900s: %s", path,
			 nowait_errname(errno));
		return;
	}
	nowait_fill(want, PROBE_LEN, 0, 1);
	if (nowait_write_pattern(fd, 0, PROBE_LEN, 1) || fsync(fd) ||
	    !read_all(fd, got, PROBE_LEN)) {
		snprintf(t->skip, sizeof(t->skip), "write test file: %s",
			 nowait_errname(errno));
		goto out;
	}

	memset(got, 0, PROBE_LEN);
	nw_read(&c[READ_HIT], fd, got, PROBE_LEN, 0);
	cell_check(&c[READ_HIT], got, want);

	if (nowait_evict(fd, why, sizeof(why))) {
		memset(got, 0, PROBE_LEN);
		nw_read(&c[READ_MISS], fd, got, PROBE_LEN, 0);
		cell_check(&c[READ_MISS], got, want);
	} else {
		snprintf(c[READ_MISS].text, sizeof(c[READ_MISS].text),
			 "not evictable");
		snprintf(c[READ_MISS].detail, sizeof(c[READ_MISS].detail),
			 "%s", why);
	}

	/* the overwrite must find the range cached, whatever the miss did */
	if (!read_all(fd, got, PROBE_LEN)) {
		snprintf(t->skip, sizeof(t->skip), "re-read test file: %s",
			 nowait_errname(errno));
		goto out;
	}
	nowait_fill(got, PROBE_LEN, 0, 2);
	nw_write(&c[WRITE], fd, got, PROBE_LEN, 0);

	/* O_DIRECT + NOWAIT gives EAGAIN on dirty cached pages; clean them */
	if (fsync(fd) || !read_all(fd, want, PROBE_LEN)) {
		snprintf(t->skip, sizeof(t->skip), "sync test file: %s",
			 nowait_errname(errno));
		goto out;
	}
	probe_odirect(t, path, want);
out:
	close(fd);
	unlink(path);
}

static void probe_pipe(struct target *t)
{
	unsigned char out[DIO_LEN], in[DIO_LEN];
	int p[2];

	nowait_fill(out, sizeof(out), 0, 4);
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(t->skip, sizeof(t->skip), "pipe2: %s",
			 nowait_errname(errno));
		return;
	}
	nw_read(&t->cell[READ_MISS], p[0], in, sizeof(in), -1);
	nw_write(&t->cell[WRITE], p[1], out, sizeof(out), -1);
	if (t->cell[WRITE].bytes != (ssize_t)sizeof(out) &&
	    write(p[1], out, sizeof(out)) != (ssize_t)sizeof(out)) {
		snprintf(t->skip, sizeof(t->skip), "fill pipe: %s",
			 nowait_errname(errno));
		goto out;
	}
	nw_read(&t->cell[READ_HIT], p[0], in, sizeof(in), -1);
	cell_check(&t->cell[READ_HIT], in, out);
out:
	close(p[0]);
	close(p[1]);

	if (pipe2(p, O_CLOEXEC | O_DIRECT)) {
		cell_open_error(&t->cell[DIO_READ], errno);
		cell_open_error(&t->cell[DIO_WRITE], errno);
		return;
	}
	nw_write(&t->cell[DIO_WRITE], p[1], out, sizeof(out), -1);
	if (t->cell[DIO_WRITE].bytes == (ssize_t)sizeof(out) ||
	    write(p[1], out, sizeof(out)) == (ssize_t)sizeof(out)) {
		nw_read(&t->cell[DIO_READ], p[0], in, sizeof(in), -1);
		cell_check(&t->cell[DIO_READ], in, out);
	}
	close(p[0]);
	close(p[1]);
}

static void probe_socket(struct target *t)
{
	unsigned char out[DIO_LEN], in[DIO_LEN];
	int sv[2];

	nowait_fill(out, sizeof(out), 0, 5);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		snprintf(t->skip, sizeof(t->skip), "socketpair: %s",
			 nowait_errname(errno));
		return;
	}
	nw_read(&t->cell[READ_MISS], sv[0], in, sizeof(in), -1);
	nw_write(&t->cell[WRITE], sv[1], out, sizeof(out), -1);
	if (t->cell[WRITE].bytes == (ssize_t)sizeof(out) ||
	    write(sv[1], out, sizeof(out)) == (ssize_t)sizeof(out)) {
		nw_read(&t->cell[READ_HIT], sv[0], in, sizeof(in), -1);
		cell_check(&t->cell[READ_HIT], in, out);
	}
	close(sv[0]);
	close(sv[1]);
}

static struct target *new_target(struct target **all, size_t *n,
				 const char *label, const char *path)
{
	struct target *t;

	*all = realloc(*all, (*n + 1) * sizeof(**all));
	if (!*all) {
		perror("realloc");
		exit(1);
	}
	t = &(*all)[(*n)++];
	memset(t, 0, sizeof(*t));
	snprintf(t->label, sizeof(t->label), "%s", label);
	snprintf(t->path, sizeof(t->path), "%s", path);
	for (int i = 0; i < NCOLS; i++)
		cell_init(&t->cell[i]);
	return t;
}

static void detect_type(struct target *t)
{
	struct statfs st;

	if (nowait_mount_type(t->path, t->type, sizeof(t->type)))
		return;
	if (!statfs(t->path, &st))
		snprintf(t->type, sizeof(t->type), "0x%x",
			 (unsigned int)(uint32_t)st.f_type);
}

static void add_mounts(struct target **all, size_t *n,
		       const struct nowait_fs *fs, size_t nfs)
{
	for (size_t i = 0; i < nfs; i++) {
		char dir[PATH_MAX], why[NOWAIT_WHY_MAX];
		struct target *t;
		struct stat st;

		snprintf(dir, sizeof(dir), "%s/%s", nowait_mnt(), fs[i].dir);
		if (stat(dir, &st))
			continue;
		t = new_target(all, n, fs[i].dir, dir);
		if (!nowait_fs_check(&fs[i], dir, sizeof(dir), why, sizeof(why)))
			snprintf(t->skip, sizeof(t->skip), "%s", why);
		detect_type(t);
	}
}

static void add_std_mounts(struct target **all, size_t *n)
{
	size_t nfs;
	const struct nowait_fs *fs = nowait_std_fs(&nfs);

	add_mounts(all, n, fs, nfs);
	fs = nowait_net_fs(&nfs);
	add_mounts(all, n, fs, nfs);
}

static void add_arg(struct target **all, size_t *n, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char label[64];
	struct target *t;
	struct stat st;

	snprintf(label, sizeof(label), "%.*s", (int)(eq - arg), arg);
	t = new_target(all, n, label, eq + 1);
	if (stat(t->path, &st))
		snprintf(t->skip, sizeof(t->skip), "stat: %s",
			 nowait_errname(errno));
	else if (!S_ISDIR(st.st_mode))
		snprintf(t->skip, sizeof(t->skip), "not a directory");
	detect_type(t);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_cell(FILE *f, const struct cell *c)
{
	fputs("{\"text\": ", f);
	json_str(f, c->text);
	if (c->bytes >= 0)
		fprintf(f, ", \"bytes\": %zd", c->bytes);
	if (c->err) {
		fputs(", \"errno\": ", f);
		json_str(f, nowait_errname(c->err));
		fprintf(f, ", \"stage\": \"%s\"", c->open_failed ? "open" : "call");
	}
	if (c->bad_data)
		fputs(", \"bad_data\": true", f);
	if (c->detail[0]) {
		fputs(", \"detail\": ", f);
		json_str(f, c->detail);
	}
	fputc('}', f);
}

static void json_out(FILE *f, const struct utsname *u, const char *abi,
		     const struct target *all, size_t n)
{
	bool first = true;

	fputs("{\n  \"kernel\": ", f);
	json_str(f, u->release);
	fputs(",\n  \"machine\": ", f);
	json_str(f, u->machine);
	fputs(",\n  \"abi\": ", f);
	json_str(f, abi);
	fputs(",\n  \"targets\": [", f);
	for (size_t i = 0; i < n; i++) {
		if (all[i].skip[0])
			continue;
		fprintf(f, "%s\n    {\"label\": ", first ? "" : ",");
		first = false;
		json_str(f, all[i].label);
		fputs(", \"path\": ", f);
		if (all[i].path[0])
			json_str(f, all[i].path);
		else
			fputs("null", f);
		fputs(", \"type\": ", f);
		json_str(f, all[i].type);
		for (int c = 0; c < NCOLS; c++) {
			fprintf(f, ",\n     \"%s\": ", col_key[c]);
			json_cell(f, &all[i].cell[c]);
		}
		fputc('}', f);
	}
	fputs("\n  ],\n  \"skipped\": [", f);
	first = true;
	for (size_t i = 0; i < n; i++) {
		if (!all[i].skip[0])
			continue;
		fprintf(f, "%s\n    {\"label\": ", first ? "" : ",");
		first = false;
		json_str(f, all[i].label);
		fputs(", \"path\": ", f);
		json_str(f, all[i].path);
		fputs(", \"reason\": ", f);
		json_str(f, all[i].skip);
		fputc('}', f);
	}
	fputs("\n  ]\n}\n", f);
}

static void table_out(FILE *f, const struct utsname *u, const char *abi,
		      const struct target *all, size_t n)
{
	int w[NCOLS + 1] = { (int)strlen("target") };

	for (int c = 0; c < NCOLS; c++)
		w[c + 1] = (int)strlen(col_title[c]);
	for (size_t i = 0; i < n; i++) {
		if (all[i].skip[0])
			continue;
		if ((int)strlen(all[i].label) > w[0])
			w[0] = (int)strlen(all[i].label);
		for (int c = 0; c < NCOLS; c++)
			if ((int)strlen(all[i].cell[c].text) > w[c + 1])
				w[c + 1] = (int)strlen(all[i].cell[c].text);
	}

	fprintf(f, "RWF_NOWAIT on Linux %s (%s, %s binary)\n\n", u->release,
		u->machine, abi);
	fprintf(f, "%-*s", w[0], "target");
	for (int c = 0; c < NCOLS; c++)
		fprintf(f, "  %-*s", c + 1 < NCOLS ? w[c + 1] : 0,
			col_title[c]);
	fputc('\n', f);
	for (size_t i = 0; i < n; i++) {
		if (all[i].skip[0])
			continue;
		fprintf(f, "%-*s", w[0], all[i].label);
		for (int c = 0; c < NCOLS; c++)
			fprintf(f, "  %-*s", c + 1 < NCOLS ? w[c + 1] : 0,
				all[i].cell[c].text);
		fputc('\n', f);
	}
	fputc('\n', f);
	for (size_t i = 0; i < n; i++) {
		if (all[i].path[0] && !all[i].skip[0])
			fprintf(f, "%-*s  %s (%s)\n", w[0], all[i].label,
				all[i].path, all[i].type);
	}
	for (size_t i = 0; i < n; i++) {
		if (all[i].skip[0])
			fprintf(f, "%-*s  skipped: %s\n", w[0], all[i].label,
				all[i].skip);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: nowait-probe [--json FILE|-] [LABEL=DIR ...]\n");
}

int main(int argc, char **argv)
{
	const char *json = NULL, *abi = PROBE_ABI;
	struct sigaction sa = { .sa_handler = on_alarm };
	struct target *all = NULL, *t;
	struct utsname u;
	size_t n = 0;

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--json") && a + 1 < argc) {
			json = argv[++a];
		} else if (!strcmp(argv[a], "-h") || !strcmp(argv[a], "--help")) {
			usage(stdout);
			return 0;
		} else if (strchr(argv[a], '=') && argv[a][0] != '=') {
			add_arg(&all, &n, argv[a]);
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!n)
		add_std_mounts(&all, &n);

	/* no SA_RESTART: the alarm must interrupt a stuck call */
	sigaction(SIGALRM, &sa, NULL);
	if (uname(&u)) {
		perror("uname");
		return 1;
	}

	for (size_t i = 0; i < n; i++)
		if (!all[i].skip[0])
			probe_dir(&all[i]);
	t = new_target(&all, &n, "pipe", "");
	snprintf(t->type, sizeof(t->type), "pipe");
	probe_pipe(t);
	t = new_target(&all, &n, "unix socket", "");
	snprintf(t->type, sizeof(t->type), "AF_UNIX SOCK_STREAM");
	probe_socket(t);

	table_out(json && !strcmp(json, "-") ? stderr : stdout, &u, abi, all, n);
	if (json) {
		FILE *f = strcmp(json, "-") ? fopen(json, "we") : stdout;

		if (!f) {
			fprintf(stderr, "nowait-probe: %s: %s\n", json,
				strerror(errno));
			return 1;
		}
		json_out(f, &u, abi, all, n);
		if (f != stdout && fclose(f)) {
			fprintf(stderr, "nowait-probe: %s: %s\n", json,
				strerror(errno));
			return 1;
		}
	}
	free(all);
	return 0;
}
