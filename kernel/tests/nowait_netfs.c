// SPDX-License-Identifier: GPL-2.0
/*
 * RWF_NOWAIT reads on network filesystems, against real servers in the
 * guest: knfsd (NFSv3, and NFSv4.2 without and with fscache) and ksmbd
 * (SMB 3.1.1) over loopback, QEMU's virtio-9p, a fuse daemon of the case's
 * own (tools/nowait-fused),
 * ocfs2 in local mode, and a single-node Ceph cluster on the host
 * (harness/ceph.sh) through QEMU's user networking.
 *
 * The rule: a flagged read returns page-cache data when the client may
 * trust its cache without asking the server, and otherwise fails with
 * EAGAIN at once, starting the revalidation or the read in the background.
 * It never waits for the server, and never returns data that a blocking
 * read at the same moment would not. An open that bypasses the cache
 * (9p and cifs cache=none, a fuse direct_io open, O_DIRECT) refuses the
 * flag with EOPNOTSUPP up front.
 *
 * The file is written on the server side (the export's directory on the
 * guest's ext4, or the fuse daemon's source directory) and read through
 * the client; 9p and ocfs2 files are written through the client. nfs is
 * mounted with a long attribute cache time (actimeo=600) so that a hit
 * is a hit; a change on the server is then noticed at open (close-to-open
 * consistency), which is what the server_change case relies on.
 *
 * ceph's file is written through the client, and changed through a second
 * client (a noshare mount), whose write makes the MDS revoke the first
 * client's caps.
 *
 * A slow server is tc netem delay on loopback for nfs and cifs (on eth0 for
 * ceph), a stopped (SIGSTOP) daemon for fuse, and for 9p, whose server is
 * QEMU on the host, a second mount of the same export that QEMU serves at
 * a few reads a second (boot.sh's nowait9pslow). A server gone is a killed
 * fuse daemon, or ksmbd shut down (ksmbd.control -s) and started again.
 * ocfs2 in local mode has no server, and 9p's cannot be changed or taken
 * away from the guest: those server-side cases skip.
 */
#include "kselftest_harness.h"
#include "nowait_test.h"

#include <signal.h>
#include <sys/mount.h>

#define FILE_PAGES 8
/* fuse attribute timeout of the case's daemon, and how long to outwait it */
#define FUSE_ATTR_S "2"
#define FUSE_ATTR_WAIT_MS 2300
/* netem delay for the slow-server cases: every round trip takes 2x this */
#define NETEM_DELAY "200ms"
/* iproute2's, not busybox's, which has no netem */
#define TC "/sbin/tc"


/* How a change made on the server reaches a client that cached the file */
enum change {
	CHANGE_AT_OPEN,		/* nfs: close-to-open revalidation */
	CHANGE_AT_ATTR_TIMEOUT,	/* fuse, auto_inval_data */
	CHANGE_COHERENT,	/* ceph: the MDS revokes the caps first */
	CHANGE_NEVER,		/* cifs under an oplock: incoherent */
};

/* How the slow-server case slows the server down */
enum slow {
	SLOW_NONE,
	SLOW_NETEM,		/* delay on loopback */
	SLOW_SIGSTOP,		/* the fuse daemon stopped */
	SLOW_MOUNT,		/* always slow: the file through variant->slow_dir */
};

/* How the server-gone case takes the server away */
enum gone {
	GONE_NONE,
	GONE_KILL_DAEMON,	/* the fuse daemon killed */
	GONE_KSMBD_STOP,	/* ksmbd shut down, then started again */
};

FIXTURE(netfs) {
	char client[PATH_MAX];	/* the file, read through the client */
	char server[PATH_MAX];	/* the same file on the server side */
	char fusemnt[64];	/* the case's fuse mount, or "" */
	char fusesrc[128];	/* and its daemon's source directory */
	pid_t daemon;		/* the fuse daemon, or 0 */
	const char *netem;	/* the device of a qdisc to remove, or NULL */
	bool ksmbd_stopped;	/* to start again at teardown */
	uint32_t seed;
	off_t size;
	int fd;
	unsigned char *buf;
};

