// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void loadavg(double l[3])
{
	FILE *f = fopen("/proc/loadavg", "r");

	l[0] = l[1] = l[2] = -1;
	if (f) {
		if (fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3)
			l[0] = l[1] = l[2] = -1;
		fclose(f);
	}
}

static int read_str(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

/* Signal-safe: open, write, close. */
static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err = 0;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

/* The whole disk behind a directory's file system: major:minor and name. */
static int whole_disk(const char *dir, unsigned *maj, unsigned *min, char *name, size_t namelen)
{
	char path[PATH_MAX + 16], real[PATH_MAX], buf[64];
	struct stat st;
	char *slash;

	if (stat(dir, &st) < 0)
		return -errno;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	if (!realpath(path, real))
		return -ENODEV;	/* e.g. btrfs, overlayfs, tmpfs: anonymous st_dev */
	snprintf(path, sizeof(path), "%s/partition", real);
	if (access(path, F_OK) == 0 && (slash = strrchr(real, '/')))
		*slash = 0;	/* a partition: its parent is the disk */
	snprintf(path, sizeof(path), "%s/dev", real);
	if (read_str(path, buf, sizeof(buf)) < 0 || sscanf(buf, "%u:%u", maj, min) != 2)
		return -ENODEV;
	slash = strrchr(real, '/');
	snprintf(name, namelen, "%.63s", slash ? slash + 1 : real);
	return 0;
}

/* A number from the disk's queue/ directory in sysfs; 0 when unreadable. */
static unsigned queue_attr(const struct devinfo *d, const char *name)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/%s", d->maj, d->min, name);
	return read_str(path, buf, sizeof(buf)) == 0 ? (unsigned)strtoul(buf, NULL, 10) : 0;
}

void devinfo_get(const char *dir, struct devinfo *d)
{
	static const struct { long magic; const char *name; } fs[] = {
		{ 0xEF53, "ext4" }, { 0x58465342, "xfs" }, { 0x9123683E, "btrfs" },
		{ 0x01021994, "tmpfs" }, { 0x794c7630, "overlayfs" }, { 0x6969, "nfs" },
		{ 0x65735546, "fuse" }, { 0x2fc12fc1, "zfs" }, { 0xF2F52010, "f2fs" },
	};
	char path[PATH_MAX], buf[128];
	struct statfs sfs;

	memset(d, 0, sizeof(*d));
	snprintf(d->fstype, sizeof(d->fstype), "unknown");
	if (statfs(dir, &sfs) == 0) {
		snprintf(d->fstype, sizeof(d->fstype), "0x%lx", (long)sfs.f_type);
		for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
			if ((long)sfs.f_type == fs[i].magic)
				snprintf(d->fstype, sizeof(d->fstype), "%s", fs[i].name);
	}
	if (whole_disk(dir, &d->maj, &d->min, d->disk, sizeof(d->disk)) < 0)
		return;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/scheduler", d->maj, d->min);
	if (read_str(path, buf, sizeof(buf)) == 0)
		snprintf(d->scheduler, sizeof(d->scheduler), "%s", buf);
	d->read_ahead_kb = queue_attr(d, "read_ahead_kb");
	d->max_sectors_kb = queue_attr(d, "max_sectors_kb");
	d->nr_requests = queue_attr(d, "nr_requests");
}

/* Our cgroup path (relative to the hierarchy root) for a v1 controller, or
 * the v2 one when ctrl is NULL. */
