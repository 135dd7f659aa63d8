// SPDX-License-Identifier: GPL-2.0
/*
 * nowait-fused: a passthrough FUSE filesystem for the guest's tests, with
 * no libfuse: it speaks the kernel protocol of <linux/fuse.h> on /dev/fuse.
 *
 *   nowait-fused [--attr-timeout SEC] [--auto-inval-data] [--direct-io]
 *                [--foreground] [--pidfile FILE] SOURCE MOUNTPOINT
 *
 * MOUNTPOINT shows the directory tree under SOURCE. The command returns
 * (exit 0) once the mount answers requests: it mounts, answers the
 * kernel's INIT, and only then forks the daemon (unless --foreground);
 * --pidfile gets the daemon's pid before the command returns, for a test
 * that stops (SIGSTOP) or kills it. It exits 0 when the mount goes away
 * (umount, or an abort through /sys/fs/fuse/connections/N/abort).
 *
 * Opens get FOPEN_KEEP_CACHE (the page cache survives a reopen), or
 * FOPEN_DIRECT_IO with --direct-io. Entries and attributes are cached for
 * --attr-timeout seconds (default 1). One thread answers every request in
 * turn. Each inode the kernel knows is an O_PATH descriptor on the source.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_WRITE	(1024 * 1024)
#define MAX_PAGES	(MAX_WRITE / 4096)
#define BUF_SIZE	(MAX_WRITE + 64 * 1024)

static const char *prog = "nowait-fused";
static int fuse_fd = -1;
static double attr_timeout = 1.0;
static int auto_inval, direct_io;

/* The inodes the kernel holds: nodeid -> O_PATH fd, found again by (dev, ino). */
struct node {
	int fd;			/* -1: free */
	uint64_t nlookup;
	dev_t dev;
	ino_t ino;
	uint64_t next;		/* hash chain, by nodeid; 0 ends it */
};

static struct node *nodes;	/* indexed by nodeid; 1 is the root */
static uint64_t nnodes, cap_nodes;
static uint64_t *free_ids;
static uint64_t nfree, cap_free;
#define HASH_SIZE 4096
static uint64_t hash_head[HASH_SIZE];

/* An open directory: its stream, for READDIR at any offset. */
struct dir {
	DIR *dp;
};

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static unsigned hash(dev_t dev, ino_t ino)
{
	return (unsigned)((ino * 2654435761u) ^ dev) % HASH_SIZE;
}

static struct node *node(uint64_t id)
{
	if (id == 0 || id >= nnodes || nodes[id].fd < 0)
		return NULL;
	return &nodes[id];
}

static void hash_unlink(uint64_t id)
{
	uint64_t *p = &hash_head[hash(nodes[id].dev, nodes[id].ino)];

	while (*p && *p != id)
		p = &nodes[*p].next;
	if (*p)
		*p = nodes[id].next;
}

/* Take fd (O_PATH, of an inode with stat st) as a node the kernel looks up
 * once more; returns its nodeid, or 0 with errno when out of memory. */
static uint64_t node_get(int fd, const struct stat *st)
{
	unsigned h = hash(st->st_dev, st->st_ino);
	uint64_t id;

	for (id = hash_head[h]; id; id = nodes[id].next)
		if (nodes[id].dev == st->st_dev && nodes[id].ino == st->st_ino) {
			close(fd);
			nodes[id].nlookup++;
			return id;
		}
	if (nfree) {
		id = free_ids[--nfree];
	} else {
		if (nnodes == cap_nodes) {
			uint64_t cap = cap_nodes ? cap_nodes * 2 : 1024;
			struct node *n = realloc(nodes, cap * sizeof(*n));

			if (!n) {
				close(fd);
				errno = ENOMEM;
				return 0;
			}
			nodes = n;
			cap_nodes = cap;
		}
		id = nnodes++;
	}
	nodes[id] = (struct node){ .fd = fd, .nlookup = 1, .dev = st->st_dev,
				   .ino = st->st_ino, .next = hash_head[h] };
	hash_head[h] = id;
	return id;
}

static void node_forget(uint64_t id, uint64_t n)
{
	struct node *nd = node(id);

	if (!nd || id == FUSE_ROOT_ID)
		return;
	nd->nlookup = nd->nlookup > n ? nd->nlookup - n : 0;
	if (nd->nlookup)
		return;
	hash_unlink(id);
	close(nd->fd);
	nd->fd = -1;
	if (nfree == cap_free) {
		uint64_t cap = cap_free ? cap_free * 2 : 1024;
		uint64_t *f = realloc(free_ids, cap * sizeof(*f));

		if (!f)
			return;	/* the id is lost, not reused: harmless */
		free_ids = f;
		cap_free = cap;
	}
	free_ids[nfree++] = id;
}