FIXTURE_VARIANT(netfs) {
	const char *dir;	/* the client mount, under $NOWAIT_MNT */
	const char *type;	/* its type in /proc/filesystems */
	const char *export;	/* the server's directory, or NULL */
	const char *changer;	/* another client's mount, to change the file */
	const char *uncached;	/* a mount of the share with no cache */
	const char *slow_dir;	/* a mount of the share whose server is slow */
	bool fuse;		/* a daemon of the case's own */
	bool fscache;		/* a mount with -o fsc (CONFIG_NFS_FSCACHE) */
	const char *dev;	/* the network device that reaches the server */
	enum change change;
	enum slow slow;
	enum gone gone;
};

FIXTURE_VARIANT_ADD(netfs, nfs3) {
	.dir = "nfs3", .type = "nfs",
	.export = "ext4/export-nfs", .change = CHANGE_AT_OPEN,
	.slow = SLOW_NETEM, .dev = "lo",
};
FIXTURE_VARIANT_ADD(netfs, nfs4) {
	.dir = "nfs4", .type = "nfs4",
	.export = "ext4/export-nfs", .change = CHANGE_AT_OPEN,
	.slow = SLOW_NETEM, .dev = "lo",
};
/* fscache: readahead and ->read_folio() go through netfs */
FIXTURE_VARIANT_ADD(netfs, nfs4fsc) {
	.dir = "nfs4-fsc", .type = "nfs4", .fscache = true,
	.export = "ext4/export-nfs", .change = CHANGE_AT_OPEN,
	.slow = SLOW_NETEM, .dev = "lo",
};
FIXTURE_VARIANT_ADD(netfs, cifs) {
	.dir = "cifs", .type = "cifs",
	.export = "ext4/export-smb", .uncached = "cifs-none",
	.change = CHANGE_NEVER, .slow = SLOW_NETEM, .dev = "lo",
	.gone = GONE_KSMBD_STOP,
};
FIXTURE_VARIANT_ADD(netfs, fuse) {
	.type = "fuse.nowait-fused", .fuse = true,
	.change = CHANGE_AT_ATTR_TIMEOUT, .slow = SLOW_SIGSTOP,
	.gone = GONE_KILL_DAEMON,
};
FIXTURE_VARIANT_ADD(netfs, v9p) {
	.dir = "9p", .type = "9p",
	.uncached = "9p-none", .slow = SLOW_MOUNT, .slow_dir = "9p-slow",
};
FIXTURE_VARIANT_ADD(netfs, ceph) {
	.dir = "ceph", .type = "ceph", .changer = "ceph-b",
	.change = CHANGE_COHERENT, .slow = SLOW_NETEM, .dev = "eth0",
};
FIXTURE_VARIANT_ADD(netfs, ocfs2) {
	.dir = "ocfs2", .type = "ocfs2",
};

/* Does this kernel have filesystem @type (fuse.SUBTYPE: fuse) at all? */
static bool kernel_has_fs(const char *type)
{
	char line[128], want[80];
	bool found = false;
	FILE *f = fopen("/proc/filesystems", "re");

	if (!f)
		return false;
	snprintf(want, sizeof(want), "\t%.*s\n", (int)strcspn(type, "."), type);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, want) != NULL;
	fclose(f);
	return found;
}

/*
 * A mount the guest's init should have made, by its type in mountinfo (9p's
 * statfs reports the type of the server's filesystem). Missing on a kernel without
 * the filesystem is a skip; missing on one with it means a server did not
 * come up, and fails the case.
 */
#define NEED_MOUNT(path, type_) do {					\
	char got_[64] = "none";						\
	bool up_ = nowait_mount_type((path), got_, sizeof(got_)) &&	\
		   !strcmp(got_, (type_));				\
	if (!up_ && !kernel_has_fs(type_))				\
		SKIP(return, "this kernel has no %s", (type_));		\
	ASSERT_TRUE(up_) TH_LOG("setup: %s is on a %s mount, not %s: its server did not come up", \
				(path), got_, (type_));			\
} while (0)