static int own_cgroup(const char *ctrl, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[1024];
	int found = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = 0;
		line[strcspn(line, "\n")] = 0;
		c2[1 + strcspn(c2 + 1, "\n")] = 0;
		if (ctrl ? strstr(c1 + 1, ctrl) != NULL : c1[1] == 0) {
			snprintf(out, len, "%s", c2 + 1);
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

/* Mount point of cgroup2 with "io" available, or of the v1 blkio hierarchy. */
static int find_hierarchy(int *version, char *mnt, size_t len)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	char dev[256], dir[512], type[64], opts[1024], path[600], ctrls[512];
	char v1[512] = "";

	if (!f)
		return -errno;
	while (fscanf(f, "%255s %511s %63s %1023s %*d %*d", dev, dir, type, opts) == 4) {
		if (!strcmp(type, "cgroup2")) {
			snprintf(path, sizeof(path), "%s/cgroup.controllers", dir);
			if (read_str(path, ctrls, sizeof(ctrls)) == 0) {
				for (char *tok = strtok(ctrls, " "); tok; tok = strtok(NULL, " "))
					if (!strcmp(tok, "io")) {
						*version = 2;
						snprintf(mnt, len, "%s", dir);
						fclose(f);
						return 0;
					}
			}
		} else if (!strcmp(type, "cgroup") && !v1[0]) {
			for (char *tok = strtok(opts, ","); tok; tok = strtok(NULL, ","))
				if (!strcmp(tok, "blkio"))
					snprintf(v1, sizeof(v1), "%s", dir);
		}
	}
	fclose(f);
	if (!v1[0])
		return -ENOENT;
	*version = 1;
	snprintf(mnt, len, "%s", v1);
	return 0;
}

int throttle_setup(struct throttle *t, const char *dir, char *err, size_t errlen)
{
	char mnt[512], rel[512], path[1100], pid[32];
	int rc;

	memset(t, 0, sizeof(*t));
	rc = whole_disk(dir, &t->maj, &t->min, t->disk, sizeof(t->disk));
	if (rc < 0) {
		snprintf(err, errlen, "no block device found behind %s (%s)", dir, strerror(-rc));
		return rc;
	}
	rc = find_hierarchy(&t->version, mnt, sizeof(mnt));
	if (rc < 0) {
		snprintf(err, errlen, "neither cgroup v2 'io' nor v1 'blkio' is mounted");
		return rc;
	}
	rc = own_cgroup(t->version == 2 ? NULL : "blkio", rel, sizeof(rel));
	if (rc < 0) {
		snprintf(err, errlen, "cannot find own cgroup in /proc/self/cgroup");
		return rc;
	}
	snprintf(t->home, sizeof(t->home), "%s%s/cgroup.procs", mnt, strcmp(rel, "/") ? rel : "");
	snprintf(t->dir, sizeof(t->dir), "%s/nowait-bench.%d", mnt, (int)getpid());
	if (t->version == 2) {
		snprintf(path, sizeof(path), "%s/cgroup.subtree_control", mnt);
		rc = write_str(path, "+io");
		if (rc < 0) {
			snprintf(err, errlen, "enable io in %s: %s", path, strerror(-rc));
			return rc;
		}
		snprintf(t->rule, sizeof(t->rule), "%s/io.max", t->dir);
	} else {
		snprintf(t->rule, sizeof(t->rule), "%s/blkio.throttle.read_iops_device", t->dir);
	}
	if (mkdir(t->dir, 0755) < 0 && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "mkdir %s: %s", t->dir, strerror(errno));
		return rc;
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", t->dir);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	rc = write_str(path, pid);
	if (rc < 0) {
		snprintf(err, errlen, "join %s: %s", path, strerror(-rc));
		rmdir(t->dir);
		return rc;
	}
	t->active = true;
	return 0;
}

int throttle_set(struct throttle *t, unsigned iops)
{
	char rule[96];

	if (!t->active)
		return -ENODEV;
	if (t->version == 2) {
		if (iops)
			snprintf(rule, sizeof(rule), "%u:%u riops=%u", t->maj, t->min, iops);
		else
			snprintf(rule, sizeof(rule), "%u:%u riops=max", t->maj, t->min);
	} else {
		snprintf(rule, sizeof(rule), "%u:%u %u", t->maj, t->min, iops);
	}
	return write_str(t->rule, rule);
}

void throttle_teardown(struct throttle *t)
{
	char pid[24], *p = pid + sizeof(pid);
	int v = (int)getpid();

	if (!t->active)
		return;
	t->active = false;
	*--p = 0;
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10));
	write_str(t->home, p);
	rmdir(t->dir);
}

long resident_pages(int fd, off_t off, off_t len, unsigned char **vecp, size_t *npages)
{
	long page = sysconf(_SC_PAGESIZE), count = 0;
	unsigned char *vec;
	struct stat st;
	size_t n;
	void *map;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!len)
		len = st.st_size - off;
	if (len <= 0)
		return 0;
	n = (size_t)((len + page - 1) / page);
	map = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, off);
	if (map == MAP_FAILED)
		return -errno;
	vec = malloc(n);
	if (!vec || mincore(map, (size_t)len, vec) < 0) {
		int e = vec ? errno : ENOMEM;

		free(vec);
		munmap(map, (size_t)len);
		return -e;
	}
	munmap(map, (size_t)len);
	for (size_t i = 0; i < n; i++)
		count += vec[i] & 1;
	if (vecp) {
		*vecp = vec;
		*npages = n;
	} else {
		free(vec);
	}
	return count;
}

int evict(int fd, off_t off, off_t len)
{
	fdatasync(fd);
	return -posix_fadvise(fd, off, len, POSIX_FADV_DONTNEED);
}

int drop_caches(void)
{
	sync();
	/* 3, not 1: slab too, or the filesystem's cached extent maps (ext4's
	 * extent status tree) would spare a cold read its metadata I/O. */
	return write_str("/proc/sys/vm/drop_caches", "3");
}