static void proc_path(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* ---- replies ---- */

static void reply_iov(uint64_t unique, int error, struct iovec *iov, int cnt)
{
	struct fuse_out_header out = { .len = sizeof(out), .error = error, .unique = unique };
	struct iovec v[4];
	int i;

	v[0] = (struct iovec){ &out, sizeof(out) };
	for (i = 0; i < cnt; i++) {
		v[i + 1] = iov[i];
		out.len += iov[i].iov_len;
	}
	/* ENOENT: the request was interrupted and is gone; nothing to do. */
	if (writev(fuse_fd, v, cnt + 1) < 0 && errno != ENOENT && errno != ENODEV)
		fprintf(stderr, "%s: reply to request %llu: %s\n", prog,
			(unsigned long long)unique, strerror(errno));
}

static void reply_err(uint64_t unique, int err)
{
	reply_iov(unique, -err, NULL, 0);
}

static void reply(uint64_t unique, const void *data, size_t len)
{
	struct iovec v = { (void *)data, len };

	reply_iov(unique, 0, &v, len ? 1 : 0);
}

static void timeout_split(uint64_t *sec, uint32_t *nsec)
{
	*sec = (uint64_t)attr_timeout;
	*nsec = (uint32_t)((attr_timeout - (double)*sec) * 1e9);
}

static void fill_attr(struct fuse_attr *a, const struct stat *st)
{
	memset(a, 0, sizeof(*a));
	a->ino = st->st_ino;
	a->size = st->st_size;
	a->blocks = st->st_blocks;
	a->atime = st->st_atim.tv_sec;
	a->mtime = st->st_mtim.tv_sec;
	a->ctime = st->st_ctim.tv_sec;
	a->atimensec = st->st_atim.tv_nsec;
	a->mtimensec = st->st_mtim.tv_nsec;
	a->ctimensec = st->st_ctim.tv_nsec;
	a->mode = st->st_mode;
	a->nlink = st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->rdev = st->st_rdev;
	a->blksize = st->st_blksize;
}

static void reply_attr(uint64_t unique, const struct stat *st)
{
	struct fuse_attr_out out;

	memset(&out, 0, sizeof(out));
	timeout_split(&out.attr_valid, &out.attr_valid_nsec);
	fill_attr(&out.attr, st);
	reply(unique, &out, sizeof(out));
}

/* Look name up under parent: fills e, takes a lookup reference; -errno. */
static int do_lookup(struct node *parent, const char *name, struct fuse_entry_out *e)
{
	struct stat st;
	int fd = openat(parent->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) {
		int err = -errno;

		close(fd);
		return err;
	}
	memset(e, 0, sizeof(*e));
	e->nodeid = node_get(fd, &st);
	if (!e->nodeid)
		return -ENOMEM;
	timeout_split(&e->entry_valid, &e->entry_valid_nsec);
	timeout_split(&e->attr_valid, &e->attr_valid_nsec);
	fill_attr(&e->attr, &st);
	return 0;
}

static void reply_lookup(uint64_t unique, struct node *parent, const char *name)
{
	struct fuse_entry_out e;
	int err = do_lookup(parent, name, &e);

	if (err)
		reply_err(unique, -err);
	else
		reply(unique, &e, sizeof(e));
}

/* Open a node's inode again with real flags (an O_PATH fd cannot read). */
static int reopen(struct node *nd, int flags)
{
	char path[64];

	proc_path(path, sizeof(path), nd->fd);
	flags &= ~(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_DIRECT);
	return open(path, flags | O_CLOEXEC);
}

/* ---- requests ---- */

static void op_init(uint64_t unique, const struct fuse_init_in *in)
{
	struct fuse_init_out out;

	memset(&out, 0, sizeof(out));
	out.major = FUSE_KERNEL_VERSION;
	out.minor = FUSE_KERNEL_MINOR_VERSION;
	if (in->major != FUSE_KERNEL_VERSION) {
		fprintf(stderr, "%s: kernel speaks FUSE %u.%u, not %u\n", prog,
			in->major, in->minor, FUSE_KERNEL_VERSION);
		reply_err(unique, EPROTO);
		exit(1);
	}
	if (in->minor < out.minor)
		out.minor = in->minor;
	out.max_readahead = in->max_readahead;
	out.flags = in->flags & (FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_MAX_PAGES |
				 FUSE_PARALLEL_DIROPS);
	if (auto_inval)
		out.flags |= in->flags & FUSE_AUTO_INVAL_DATA;
	out.max_background = 16;
	out.congestion_threshold = 12;
	out.max_write = MAX_WRITE;
	out.time_gran = 1;
	out.max_pages = MAX_PAGES;
	reply(unique, &out, in->minor < 23 ? FUSE_COMPAT_22_INIT_OUT_SIZE : sizeof(out));
}

static void op_getattr(uint64_t unique, struct node *nd, const struct fuse_getattr_in *in)
{
	struct stat st;
	int r;

	if (in->getattr_flags & FUSE_GETATTR_FH)
		r = fstat((int)in->fh, &st);
	else
		r = fstatat(nd->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
	if (r)
		reply_err(unique, errno);
	else
		reply_attr(unique, &st);
}

static void op_setattr(uint64_t unique, struct node *nd, const struct fuse_setattr_in *in)
{
	char path[64];
	struct stat st;
	int fh = (in->valid & FATTR_FH) ? (int)in->fh : -1;

	proc_path(path, sizeof(path), nd->fd);
	if (in->valid & FATTR_MODE) {
		if (fh >= 0 ? fchmod(fh, in->mode) : chmod(path, in->mode))
			goto fail;
	}
	if (in->valid & (FATTR_UID | FATTR_GID)) {
		uid_t uid = (in->valid & FATTR_UID) ? in->uid : (uid_t)-1;
		gid_t gid = (in->valid & FATTR_GID) ? in->gid : (gid_t)-1;

		if (fchownat(nd->fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
			goto fail;
	}
	if (in->valid & FATTR_SIZE) {
		if (fh >= 0 ? ftruncate(fh, in->size) : truncate(path, in->size))
			goto fail;
	}
	if (in->valid & (FATTR_ATIME | FATTR_MTIME)) {
		struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };

		if (in->valid & FATTR_ATIME_NOW)
			ts[0].tv_nsec = UTIME_NOW;
		else if (in->valid & FATTR_ATIME)
			ts[0] = (struct timespec){ in->atime, in->atimensec };
		if (in->valid & FATTR_MTIME_NOW)
			ts[1].tv_nsec = UTIME_NOW;
		else if (in->valid & FATTR_MTIME)
			ts[1] = (struct timespec){ in->mtime, in->mtimensec };
		if (fh >= 0 ? futimens(fh, ts) : utimensat(AT_FDCWD, path, ts, 0))
			goto fail;
	}
	if (fstatat(nd->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		goto fail;
	reply_attr(unique, &st);
	return;
fail:
	reply_err(unique, errno);
}

static void op_open(uint64_t unique, struct node *nd, const struct fuse_open_in *in)
{
	struct fuse_open_out out;
	int fd = reopen(nd, (int)in->flags);

	if (fd < 0) {
		reply_err(unique, errno);
		return;
	}
	memset(&out, 0, sizeof(out));
	out.fh = (uint64_t)fd;
	out.open_flags = direct_io ? FOPEN_DIRECT_IO : FOPEN_KEEP_CACHE;
	reply(unique, &out, sizeof(out));
}

static void op_create(uint64_t unique, struct node *parent, const struct fuse_create_in *in,
		      const char *name)
{
	struct {
		struct fuse_entry_out e;
		struct fuse_open_out o;
	} out;
	int flags = (int)in->flags & ~(O_NOCTTY | O_DIRECT);
	int fd = openat(parent->fd, name, flags | O_CREAT | O_CLOEXEC | O_NOFOLLOW, in->mode);
	int err;

	if (fd < 0) {
		reply_err(unique, errno);
		return;
	}
	err = do_lookup(parent, name, &out.e);
	if (err) {
		close(fd);
		reply_err(unique, -err);
		return;
	}
	memset(&out.o, 0, sizeof(out.o));
	out.o.fh = (uint64_t)fd;
	out.o.open_flags = direct_io ? FOPEN_DIRECT_IO : FOPEN_KEEP_CACHE;
	reply(unique, &out, sizeof(out));
}

static void op_read(uint64_t unique, const struct fuse_read_in *in, char *buf)
{
	size_t size = in->size < MAX_WRITE ? in->size : MAX_WRITE;
	ssize_t n = pread((int)in->fh, buf, size, (off_t)in->offset);

	if (n < 0)
		reply_err(unique, errno);
	else
		reply(unique, buf, (size_t)n);
}

static void op_write(uint64_t unique, const struct fuse_write_in *in, const void *data)
{
	struct fuse_write_out out;
	ssize_t n = pwrite((int)in->fh, data, in->size, (off_t)in->offset);

	if (n < 0) {
		reply_err(unique, errno);
		return;
	}
	memset(&out, 0, sizeof(out));
	out.size = (uint32_t)n;
	reply(unique, &out, sizeof(out));
}

static void op_statfs(uint64_t unique, struct node *nd)
{
	struct fuse_statfs_out out;
	struct statvfs sv;

	if (fstatvfs(nd->fd, &sv)) {
		reply_err(unique, errno);
		return;
	}
	memset(&out, 0, sizeof(out));
	out.st.blocks = sv.f_blocks;
	out.st.bfree = sv.f_bfree;
	out.st.bavail = sv.f_bavail;
	out.st.files = sv.f_files;
	out.st.ffree = sv.f_ffree;
	out.st.bsize = (uint32_t)sv.f_bsize;
	out.st.namelen = (uint32_t)sv.f_namemax;
	out.st.frsize = (uint32_t)sv.f_frsize;
	reply(unique, &out, sizeof(out));
}

static void op_opendir(uint64_t unique, struct node *nd)
{
	struct fuse_open_out out;
	struct dir *d = malloc(sizeof(*d));
	int fd = openat(nd->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (!d || fd < 0 || !(d->dp = fdopendir(fd))) {
		int err = d ? errno : ENOMEM;

		if (fd >= 0)
			close(fd);
		free(d);
		reply_err(unique, err);
		return;
	}
	memset(&out, 0, sizeof(out));
	out.fh = (uint64_t)(uintptr_t)d;
	reply(unique, &out, sizeof(out));
}

static void op_readdir(uint64_t unique, const struct fuse_read_in *in, char *buf)
{
	struct dir *d = (struct dir *)(uintptr_t)in->fh;
	size_t size = in->size < MAX_WRITE ? in->size : MAX_WRITE, used = 0;

	seekdir(d->dp, (long)in->offset);
	for (;;) {
		long here = telldir(d->dp);
		struct fuse_dirent *fd;
		struct dirent *de;
		size_t namelen, len;

		errno = 0;
		de = readdir(d->dp);
		if (!de) {
			if (errno && !used) {
				reply_err(unique, errno);
				return;
			}
			break;
		}
		namelen = strlen(de->d_name);
		len = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + namelen);
		if (used + len > size) {
			seekdir(d->dp, here);
			break;
		}
		fd = (struct fuse_dirent *)(buf + used);
		memset(fd, 0, len);
		fd->ino = de->d_ino;
		fd->off = (uint64_t)telldir(d->dp);
		fd->namelen = (uint32_t)namelen;
		fd->type = de->d_type;
		memcpy(fd->name, de->d_name, namelen);
		used += len;
	}
	reply(unique, buf, used);
}

static void op_mkdir(uint64_t unique, struct node *parent, const struct fuse_mkdir_in *in,
		     const char *name)
{
	if (mkdirat(parent->fd, name, in->mode))
		reply_err(unique, errno);
	else
		reply_lookup(unique, parent, name);
}

static void op_symlink(uint64_t unique, struct node *parent, const char *name,
		       const char *target)
{
	if (symlinkat(target, parent->fd, name))
		reply_err(unique, errno);
	else
		reply_lookup(unique, parent, name);
}

static void op_readlink(uint64_t unique, struct node *nd, char *buf)
{
	ssize_t n = readlinkat(nd->fd, "", buf, PATH_MAX);

	if (n < 0)
		reply_err(unique, errno);
	else
		reply(unique, buf, (size_t)n);
}

static void op_rename(uint64_t unique, struct node *parent, uint64_t newdir, unsigned flags,
		      const char *names)
{
	const char *oldname = names, *newname = names + strlen(names) + 1;
	struct node *np = node(newdir);

	if (!np)
		reply_err(unique, ENOENT);
	else if (renameat2(parent->fd, oldname, np->fd, newname, flags))
		reply_err(unique, errno);
	else
		reply_err(unique, 0);
}

static void op_access(uint64_t unique, struct node *nd, const struct fuse_access_in *in)
{
	char path[64];

	proc_path(path, sizeof(path), nd->fd);
	if (access(path, (int)in->mask))
		reply_err(unique, errno);
	else
		reply_err(unique, 0);
}

/* One request; returns 0 to go on, 1 at DESTROY. */
static int handle(char *req, size_t len, char *buf)
{
	struct fuse_in_header *h = (struct fuse_in_header *)req;
	void *arg = req + sizeof(*h);
	uint64_t u = h->unique;
	struct node *nd = node(h->nodeid);

	if (len < sizeof(*h) || h->len != len) {
		fprintf(stderr, "%s: short request (%zu bytes)\n", prog, len);
		return 0;
	}
	req[len] = '\0';	/* names end in NUL already; this bounds a bad one */
	switch (h->opcode) {
	case FUSE_INIT:
		op_init(u, arg);
		return 0;
	case FUSE_FORGET:
		node_forget(h->nodeid, ((struct fuse_forget_in *)arg)->nlookup);
		return 0;
	case FUSE_BATCH_FORGET: {
		struct fuse_batch_forget_in *b = arg;
		struct fuse_forget_one *one = (struct fuse_forget_one *)(b + 1);
		uint32_t i;

		for (i = 0; i < b->count && (char *)(one + i + 1) <= req + len; i++)
			node_forget(one[i].nodeid, one[i].nlookup);
		return 0;
	}
	case FUSE_INTERRUPT:
		return 0;	/* every request is answered at once anyway */
	case FUSE_DESTROY:
		reply_err(u, 0);
		return 1;
	case FUSE_READ:
		op_read(u, arg, buf);
		return 0;
	case FUSE_WRITE:
		op_write(u, arg, (char *)arg + sizeof(struct fuse_write_in));
		return 0;
	case FUSE_FLUSH:
		reply_err(u, 0);
		return 0;
	case FUSE_RELEASE:
		close((int)((struct fuse_release_in *)arg)->fh);
		reply_err(u, 0);
		return 0;
	case FUSE_FSYNC: {
		struct fuse_fsync_in *in = arg;
		int r = (in->fsync_flags & 1) ? fdatasync((int)in->fh) : fsync((int)in->fh);

		reply_err(u, r ? errno : 0);
		return 0;
	}
	case FUSE_FSYNCDIR: {
		struct fuse_fsync_in *in = arg;
		struct dir *d = (struct dir *)(uintptr_t)in->fh;

		reply_err(u, fsync(dirfd(d->dp)) ? errno : 0);
		return 0;
	}
	case FUSE_READDIR:
		op_readdir(u, arg, buf);
		return 0;
	case FUSE_RELEASEDIR:
		closedir(((struct dir *)(uintptr_t)((struct fuse_release_in *)arg)->fh)->dp);
		free((void *)(uintptr_t)((struct fuse_release_in *)arg)->fh);
		reply_err(u, 0);
		return 0;
	case FUSE_FALLOCATE: {
		struct fuse_fallocate_in *in = arg;

		reply_err(u, fallocate((int)in->fh, (int)in->mode, (off_t)in->offset,
				       (off_t)in->length) ? errno : 0);
		return 0;
	}
	}
	if (!nd) {
		reply_err(u, h->opcode == FUSE_STATFS ? ENOSYS : ENOENT);
		return 0;
	}
	switch (h->opcode) {
	case FUSE_LOOKUP:
		reply_lookup(u, nd, arg);
		break;
	case FUSE_GETATTR:
		op_getattr(u, nd, arg);
		break;
	case FUSE_SETATTR:
		op_setattr(u, nd, arg);
		break;
	case FUSE_OPEN:
		op_open(u, nd, arg);
		break;
	case FUSE_CREATE:
		op_create(u, nd, arg, (char *)arg + sizeof(struct fuse_create_in));
		break;
	case FUSE_UNLINK:
		reply_err(u, unlinkat(nd->fd, arg, 0) ? errno : 0);
		break;
	case FUSE_RMDIR:
		reply_err(u, unlinkat(nd->fd, arg, AT_REMOVEDIR) ? errno : 0);
		break;
	case FUSE_MKDIR:
		op_mkdir(u, nd, arg, (char *)arg + sizeof(struct fuse_mkdir_in));
		break;
	case FUSE_SYMLINK:
		op_symlink(u, nd, arg, (char *)arg + strlen(arg) + 1);
		break;
	case FUSE_READLINK:
		op_readlink(u, nd, buf);
		break;
	case FUSE_RENAME:
		op_rename(u, nd, ((struct fuse_rename_in *)arg)->newdir, 0,
			  (char *)arg + sizeof(struct fuse_rename_in));
		break;
	case FUSE_RENAME2: {
		struct fuse_rename2_in *in = arg;

		op_rename(u, nd, in->newdir, in->flags, (char *)(in + 1));
		break;
	}
	case FUSE_STATFS:
		op_statfs(u, nd);
		break;
	case FUSE_OPENDIR:
		op_opendir(u, nd);
		break;
	case FUSE_ACCESS:
		op_access(u, nd, arg);
		break;
	default:
		reply_err(u, ENOSYS);
		break;
	}
	return 0;
}

/* Read one request; returns its length, 0 when the mount is gone. */
static size_t next_request(char *req)
{
	for (;;) {
		ssize_t n = read(fuse_fd, req, BUF_SIZE);

		if (n > 0)
			return (size_t)n;
		if (n == 0 || errno == ENODEV)
			return 0;
		if (errno == EINTR || errno == ENOENT || errno == EAGAIN)
			continue;
		die("read /dev/fuse");
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: %s [--attr-timeout SEC] [--auto-inval-data] [--direct-io]"
			" [--foreground] [--pidfile FILE] SOURCE MOUNTPOINT\n", prog);
	exit(2);
}

static void write_pidfile(const char *file, pid_t pid)
{
	FILE *f = fopen(file, "w");

	if (!f || fprintf(f, "%d\n", (int)pid) < 0 || fclose(f))
		die(file);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "attr-timeout", required_argument, NULL, 't' },
		{ "auto-inval-data", no_argument, NULL, 'a' },
		{ "direct-io", no_argument, NULL, 'd' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	const char *pidfile = NULL, *source, *mnt;
	int foreground = 0, c, root;
	char mopts[128], *req, *buf, *end;
	struct rlimit rl;
	struct stat st;
	size_t len;

	while ((c = getopt_long(argc, argv, "t:adfp:", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			attr_timeout = strtod(optarg, &end);
			if (*end || attr_timeout < 0)
				usage();
			break;
		case 'a':
			auto_inval = 1;
			break;
		case 'd':
			direct_io = 1;
			break;
		case 'f':
			foreground = 1;
			break;
		case 'p':
			pidfile = optarg;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	source = argv[optind];
	mnt = argv[optind + 1];

	/* One descriptor per inode the kernel holds: as many as allowed. */
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	req = malloc(BUF_SIZE + 1);
	buf = malloc(MAX_WRITE > PATH_MAX ? MAX_WRITE : PATH_MAX);
	if (!req || !buf)
		die("malloc");
	root = open(source, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0 || fstat(root, &st))
		die(source);
	/* nodeid 0 is never used: the root is 1. */
	cap_nodes = 1024;
	nodes = calloc(cap_nodes, sizeof(*nodes));
	if (!nodes)
		die("malloc");
	nodes[0].fd = -1;
	nnodes = 1;
	if (node_get(root, &st) != FUSE_ROOT_ID)
		die("node table");

	fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fuse_fd < 0)
		die("/dev/fuse");
	snprintf(mopts, sizeof(mopts), "fd=%d,rootmode=%o,user_id=0,group_id=0,allow_other",
		 fuse_fd, (unsigned)(st.st_mode & S_IFMT));
	if (mount(source, mnt, "fuse.nowait-fused", MS_NOSUID | MS_NODEV, mopts))
		die(mnt);

	/* The mount is live once INIT is answered: then the caller may go on. */
	len = next_request(req);
	if (!len || ((struct fuse_in_header *)req)->opcode != FUSE_INIT) {
		errno = EPROTO;
		die("no FUSE_INIT from the kernel");
	}
	handle(req, len, buf);

	if (!foreground) {
		pid_t pid;
		int null;

		fflush(NULL);
		pid = fork();
		if (pid < 0)
			die("fork");
		if (pid > 0) {
			if (pidfile)
				write_pidfile(pidfile, pid);
			_exit(0);
		}
		setsid();
		null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			if (null > 2)
				close(null);
		}
	} else if (pidfile) {
		write_pidfile(pidfile, getpid());
	}
	if (chdir("/"))
		die("chdir /");
	signal(SIGPIPE, SIG_IGN);

	while ((len = next_request(req)))
		if (handle(req, len, buf))
			break;
	return 0;
}