static int run(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Add NETEM_DELAY to the traffic out of @dev, or remove it; 0 on success. */
static int netem(const char *dev, bool add)
{
	char cmd[128];

	if (add)
		snprintf(cmd, sizeof(cmd),
			 TC " qdisc add dev %s root netem delay " NETEM_DELAY, dev);
	else
		snprintf(cmd, sizeof(cmd), TC " qdisc del dev %s root 2>/dev/null",
			 dev);
	return run(cmd);
}

/* Whether a socket listens on TCP port @port (IPv4 or IPv6) */
static bool tcp_listening(unsigned int port)
{
	static const char *const tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	unsigned int lport, state;
	char line[256];
	bool found = false;

	for (size_t i = 0; !found && i < sizeof(tables) / sizeof(*tables); i++) {
		FILE *f = fopen(tables[i], "re");

		/* "0: 00000000:01BD 00000000:0000 0A ...": port, state LISTEN */
		while (f && !found && fgets(line, sizeof(line), f))
			found = sscanf(line, " %*u: %*[0-9A-F]:%x %*[0-9A-F]:%*x %x",
				       &lport, &state) == 2 &&
				lport == port && state == 0x0A;
		if (f)
			fclose(f);
	}
	return found;
}

/* Wait up to @ms for TCP port @port to be listened on, or not. */
static bool wait_listening(unsigned int port, bool listening, unsigned int ms)
{
	for (unsigned int waited = 0; waited < ms; waited += 50) {
		if (tcp_listening(port) == listening)
			return true;
		nowait_msleep(50);
	}
	return tcp_listening(port) == listening;
}

#define SMB_PORT 445

/* Start ksmbd's user-space half, as the guest's init does; 0 when it serves */
static int ksmbd_start(void)
{
	if (run("ksmbd.mountd"))
		return -1;
	return wait_listening(SMB_PORT, true, 10000) ? 0 : -1;
}

/*
 * Wait for a process that is not our child to have exited: gone, or a
 * zombie that its new parent has not reaped yet (its files are closed).
 */
static bool wait_gone(pid_t pid, unsigned int ms)
{
	char path[32], stat[256], *state;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (unsigned int waited = 0; waited < ms; waited += 10) {
		f = fopen(path, "re");
		if (!f)
			return true;
		state = fgets(stat, sizeof(stat), f) ? strrchr(stat, ')') : NULL;
		fclose(f);
		if (state && state[1] == ' ' && state[2] == 'Z')
			return true;
		nowait_msleep(10);
	}
	return false;
}

FIXTURE_SETUP(netfs)
{
	char dir[PATH_MAX - 64], name[32];
	int wfd;

	self->fd = -1;
	self->seed = (uint32_t)getpid();
	self->size = (off_t)(FILE_PAGES * nowait_page());
	if (!nowait_in_guest())
		SKIP(return, "needs the guest's servers");
	snprintf(name, sizeof(name), "nowait-netfs.%d", (int)getpid());
	if (variant->fuse) {
		if (!kernel_has_fs(variant->type))
			SKIP(return, "this kernel has no fuse");
		snprintf(self->fusesrc, sizeof(self->fusesrc),
			 "%s/ext4/fuse-src.%d", nowait_mnt(), (int)getpid());
		snprintf(self->fusemnt, sizeof(self->fusemnt), "/tmp/fuse.%d",
			 (int)getpid());
		ASSERT_EQ(0, mkdir(self->fusesrc, 0755))
			TH_LOG("setup: mkdir %s: %s", self->fusesrc,
			       nowait_errname(errno));
		ASSERT_EQ(0, mkdir(self->fusemnt, 0755));
		self->daemon = nowait_fused_start(self->fusesrc, self->fusemnt,
						  FUSE_ATTR_S, "--auto-inval-data");
		ASSERT_LT(0, self->daemon) TH_LOG("setup: nowait-fused did not start");
		NEED_MOUNT(self->fusemnt, variant->type);
		snprintf(dir, sizeof(dir), "%s", self->fusemnt);
		snprintf(self->server, sizeof(self->server), "%s/%s",
			 self->fusesrc, name);
	} else {
		snprintf(dir, sizeof(dir), "%s/%s", nowait_mnt(), variant->dir);
		if (variant->fscache && access("/proc/fs/fscache", F_OK))
			SKIP(return, "this kernel has no fscache");
		if (!strcmp(variant->type, "ceph") && !access("/run/nowait-no-ceph", F_OK))
			SKIP(return, "the guest was booted without a ceph cluster (harness/ceph.sh, NOWAIT_CEPH=1)");
		NEED_MOUNT(dir, variant->type);
		if (variant->fscache) {
			struct nowait_mount m;

			ASSERT_TRUE(nowait_find_mount(dir, NULL, &m));
			ASSERT_TRUE(nowait_has_opt(m.sopts, "fsc"))
				TH_LOG("setup: %s is mounted without fsc: %s", dir, m.sopts);
		}
		if (variant->export)
			snprintf(self->server, sizeof(self->server),
				 "%s/%s/%s", nowait_mnt(), variant->export,
				 name);
		else
			snprintf(self->server, sizeof(self->server), "%s/%s",
				 dir, name);
	}
	snprintf(self->client, sizeof(self->client), "%s/%s", dir, name);

	wfd = open(self->server, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ASSERT_LE(0, wfd) TH_LOG("setup: create %s: %s", self->server,
				 nowait_errname(errno));
	ASSERT_EQ(0, nowait_write_pattern(wfd, 0, (size_t)self->size,
					  self->seed));
	ASSERT_EQ(0, fsync(wfd));
	close(wfd);
	self->fd = open(self->client, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("setup: open %s: %s", self->client,
				      nowait_errname(errno));
	self->buf = malloc((size_t)self->size);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, 0, (size_t)self->size);
}

FIXTURE_TEARDOWN_PARENT(netfs)
{
	char cmd[160];

	if (self->netem)
		netem(self->netem, false);
	if (self->ksmbd_stopped)
		ksmbd_start();
	if (self->daemon > 0) {
		kill(self->daemon, SIGCONT);
		umount2(self->fusemnt, MNT_DETACH);
		kill(self->daemon, SIGKILL);
		rmdir(self->fusemnt);
	}
	if (self->server[0])
		unlink(self->server);
	if (self->fusesrc[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", self->fusesrc);
		run(cmd);
	}
}

/* A blocking read of the whole file, which must hold pattern @seed. */
#define READ_ALL_BLOCKING(seed_) do {					\
	ASSERT_EQ(self->size, nowait_preadv2(self->fd, self->buf,	\
					     (size_t)self->size, 0, 0))	\
		TH_LOG("blocking read: %s", nowait_errname(errno));	\
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)self->size, 0, (seed_)); \
} while (0)

/* A flagged read of the whole file: served, holding pattern @seed */
#define ASSERT_WHOLE_HIT(seed_) do {					\
	memset(self->buf, 0, (size_t)self->size);			\
	ASSERT_EQ(self->size, NOWAIT_PREAD(self->fd, self->buf,	\
					   (size_t)self->size, 0))	\
		TH_LOG("%s", nowait_errname(errno));			\
	NOWAIT_ASSERT_PATTERN(self->buf, (size_t)self->size, 0, (seed_)); \
} while (0)

/* Every page of the file cached, checked before any assertion on a hit */
#define ASSERT_ALL_CACHED() do {					\
	char all_[FILE_PAGES + 1];					\
	memset(all_, 'R', FILE_PAGES);					\
	all_[FILE_PAGES] = '\0';					\
	NOWAIT_ASSERT_RESIDENCY(self->fd, all_);			\
} while (0)

TEST_F(netfs, cached_read_hits_without_sleeping)
{
	READ_ALL_BLOCKING(self->seed);
	ASSERT_ALL_CACHED();
	ASSERT_WHOLE_HIT(self->seed);
}

TEST_F(netfs, miss_eagain_then_served_after_a_blocking_read)
{
	NOWAIT_EVICT(self->fd);
	NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(self->fd, self->buf,
					 (size_t)self->size, 0), EAGAIN);
	READ_ALL_BLOCKING(self->seed);
	ASSERT_ALL_CACHED();
	ASSERT_WHOLE_HIT(self->seed);
}

/*
 * With readahead off, a blocking read of the first two pages caches about
 * those; the client may read more per request. Whatever prefix is cached,
 * a flagged read of the whole file returns exactly that prefix.
 */
TEST_F(netfs, partly_cached_returns_the_cached_prefix)
{
	char map[FILE_PAGES + 1];
	size_t prefix = 0, pg = nowait_page();

	NOWAIT_EVICT(self->fd);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_RANDOM));
	ASSERT_EQ((ssize_t)(2 * pg),
		  nowait_preadv2(self->fd, self->buf, 2 * pg, 0, 0));
	ASSERT_LE(0, nowait_residency(self->fd, map, sizeof(map)));
	while (prefix < FILE_PAGES && map[prefix] == 'R')
		prefix++;
	ASSERT_LE(2, prefix) TH_LOG("setup: residency %s", map);
	if (prefix == FILE_PAGES)
		SKIP(return, "the client read the whole file for two pages (%s)",
		     map);
	memset(self->buf, 0, (size_t)self->size);
	ASSERT_EQ((ssize_t)(prefix * pg),
		  NOWAIT_PREAD(self->fd, self->buf, (size_t)self->size, 0))
		TH_LOG("residency %s: %s", map, nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, prefix * pg, 0, self->seed);
}

/*
 * The file changes on the server while the client has it cached. A flagged
 * read may return the old data only where a blocking read at that moment
 * would too: where the client cannot know (CHANGE_NEVER), it must agree
 * with the blocking read that follows it; where it finds out (at open, or
 * when the attributes expire), it must return the new data or EAGAIN.
 */
TEST_F(netfs, server_change_never_returns_what_a_blocking_read_would_not)
{
	uint32_t seed2 = self->seed ^ 0x5a5a5a5aU;
	char changer[PATH_MAX + 64], map[FILE_PAGES + 1];
	unsigned char *blocking;
	ssize_t r;
	int wfd;

	if (!variant->export && !variant->fuse && !variant->changer)
		SKIP(return, "the server side is out of the guest's reach (9p: the host) or is the client (ocfs2, local mode)");
	if (variant->changer)
		snprintf(changer, sizeof(changer), "%s/%s/%s", nowait_mnt(),
			 variant->changer, strrchr(self->client, '/') + 1);
	else
		snprintf(changer, sizeof(changer), "%s", self->server);
	READ_ALL_BLOCKING(self->seed);
	ASSERT_ALL_CACHED();
	/* change every byte on the server, and its mtime */
	nowait_msleep(20);
	wfd = open(changer, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, wfd);
	ASSERT_EQ(0, nowait_write_pattern(wfd, 0, (size_t)self->size, seed2));
	ASSERT_EQ(0, fsync(wfd));
	close(wfd);
	if (variant->change == CHANGE_AT_OPEN) {
		close(self->fd);
		self->fd = open(self->client, O_RDONLY | O_CLOEXEC);
		ASSERT_LE(0, self->fd);
	} else if (variant->change == CHANGE_AT_ATTR_TIMEOUT) {
		nowait_msleep(FUSE_ATTR_WAIT_MS);
	}
	memset(self->buf, 0, (size_t)self->size);
	r = NOWAIT_PREAD(self->fd, self->buf, (size_t)self->size, 0);
	blocking = malloc((size_t)self->size);
	ASSERT_NE(NULL, blocking);
	ASSERT_EQ(self->size, nowait_preadv2(self->fd, blocking,
					     (size_t)self->size, 0, 0));
	if (variant->change == CHANGE_NEVER) {
		ASSERT_EQ(self->size, r) TH_LOG("%s", nowait_errname(errno));
		ASSERT_EQ(0, memcmp(self->buf, blocking, (size_t)self->size))
			TH_LOG("the flagged read and the blocking read after it disagree");
	} else {
		if (r < 0)
			NOWAIT_ASSERT_ERRNO(r, EAGAIN);
		else
			NOWAIT_ASSERT_PATTERN(self->buf, (size_t)r, 0, seed2);
		/* the revalidation it started, or the blocking read, fetched it */
		NOWAIT_ASSERT_PATTERN(blocking, (size_t)self->size, 0, seed2);
		/*
		 * A ceph client that the MDS has not given the cache cap back
		 * yet reads synchronously, flagged or not: nothing to hit.
		 */
		ASSERT_LE(0, nowait_residency(self->fd, map, sizeof(map)));
		if (variant->change == CHANGE_COHERENT && strchr(map, '.')) {
			NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(self->fd, self->buf,
							 (size_t)self->size, 0),
					    EAGAIN);
			free(blocking);
			return;
		}
		ASSERT_ALL_CACHED();
		ASSERT_WHOLE_HIT(seed2);
	}
	free(blocking);
}

/* Opens that bypass the page cache refuse the flag up front. */
TEST_F(netfs, uncached_open_refuses_with_eopnotsupp)
{
	char path[PATH_MAX + 32], dir[PATH_MAX - 64];
	ssize_t r;
	int fd;

	if (variant->fuse) {
		char mnt[80];
		pid_t pid;

		snprintf(mnt, sizeof(mnt), "%s-dio", self->fusemnt);
		ASSERT_EQ(0, mkdir(mnt, 0755));
		pid = nowait_fused_start(self->fusesrc, mnt, FUSE_ATTR_S,
					 "--direct-io");
		ASSERT_LT(0, pid) TH_LOG("setup: nowait-fused --direct-io did not start");
		snprintf(path, sizeof(path), "%s/%s", mnt,
			 strrchr(self->client, '/') + 1);
		int e;

		fd = open(path, O_RDONLY | O_CLOEXEC);
		r = fd < 0 ? -2 : nowait_preadv2(fd, self->buf, 4096, 0,
						 RWF_NOWAIT);
		e = errno;
		if (fd >= 0)
			close(fd);
		umount2(mnt, MNT_DETACH);
		kill(pid, SIGKILL);
		rmdir(mnt);
		ASSERT_NE(-2, r) TH_LOG("open %s: %s", path, nowait_errname(e));
		errno = e;
		NOWAIT_ASSERT_ERRNO(r, EOPNOTSUPP);
		return;
	}
	if (variant->uncached) {
		snprintf(dir, sizeof(dir), "%s/%s", nowait_mnt(),
			 variant->uncached);
		NEED_MOUNT(dir, variant->type);
		snprintf(path, sizeof(path), "%s/%s", dir,
			 strrchr(self->client, '/') + 1);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		ASSERT_LE(0, fd) TH_LOG("open %s: %s", path,
					nowait_errname(errno));
		r = nowait_preadv2(fd, self->buf, 4096, 0, RWF_NOWAIT);
		close(fd);
		NOWAIT_ASSERT_ERRNO(r, EOPNOTSUPP);
		return;
	}
	if (!strcmp(variant->type, "ocfs2"))
		SKIP(return, "ocfs2 honours RWF_NOWAIT for O_DIRECT reads too");
	/* nfs and ceph: O_DIRECT */
	fd = open(self->client, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	r = nowait_preadv2(fd, self->buf, 4096, 0, RWF_NOWAIT);
	close(fd);
	NOWAIT_ASSERT_ERRNO(r, EOPNOTSUPP);
}

/*
 * A flagged buffered write is refused up front with EOPNOTSUPP, as on the
 * stock kernel: none of these write paths honours IOCB_NOWAIT, and the
 * series opens only their reads (ocfs2's read_iter and write_iter refused
 * the flag side by side). Nothing is written.
 */
TEST_F(netfs, buffered_write_refused_with_eopnotsupp)
{
	size_t pg = nowait_page();
	ssize_t r;
	int wfd;

	wfd = open(self->client, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, wfd) TH_LOG("open for writing: %s", nowait_errname(errno));
	memset(self->buf, 0xa5, pg);
	r = nowait_pwritev2(wfd, self->buf, pg, 0, RWF_NOWAIT);
	close(wfd);
	NOWAIT_ASSERT_ERRNO(r, EOPNOTSUPP);
	READ_ALL_BLOCKING(self->seed);
}

/*
 * A slow server holds up nothing: a cached read is served, an uncached one
 * fails with EAGAIN, neither sleeping. For fuse the daemon is stopped, and
 * an attribute revalidation that falls due fails with EAGAIN too.
 */
TEST_F(netfs, slow_server_hit_served_and_miss_eagain_without_sleeping)
{
	size_t pg = nowait_page();
	char slow[PATH_MAX];
	int fd = self->fd;

	if (variant->slow == SLOW_NONE)
		SKIP(return, "no way to slow this server down from the guest");
	if (variant->slow == SLOW_MOUNT) {
		snprintf(slow, sizeof(slow), "%s/%s/%s", nowait_mnt(),
			 variant->slow_dir, strrchr(self->client, '/') + 1);
		NEED_MOUNT(slow, variant->type);
		fd = open(slow, O_RDONLY | O_CLOEXEC);
		ASSERT_LE(0, fd) TH_LOG("setup: open %s: %s", slow,
					nowait_errname(errno));
	}
	/* half the file cached, half not; readahead off */
	NOWAIT_EVICT(fd);
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM));
	ASSERT_EQ((ssize_t)pg, nowait_preadv2(fd, self->buf, pg, 0, 0));
	NOWAIT_ASSERT_RESIDENCY(fd, "R.......");
	if (variant->slow == SLOW_NETEM) {
		self->netem = variant->dev;
		ASSERT_EQ(0, netem(variant->dev, true))
			TH_LOG("setup: netem on %s", variant->dev);
	} else if (variant->slow == SLOW_SIGSTOP) {
		ASSERT_EQ(0, kill(self->daemon, SIGSTOP));
	}
	ASSERT_EQ((ssize_t)pg, NOWAIT_PREAD(fd, self->buf, pg, 0))
		TH_LOG("cached page: %s", nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, pg, 0, self->seed);
	NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(fd, self->buf, pg, 4 * pg), EAGAIN);
	if (variant->slow == SLOW_SIGSTOP) {
		nowait_msleep(FUSE_ATTR_WAIT_MS);
		NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(fd, self->buf, pg, 0), EAGAIN);
		ASSERT_EQ(0, kill(self->daemon, SIGCONT));
	} else if (variant->slow == SLOW_NETEM) {
		ASSERT_EQ(0, netem(variant->dev, false));
		self->netem = NULL;
	}
	/* and the blocking retry still works once the server is back */
	ASSERT_EQ((ssize_t)pg, nowait_preadv2(fd, self->buf, pg, 4 * pg, 0));
	NOWAIT_ASSERT_PATTERN(self->buf, pg, 4 * pg, self->seed);
}

/*
 * The server goes away: flagged reads return at once without sleeping,
 * cached data or EAGAIN, never a hang. A killed fuse daemon: a blocking read
 * of what is not cached fails with ENOTCONN. ksmbd shut down: the client
 * may go on trusting its lease until it has reconnected, and once ksmbd is
 * started again, a blocking read is served.
 */
TEST_F(netfs, server_gone_gives_an_errno_not_a_hang)
{
	size_t pg = nowait_page();
	int served = 0, refused = 0;
	ssize_t r;

	if (variant->gone == GONE_NONE)
		SKIP(return, "no way to take this server away from the guest");
	NOWAIT_EVICT(self->fd);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_RANDOM));
	ASSERT_EQ((ssize_t)pg, nowait_preadv2(self->fd, self->buf, pg, 0, 0));
	NOWAIT_ASSERT_RESIDENCY(self->fd, "R.......");
	if (variant->gone == GONE_KILL_DAEMON) {
		ASSERT_EQ(0, kill(self->daemon, SIGKILL));
		ASSERT_TRUE(wait_gone(self->daemon, 5000));
	} else {
		self->ksmbd_stopped = true;
		ASSERT_EQ(0, run("ksmbd.control -s >/dev/null"));
		ASSERT_TRUE(wait_listening(SMB_PORT, false, 10000))
			TH_LOG("ksmbd still listens 10 s after its shutdown");
	}
	/*
	 * For a while, as the client notices: the cached page is served, or
	 * EAGAIN once the client stopped trusting its cache (fuse: the
	 * attributes fell due); the uncached one is EAGAIN.
	 */
	for (int i = 0; i < 20; i++) {
		memset(self->buf, 0, pg);
		r = NOWAIT_PREAD(self->fd, self->buf, pg, 0);
		if (r < 0) {
			NOWAIT_ASSERT_ERRNO(r, EAGAIN);
			refused++;
		} else {
			ASSERT_EQ((ssize_t)pg, r);
			NOWAIT_ASSERT_PATTERN(self->buf, pg, 0, self->seed);
			served++;
		}
		NOWAIT_ASSERT_ERRNO(NOWAIT_PREAD(self->fd, self->buf, pg,
						 4 * pg), EAGAIN);
		nowait_msleep(100);
	}
	ksft_print_msg("server gone: the cached page served %d times, EAGAIN %d\n",
		       served, refused);
	if (variant->gone == GONE_KILL_DAEMON) {
		NOWAIT_ASSERT_ERRNO(nowait_preadv2(self->fd, self->buf, pg,
						   4 * pg, 0), ENOTCONN);
		return;
	}
	ASSERT_EQ(0, ksmbd_start()) TH_LOG("ksmbd did not start again");
	self->ksmbd_stopped = false;
	ASSERT_EQ((ssize_t)pg, nowait_preadv2(self->fd, self->buf, pg, 4 * pg, 0))
		TH_LOG("blocking read after ksmbd came back: %s",
		       nowait_errname(errno));
	NOWAIT_ASSERT_PATTERN(self->buf, pg, 4 * pg, self->seed);
}

TEST_HARNESS_MAIN
