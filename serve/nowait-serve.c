// SPDX-License-Identifier: MIT
/*
 * nowait-serve: a static file server over HTTP/1.1 or HTTPS, one epoll
 * loop thread, whose file reads go through libnowait (pool or adaptive),
 * io_uring, or sendfile(2). It exists to measure what the inline attempt
 * changes for a server that must read the bytes (TLS) with real clients;
 * see serve/README.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <liburing.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <nowait.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "http.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451	/* the same number on every architecture */
#endif

enum mode { MODE_POOL, MODE_ADAPTIVE, MODE_URING, MODE_SENDFILE };
static const char *const mode_names[] = { "pool", "adaptive", "io_uring", "sendfile" };

/* epoll data of the descriptors that are not connections (those carry a
 * struct conn pointer, never one of these small values). */
enum { EV_LISTEN = 1, EV_COMPLETIONS, EV_SIGNAL, EV_OPENED };

#define IN_CAP 8192	/* request header bytes; more gets 431 */
#define HEAD_CAP 1024	/* our response header, or a whole error response */
#define MIME_TYPES "/etc/mime.types"	/* Debian's media-types */

struct config {
	const char *root, *bind, *cert, *key, *log, *probe_root, *access_log;
	enum mode mode;
	unsigned port, max_conns, idle_timeout_s, header_timeout_s, max_per_addr, threads, workers;
	size_t chunk;
};

/* Live connections per peer address (IPv4 in IPv6's mapped form). */
#define PEER_BUCKETS 1024
struct peer {
	struct peer *next;
	unsigned char addr[16];
	unsigned conns;
};

/* A file name extension and its media type, from MIME_TYPES. */
struct mime {
	char ext[16];
	char type[80];
};

/* A header that is not complete a second after it began is a slow one. */
#define SLOW_HEADER_NS 1000000000u

/*
 * The opens the dentry cache cannot answer (RESOLVE_CACHED said EAGAIN: a
 * lookup would read the disk), done in a thread of their own so that the
 * loop never waits for one. Connections queue on todo and come back on
 * done (linked by open_next, under lock); efd wakes the loop.
 */
struct opener {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct conn *todo_first, *todo_last, *done;
	int efd, root_fd;
	bool stop;
};

struct server {
	struct config cfg;
	unsigned index;		/* the worker: 0 opens the log, the others share it */
	pthread_t thread;
	bool v6;
	uint16_t bound_port;
	struct opener op;
	size_t opens_in_flight;
	bool no_resolve_cached;	/* the kernel has no RESOLVE_CACHED (before 5.12) */
	uint64_t opens_cached, opens_helper;
	int epfd, listen_fd, root_fd, probe_fd;
	int stop_fd;		/* an eventfd: the main thread got SIGINT or SIGTERM */
	SSL_CTX *tls;
	struct nowait_ctx *nowait;
	struct io_uring ring;
	FILE *log;
	FILE *access;		/* --access-log, shared by the workers like log */
	/* Live connections, least recently active first: the idle sweep and
	 * the eviction at the connection cap look at the front only. */
	struct conn *lru_first, *lru_last;
	/* Connections whose request header is incomplete, oldest first (all
	 * have the same deadline after their start): the header deadline and
	 * the eviction of slow requests look at the front only. */
	struct conn *hdr_first, *hdr_last;
	struct peer *peers[PEER_BUCKETS];
	struct mime *mimes;	/* sorted by ext */
	size_t nmimes;
	time_t date_sec;	/* the second date is for */
	char date[HTTP_DATE_LEN];
	/* io_uring completions reaped while another connection ran. */
	struct conn *ready;
	/* Closed connections, freed after the epoll batch, which may still
	 * hold events for them. */
	struct conn *dead;
	unsigned conns;
	size_t reads_in_flight;
	uint64_t now_ns, last_sweep_ns;
	uint64_t requests, reads_inline, reads_queued, evictions, refused, header_timeouts;
};

/* What the per-request log line records. */
struct request_log {
	uint64_t wall_start_ns, start_ns, data_ns, body_bytes;
	int status, cached;	/* cached: 1, 0, or -1 unknown (no cachestat or no body) */
	unsigned reads_inline, reads_queued;
};

struct conn {
	struct server *srv;
	int fd;
	SSL *ssl;
	struct conn *lru_prev, *lru_next, *ready_next, *dead_next;
	struct conn *hdr_prev, *hdr_next;
	struct peer *peer;
	uint64_t active_ns;
	uint64_t header_ns;	/* when the incomplete header (or TLS handshake) began */
	bool in_header;		/* on the hdr list */
	bool tls_checked;	/* the first byte was a TLS record's, not plain HTTP */
	bool closed;		/* socket gone, struct waits for its read to complete */
	bool responding, close_after;
	bool lingering;		/* answered, write side shut, reading to EOF */

	char in[IN_CAP];
	size_t in_len;
	size_t scanned;		/* in[0, scanned) holds no header end: http_header_ready() */

	char head[HEAD_CAP];
	size_t head_len, head_sent;

	/* The body: file bytes [body_off, body_off + body_left) still to read,
	 * and buf[buf_sent, buf_len) read but not yet sent. */
	int file_fd;
	struct nowait_file *file;
	off_t body_off;
	uint64_t body_left;
	char *buf;
	size_t buf_len, buf_sent;
	bool read_in_flight;
	ssize_t read_res;	/* io_uring's result, copied from the CQE */
	bool opening;		/* with the opener: neither run nor freed meanwhile */
	int open_fd, open_err;	/* its result */
	struct conn *open_next;
	struct http_request hreq;	/* the request being answered */
	bool has_req;		/* hreq is this response's (not a 400 and the like) */
	char peer_str[INET6_ADDRSTRLEN];	/* for the access log */
	struct nowait_req req;

	struct request_log rl;
};

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("nowait-serve: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* pool mode: RWF_NOWAIT "does not exist", so libnowait latches inline
 * attempts off on the first read and every read is a pool hand-off, as in a
 * server without the library. */
static ssize_t preadv2_without_nowait(int fd, const struct iovec *iov, int cnt, off_t off,
				      int flags)
{
	if (flags & RWF_NOWAIT) {
		errno = ENOSYS;
		return -1;
	}
	return preadv2(fd, iov, cnt, off, flags);
}

/* ---- connection list ----------------------------------------------------- */

static void lru_unlink(struct server *s, struct conn *c)
{
	*(c->lru_prev ? &c->lru_prev->lru_next : &s->lru_first) = c->lru_next;
	*(c->lru_next ? &c->lru_next->lru_prev : &s->lru_last) = c->lru_prev;
	c->lru_prev = c->lru_next = NULL;
}

static void lru_append(struct server *s, struct conn *c)
{
	c->lru_prev = s->lru_last;
	*(s->lru_last ? &s->lru_last->lru_next : &s->lru_first) = c;
	s->lru_last = c;
}

/* The request header began: its deadline runs from now, whatever the bytes do. */
static void header_begin(struct conn *c)
{
	struct server *s = c->srv;

	if (c->in_header)
		return;
	c->in_header = true;
	c->header_ns = s->now_ns;
	c->hdr_next = NULL;
	c->hdr_prev = s->hdr_last;
	*(s->hdr_last ? &s->hdr_last->hdr_next : &s->hdr_first) = c;
	s->hdr_last = c;
}

static void header_end(struct conn *c)
{
	struct server *s = c->srv;

	if (!c->in_header)
		return;
	c->in_header = false;
	*(c->hdr_prev ? &c->hdr_prev->hdr_next : &s->hdr_first) = c->hdr_next;
	*(c->hdr_next ? &c->hdr_next->hdr_prev : &s->hdr_last) = c->hdr_prev;
	c->hdr_prev = c->hdr_next = NULL;
}

/* The peer's entry with one more connection, or NULL at its limit (or out of memory). */
static struct peer *peer_take(struct server *s, const struct sockaddr_storage *sa)
{
	unsigned char addr[16] = { 0 };
	unsigned h = 0;
	struct peer **link, *p;

	if (sa->ss_family == AF_INET6) {
		memcpy(addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else {
		addr[10] = addr[11] = 0xff;
		memcpy(addr + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	}
	for (int i = 0; i < 16; i++)
		h = h * 31 + addr[i];
	link = &s->peers[h % PEER_BUCKETS];
	for (p = *link; p && memcmp(p->addr, addr, 16); p = p->next)
		;
	if (!p) {
		if (!(p = calloc(1, sizeof(*p))))
			return NULL;
		memcpy(p->addr, addr, 16);
		p->next = *link;
		*link = p;
	}
	if (p->conns >= s->cfg.max_per_addr)
		return NULL;
	p->conns++;
	return p;
}

static void peer_put(struct server *s, struct peer *p)
{
	struct peer **link;
	unsigned h = 0;

	if (--p->conns)
		return;
	for (int i = 0; i < 16; i++)
		h = h * 31 + p->addr[i];
	for (link = &s->peers[h % PEER_BUCKETS]; *link != p; link = &(*link)->next)
		;
	*link = p->next;
	free(p);
}

static void mark_active(struct conn *c)
{
	c->active_ns = c->srv->now_ns;
	if (c->srv->lru_last != c) {
		lru_unlink(c->srv, c);
		lru_append(c->srv, c);
	}
}

static void end_body(struct conn *c)
{
	if (c->file)
		nowait_file_close(c->file);
	if (c->file_fd >= 0)
		close(c->file_fd);
	c->file = NULL;
	c->file_fd = -1;
}

static void bury(struct conn *c)
{
	c->dead_next = c->srv->dead;
	c->srv->dead = c;
}

static void free_dead(struct server *s)
{
	while (s->dead) {
		struct conn *c = s->dead;

		s->dead = c->dead_next;
		end_body(c);
		free(c->buf);
		free(c);
	}
}

/* Closes the socket now; the struct lives on while a read targets its buffer. */
static void conn_close(struct conn *c)
{
	struct server *s = c->srv;

	if (c->ssl)
		SSL_free(c->ssl);
	close(c->fd);
	c->closed = true;
	lru_unlink(s, c);
	header_end(c);
	peer_put(s, c->peer);
	s->conns--;
	if (!c->read_in_flight && !c->opening)
		bury(c);
}

/* ---- socket I/O, plain or TLS -------------------------------------------- */

enum io { IO_DONE, IO_AGAIN, IO_EOF, IO_ERROR, IO_PLAIN_HTTP };

static enum io tls_status(struct conn *c, int ret)
{
	switch (SSL_get_error(c->ssl, ret)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return IO_AGAIN;
	case SSL_ERROR_ZERO_RETURN:
		return IO_EOF;
	default:
		ERR_clear_error();
		return IO_ERROR;
	}
}

static enum io sock_recv(struct conn *c)
{
	char *p = c->in + c->in_len;
	size_t room = IN_CAP - c->in_len;
	ssize_t n;

	/* A TLS connection begins with a handshake record (22); a letter is
	 * plain HTTP sent to the TLS port, which gets a plain 400. */
	if (c->ssl && !c->tls_checked) {
		unsigned char first;

		n = recv(c->fd, &first, 1, MSG_PEEK);
		if (n == 0)
			return IO_EOF;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? IO_AGAIN : IO_ERROR;
		if (first >= 'A' && first <= 'Z') {
			SSL_free(c->ssl);
			c->ssl = NULL;
			return IO_PLAIN_HTTP;
		}
		c->tls_checked = true;
	}
	if (c->ssl) {
		int r = SSL_read(c->ssl, p, (int)room);

		if (r <= 0)
			return tls_status(c, r);
		n = r;
	} else {
		n = recv(c->fd, p, room, 0);
		if (n == 0)
			return IO_EOF;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? IO_AGAIN : IO_ERROR;
	}
	c->in_len += (size_t)n;
	mark_active(c);
	return IO_DONE;
}

/* Sends from p[*sent, len) until done or the socket is full. */
static enum io sock_send(struct conn *c, const char *p, size_t len, size_t *sent)
{
	while (*sent < len) {
		ssize_t n;

		if (c->ssl) {
			int r = SSL_write(c->ssl, p + *sent, (int)(len - *sent));

			if (r <= 0)
				return tls_status(c, r);
			n = r;
		} else {
			n = send(c->fd, p + *sent, len - *sent, MSG_NOSIGNAL);
			if (n < 0)
				return errno == EAGAIN || errno == EINTR ? IO_AGAIN : IO_ERROR;
		}
		*sent += (size_t)n;
		mark_active(c);
	}
	return IO_DONE;
}

/* sendfile mode: the body goes from the page cache to the socket, and the
 * loop thread itself waits for whatever is not cached. */
static enum io sock_sendfile(struct conn *c)
{
	while (c->body_left) {
		ssize_t n = sendfile(c->fd, c->file_fd, &c->body_off, c->body_left);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? IO_AGAIN : IO_ERROR;
		if (n == 0)
			return IO_ERROR;	/* the file shrank under us */
		c->body_left -= (uint64_t)n;
		c->rl.body_bytes += (uint64_t)n;
		mark_active(c);
	}
	return IO_DONE;
}

/* ---- responses ----------------------------------------------------------- */

/* The Date header's value, formatted once a second. */
static const char *date_now(struct server *s)
{
	time_t now = time(NULL);

	if (now != s->date_sec) {
		s->date_sec = now;
		http_date(now, s->date);
	}
	return s->date;
}

static int mime_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mime *)a)->ext, ((const struct mime *)b)->ext);
}

/* MIME_TYPES into s->mimes: "type ext ext ..." lines; none if it is missing. */
static void load_mime_types(struct server *s)
{
	FILE *f = fopen(MIME_TYPES, "re");
	char line[1024];
	size_t cap = 0;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *save, *type = strtok_r(line, " \t\n", &save), *ext;

		if (!type || *type == '#' || strlen(type) >= sizeof(s->mimes->type))
			continue;
		while ((ext = strtok_r(NULL, " \t\n", &save))) {
			if (strlen(ext) >= sizeof(s->mimes->ext))
				continue;
			if (s->nmimes == cap) {
				struct mime *m = realloc(s->mimes, (cap = cap ? 2 * cap : 512) * sizeof(*m));

				if (!m)
					break;
				s->mimes = m;
			}
			strcpy(s->mimes[s->nmimes].ext, ext);
			strcpy(s->mimes[s->nmimes].type, type);
			s->nmimes++;
		}
	}
	fclose(f);
	if (s->nmimes)
		qsort(s->mimes, s->nmimes, sizeof(*s->mimes), mime_cmp);
}

/* The media type of path by its extension; application/octet-stream if unknown. */
static const char *content_type(const struct server *s, const char *path)
{
	const char *base = strrchr(path, '/'), *dot;
	struct mime key = { .ext = "" }, *m;
	size_t i;

	dot = strrchr(base ? base : path, '.');
	if (!dot || !dot[1] || strlen(dot + 1) >= sizeof(key.ext))
		return "application/octet-stream";
	for (i = 0; dot[1 + i]; i++)
		key.ext[i] = (char)(dot[1 + i] >= 'A' && dot[1 + i] <= 'Z' ? dot[1 + i] + 32 : dot[1 + i]);
	m = s->nmimes ? bsearch(&key, s->mimes, s->nmimes, sizeof(*m), mime_cmp) : NULL;
	return m ? m->type : "application/octet-stream";
}

/*
 * The Connection header of a response: close when we will; keep-alive for
 * an HTTP/1.0 request that asked for it (such a client, ab -k for one,
 * takes the connection as closing without it); nothing otherwise.
 */
static const char *connection_header(const struct conn *c)
{
	if (c->close_after)
		return "Connection: close\r\n";
	return c->has_req && c->hreq.minor == 0 ? "Connection: keep-alive\r\n" : "";
}

/* A short text response; extra is a header line or "". */
static void respond_error(struct conn *c, int status, bool head_only, const char *extra)
{
	char body[64];
	int bn = snprintf(body, sizeof(body), "%d %s\n", status, http_reason(status));

	c->head_len = (size_t)snprintf(c->head, HEAD_CAP,
				       "HTTP/1.1 %d %s\r\nServer: nowait-serve\r\nDate: %s\r\n"
				       "Content-Type: text/plain\r\nContent-Length: %d\r\n%s%s\r\n%s",
				       status, http_reason(status), date_now(c->srv), bn, extra,
				       connection_header(c),
				       head_only ? "" : body);
	c->head_sent = 0;
	c->rl.status = status;
}

/* Whether [first, last] of fd is all in the page cache (cachestat(2),
 * Linux 6.5): -1 when the kernel cannot tell. Only with --log: the same
 * system call in every mode, its time left out of the service time. */
static int range_cached(int fd, uint64_t first, uint64_t len)
{
	struct { uint64_t off, len; } range = { first & ~4095ull, 0 };
	struct { uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted; } cs;
	uint64_t pages = ((first + len + 4095) & ~4095ull) / 4096 - first / 4096;

	range.len = pages * 4096;
	if (syscall(__NR_cachestat, fd, &range, &cs, 0))
		return -1;
	return cs.nr_cache >= pages;
}

/* Opens path below the directory dirfd (the root): RESOLVE_BENEATH refuses
 * ".." and symbolic links (absolute or relative) that lead out, and magic
 * links, in the kernel, so there is no window between a check and the open.
 * O_NONBLOCK: opening a FIFO must not wait for a writer (the loop would
 * stop for every client); the caller refuses what is not a regular file
 * and clears the flag on what it serves. */
static int open_beneath(int dirfd, const char *path, bool cached_only)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOATIME | O_NONBLOCK,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (cached_only ? RESOLVE_CACHED : 0),
	};
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	if (fd < 0 && errno == EPERM) {	/* O_NOATIME needs the file's owner */
		how.flags &= ~(uint64_t)O_NOATIME;
		fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	}
	return fd;
}

static void *opener(void *arg)
{
	struct server *s = arg;
	struct opener *op = &s->op;

	pthread_mutex_lock(&op->lock);
	for (;;) {
		struct conn *c = op->todo_first;
		int fd, err;

		if (!c) {
			if (op->stop)
				break;
			pthread_cond_wait(&op->wake, &op->lock);
			continue;
		}
		if (!(op->todo_first = c->open_next))
			op->todo_last = NULL;
		pthread_mutex_unlock(&op->lock);
		fd = open_beneath(op->root_fd, c->hreq.path, false);
		err = errno;
		pthread_mutex_lock(&op->lock);
		c->open_fd = fd;
		c->open_err = err;
		c->open_next = op->done;
		op->done = c;
		if (!c->open_next) {
			uint64_t one = 1;
			/* Fails only when saturated, i.e. readable anyway. */
			ssize_t n = write(op->efd, &one, sizeof(one));

			(void)n;
		}
	}
	pthread_mutex_unlock(&op->lock);
	return NULL;
}

static void opened(struct conn *c, int fd, int err);

/* Opens the file of c->hreq: at once if the dentry cache has the path,
 * else in the opener thread, and the response goes on in opened(). */
static void begin_response(struct conn *c, const struct http_request *req)
{
	struct server *s = c->srv;
	int fd;

	c->close_after = !req->keep_alive;
	c->hreq = *req;
	c->has_req = true;
	if (!s->no_resolve_cached) {
		fd = open_beneath(s->root_fd, req->path, true);
		if (fd >= 0 || errno != EAGAIN) {
			if (fd < 0 && errno == EINVAL) {
				s->no_resolve_cached = true;	/* Linux before 5.12 */
			} else {
				s->opens_cached++;
				opened(c, fd, errno);
				return;
			}
		}
	}
	s->opens_helper++;
	s->opens_in_flight++;
	c->opening = true;
	c->open_next = NULL;
	pthread_mutex_lock(&s->op.lock);
	*(s->op.todo_last ? &s->op.todo_last->open_next : &s->op.todo_first) = c;
	s->op.todo_last = c;
	pthread_cond_signal(&s->op.wake);
	pthread_mutex_unlock(&s->op.lock);
}

/* The response to c->hreq once its file is open (fd), or the error (err). */
static void opened(struct conn *c, int fd, int err)
{
	struct server *s = c->srv;
	const struct http_request *req = &c->hreq;
	bool head_only = req->method == HTTP_HEAD;
	uint64_t first, last, len;
	char range_header[96] = "";
	struct stat st;
	int status;

	c->file_fd = fd;
	if (c->file_fd < 0) {
		respond_error(c, err == ENOENT || err == ENOTDIR ? 404 :
				 err == EXDEV || err == ELOOP || err == EACCES ? 403 :
				 err == ENAMETOOLONG ? 414 : 500, head_only, "");
		return;
	}
	/* Before any read: a FIFO, device or socket is never read. O_NONBLOCK
	 * off again: io_uring would fail a cold read of the file with EAGAIN. */
	int fl = fcntl(c->file_fd, F_GETFL);

	if (fstat(c->file_fd, &st) || !S_ISREG(st.st_mode) || fl < 0 ||
	    fcntl(c->file_fd, F_SETFL, fl & ~O_NONBLOCK)) {
		int dir = S_ISDIR(st.st_mode);

		end_body(c);
		respond_error(c, dir ? 403 : 404, head_only, "");
		return;
	}
	/* Validators: the size and the modification time to the nanosecond. */
	char etag[64], modified[HTTP_DATE_LEN];

	snprintf(etag, sizeof(etag), "\"%" PRIx64 "-%" PRIx64 ".%lx\"", (uint64_t)st.st_size,
		 (uint64_t)st.st_mtim.tv_sec, (unsigned long)st.st_mtim.tv_nsec);
	http_date(st.st_mtim.tv_sec, modified);
	/* RFC 9110 13.2.2: If-None-Match, else If-Modified-Since; both before Range. */
	if (req->if_none_match[0] ? http_etag_matches(req->if_none_match, etag) :
	    req->has_ims && st.st_mtim.tv_sec <= req->ims) {
		end_body(c);
		c->head_len = (size_t)snprintf(c->head, HEAD_CAP,
					       "HTTP/1.1 304 Not Modified\r\nServer: nowait-serve\r\n"
					       "Date: %s\r\nLast-Modified: %s\r\nETag: %s\r\n%s\r\n",
					       date_now(s), modified, etag,
					       connection_header(c));
		c->head_sent = 0;
		c->rl.status = 304;
		return;
	}
	status = http_resolve_range(req, (uint64_t)st.st_size, &first, &last);
	if (status == 416) {
		snprintf(range_header, sizeof(range_header), "Content-Range: bytes */%" PRIu64 "\r\n",
			 (uint64_t)st.st_size);
		end_body(c);
		respond_error(c, 416, head_only, range_header);
		return;
	}
	len = st.st_size ? last - first + 1 : 0;
	if (status == 206)
		snprintf(range_header, sizeof(range_header),
			 "Content-Range: bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64 "\r\n", first, last,
			 (uint64_t)st.st_size);
	c->head_len = (size_t)snprintf(c->head, HEAD_CAP,
				       "HTTP/1.1 %d %s\r\nServer: nowait-serve\r\nDate: %s\r\n"
				       "Last-Modified: %s\r\nETag: %s\r\nContent-Type: %s\r\n"
				       "Accept-Ranges: bytes\r\nContent-Length: %" PRIu64 "\r\n%s%s\r\n",
				       status, http_reason(status), date_now(s), modified, etag,
				       content_type(s, req->path), len, range_header,
				       connection_header(c));
	c->head_sent = 0;
	c->rl.status = status;
	if (head_only || len == 0) {
		end_body(c);
		return;
	}
	if (s->log) {
		uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
		/* --probe-root: the same path below another directory holds
		 * the pages (overlayfs' lower layer: an overlay file's own
		 * mapping never has any, so cachestat of it says 0). */
		int pfd = s->probe_fd >= 0 ? open_beneath(s->probe_fd, req->path, false) : c->file_fd;

		c->rl.cached = pfd >= 0 ? range_cached(pfd, first, len) : -1;
		if (pfd >= 0 && pfd != c->file_fd)
			close(pfd);
		/* The probe is the log's cost, not the service's. */
		c->rl.start_ns += clock_ns(CLOCK_MONOTONIC) - t0;
	}
	if ((s->cfg.mode == MODE_POOL || s->cfg.mode == MODE_ADAPTIVE) &&
	    nowait_file_open(s->nowait, c->file_fd, &c->file)) {
		c->file = NULL;
		end_body(c);
		c->close_after = true;
		respond_error(c, 500, head_only, "");
		return;
	}
	c->body_off = (off_t)first;
	c->body_left = len;
}

/*
 * One line in the common log format: host - - [time] "request" status
 * bytes. The request line is rebuilt from the parsed request (the path
 * decoded, with quotes, spaces and controls escaped again), or "-".
 */
static void access_log(struct conn *c)
{
	struct request_log *r = &c->rl;
	time_t t = (time_t)(r->wall_start_ns / 1000000000u);
	char when[64], path[3 * HTTP_PATH_MAX + 1], *p = path, bytes[24] = "-";
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%d/%b/%Y:%H:%M:%S +0000", &tm);
	if (c->has_req) {
		for (const unsigned char *q = (const unsigned char *)c->hreq.path; *q; q++) {
			if (*q <= ' ' || *q == '"' || *q == '%' || *q >= 0x7f)
				p += sprintf(p, "%%%02X", *q);
			else
				*p++ = (char)*q;
		}
	}
	*p = 0;
	if (r->body_bytes)
		snprintf(bytes, sizeof(bytes), "%" PRIu64, r->body_bytes);
	if (c->has_req)
		fprintf(c->srv->access, "%s - - [%s] \"%s /%s HTTP/1.%u\" %d %s\n", c->peer_str, when,
			c->hreq.method == HTTP_HEAD ? "HEAD" : "GET", path, c->hreq.minor, r->status,
			bytes);
	else
		fprintf(c->srv->access, "%s - - [%s] \"-\" %d %s\n", c->peer_str, when, r->status,
			bytes);
}

static void log_request(struct conn *c)
{
	struct server *s = c->srv;
	struct request_log *r = &c->rl;
	const char *how = s->cfg.mode == MODE_SENDFILE && r->body_bytes ? "sendfile" :
			  r->reads_queued ? "queued" : r->reads_inline ? "inline" : "none";

	s->requests++;
	if (s->access)
		access_log(c);
	c->has_req = false;
	if (!s->log)
		return;
	s->now_ns = clock_ns(CLOCK_MONOTONIC);
	fprintf(s->log, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %d %" PRIu64 " %d %u %u %s\n",
		r->wall_start_ns, s->now_ns - r->start_ns, r->data_ns ? r->data_ns - r->start_ns : 0,
		r->status, r->body_bytes, r->cached, r->reads_inline, r->reads_queued, how);
}

/* ---- file reads ---------------------------------------------------------- */

static void read_done(struct conn *c, ssize_t res)
{
	c->read_in_flight = false;
	if (res > 0) {
		c->buf_len = (size_t)res;
		c->buf_sent = 0;
		c->body_off += res;
		c->body_left -= (uint64_t)res;
		c->rl.body_bytes += (uint64_t)res;
		if (!c->rl.data_ns)
			c->rl.data_ns = clock_ns(CLOCK_MONOTONIC);
	}
}

static void uring_reap(struct server *s, struct conn *submitter);

/* Starts the next read of the body: false when it failed (the response
 * cannot be finished, its length is already promised). */
static bool start_read(struct conn *c)
{
	struct server *s = c->srv;
	size_t len = c->body_left < s->cfg.chunk ? (size_t)c->body_left : s->cfg.chunk;

	if (!c->buf && !(c->buf = malloc(s->cfg.chunk)))
		return false;
	c->read_in_flight = true;
	c->read_res = 0;
	if (s->cfg.mode == MODE_URING) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

		if (!sqe) {
			io_uring_submit(&s->ring);
			sqe = io_uring_get_sqe(&s->ring);
		}
		io_uring_prep_read(sqe, c->file_fd, c->buf, (unsigned)len, (uint64_t)c->body_off);
		io_uring_sqe_set_data(sqe, c);
		s->reads_in_flight++;
		if (io_uring_submit(&s->ring) < 0)
			die("io_uring_submit");
		/* A cached read completes within the submit: its CQE is there
		 * now. Anything later went to io-wq or waited for the page. */
		uring_reap(s, c);
		if (c->read_in_flight) {
			c->rl.reads_queued++;
			s->reads_queued++;
			return true;
		}
		c->rl.reads_inline++;
		s->reads_inline++;
		read_done(c, c->read_res);
		return c->read_res > 0;
	}
	ssize_t n = nowait_read(c->file, &c->req, c->buf, len, c->body_off);

	if (n == NOWAIT_QUEUED) {
		s->reads_in_flight++;
		c->rl.reads_queued++;
		s->reads_queued++;
		return true;
	}
	c->rl.reads_inline++;
	s->reads_inline++;
	read_done(c, n);
	return n > 0;
}

/* ---- the connection's state machine -------------------------------------- */

/*
 * Closing right after the last response would reset the connection if the
 * client's unread bytes are still in our receive buffer (a 431, or a body
 * we refused), and the reset can destroy the response before the client
 * reads it. So shut the write side and read to EOF; the idle timeout ends
 * clients that never close.
 */
static void linger(struct conn *c)
{
	char sink[4096];
	ssize_t n;

	if (!c->lingering) {
		if (c->ssl)
			SSL_shutdown(c->ssl);	/* close_notify, best effort */
		shutdown(c->fd, SHUT_WR);
		c->lingering = true;
	}
	while ((n = recv(c->fd, sink, sizeof(sink), 0)) > 0)
		;
	if (n == 0 || (errno != EAGAIN && errno != EINTR))
		conn_close(c);
}

/*
 * Makes all the progress possible without waiting: sends what is pending,
 * reads the next chunk of the body, parses the next request. Returns when
 * the socket or a file read must be waited for, or after closing.
 */
static void conn_run(struct conn *c)
{
	struct server *s = c->srv;

	if (c->lingering) {
		linger(c);
		return;
	}
	while (!c->read_in_flight && !c->opening) {
		enum io r = sock_send(c, c->head, c->head_len, &c->head_sent);

		if (r == IO_DONE)
			r = sock_send(c, c->buf, c->buf_len, &c->buf_sent);
		if (r == IO_DONE && c->responding && s->cfg.mode == MODE_SENDFILE && c->file_fd >= 0)
			r = sock_sendfile(c);
		if (r == IO_AGAIN)
			return;
		if (r != IO_DONE)
			goto close;
		if (c->responding && c->body_left) {
			if (!start_read(c))
				goto close;
			continue;
		}
		if (c->responding) {
			log_request(c);
			end_body(c);
			c->responding = false;
			c->buf_len = c->buf_sent = c->head_len = c->head_sent = 0;
			if (c->close_after) {
				linger(c);
				return;
			}
		}

		struct http_request req;
		size_t used = 0;
		int status = http_header_ready(c->in, c->in_len, IN_CAP, &c->scanned) ?
			     http_parse(c->in, c->in_len, IN_CAP, &req, &used) : 0;

		if (status == 0 && c->in_len)
			header_begin(c);
		if (status == 0) {
			r = sock_recv(c);
			if (r == IO_AGAIN)
				return;
			if (r == IO_PLAIN_HTTP)
				status = 400;
			else if (r != IO_DONE)
				goto close;
			else
				continue;
		}
		header_end(c);
		c->responding = true;
		c->rl = (struct request_log){ .cached = -1 };
		c->rl.wall_start_ns = clock_ns(CLOCK_REALTIME);
		c->rl.start_ns = s->now_ns = clock_ns(CLOCK_MONOTONIC);
		c->scanned = 0;		/* the buffer moves, or starts anew */
		if (status == 200) {
			memmove(c->in, c->in + used, c->in_len - used);
			c->in_len -= used;
			begin_response(c, &req);
		} else {
			/* The framing is not trusted: answer and close. */
			c->in_len = 0;
			c->close_after = true;
			respond_error(c, status, false, status == 405 ? "Allow: GET, HEAD\r\n" : "");
		}
	}
	return;
close:
	conn_close(c);
}

/* A read finished in the pool or io_uring. */
static void read_completed(struct conn *c, ssize_t res)
{
	c->srv->reads_in_flight--;
	read_done(c, res);
	if (c->closed) {
		bury(c);
		return;
	}
	if (res <= 0) {
		conn_close(c);
		return;
	}
	conn_run(c);
}

static void uring_reap(struct server *s, struct conn *submitter)
{
	struct io_uring_cqe *cqe;

	while (!io_uring_peek_cqe(&s->ring, &cqe)) {
		struct conn *c = io_uring_cqe_get_data(cqe);

		c->read_res = cqe->res;
		io_uring_cqe_seen(&s->ring, cqe);
		if (c == submitter) {
			s->reads_in_flight--;
			c->read_in_flight = false;
		} else {
			/* Run after the current connection, not inside it. */
			c->ready_next = s->ready;
			s->ready = c;
		}
	}
}

static void reap_completions(struct server *s)
{
	if (s->cfg.mode == MODE_URING) {
		uring_reap(s, NULL);
	} else {
		struct nowait_req *done[64];
		int n;

		while ((n = nowait_reap(s->nowait, done, 64)) > 0)
			for (int i = 0; i < n; i++)
				read_completed(done[i]->user_data, done[i]->res);
	}
}

/* The opener's results: each connection's response goes on. */
static void reap_opens(struct server *s)
{
	struct conn *c;
	uint64_t v;

	if (read(s->op.efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		die("opener eventfd: %s", strerror(errno));
	pthread_mutex_lock(&s->op.lock);
	c = s->op.done;
	s->op.done = NULL;
	pthread_mutex_unlock(&s->op.lock);
	while (c) {
		struct conn *next = c->open_next;

		c->opening = false;
		s->opens_in_flight--;
		if (c->closed) {
			if (c->open_fd >= 0)
				close(c->open_fd);
			bury(c);
		} else {
			s->now_ns = clock_ns(CLOCK_MONOTONIC);
			opened(c, c->open_fd, c->open_err);
			conn_run(c);
		}
		c = next;
	}
}

static void run_ready(struct server *s)
{
	while (s->ready) {
		struct conn *c = s->ready;

		s->ready = c->ready_next;
		read_completed(c, c->read_res);
	}
}

/* ---- accepting and timing out -------------------------------------------- */

/* At the cap, the oldest slow request header makes room, else the least
 * recently active connection that waits for a request: neither an idle
 * flood nor clients that send a byte now and then lock newcomers out. */
static bool make_room(struct server *s)
{
	if (s->hdr_first && s->now_ns - s->hdr_first->header_ns >= SLOW_HEADER_NS) {
		s->evictions++;
		conn_close(s->hdr_first);
		return true;
	}
	for (struct conn *c = s->lru_first; c; c = c->lru_next) {
		if (!c->responding && c->in_len == 0) {
			s->evictions++;
			conn_close(c);
			return true;
		}
	}
	return false;
}

static void accept_all(struct server *s)
{
	for (;;) {
		struct sockaddr_storage sa;
		socklen_t salen = sizeof(sa);
		int fd = accept4(s->listen_fd, (struct sockaddr *)&sa, &salen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
		struct peer *peer;

		if (fd < 0)
			return;	/* EAGAIN; descriptors cannot run out, see setup() */
		if (!(peer = peer_take(s, &sa)) ||
		    (s->conns >= s->cfg.max_conns && !make_room(s))) {
			if (peer)
				peer_put(s, peer);
			s->refused++;
			close(fd);
			continue;
		}
		struct conn *c = calloc(1, sizeof(*c));

		if (!c) {
			peer_put(s, peer);
			close(fd);
			continue;
		}
		c->peer = peer;
		if (sa.ss_family == AF_INET6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, c->peer_str,
				  sizeof(c->peer_str));
		else
			inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, c->peer_str,
				  sizeof(c->peer_str));
		c->srv = s;
		c->fd = fd;
		c->file_fd = -1;
		c->req.user_data = c;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (s->tls) {
			c->ssl = SSL_new(s->tls);
			if (!c->ssl || !SSL_set_fd(c->ssl, fd)) {
				SSL_free(c->ssl);
				peer_put(s, peer);
				free(c);
				close(fd);
				continue;
			}
			SSL_set_accept_state(c->ssl);
		}
		s->conns++;
		c->active_ns = s->now_ns;
		lru_append(s, c);
		header_begin(c);	/* the TLS handshake and the first request */
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
					  .data.ptr = c };

		epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
	}
}

/* Connections without progress for the idle timeout are closed, whatever
 * their state: a client that stops reading holds no more than its buffers. */
static void sweep_idle(struct server *s)
{
	uint64_t limit = (uint64_t)s->cfg.idle_timeout_s * 1000000000u;
	uint64_t header_limit = (uint64_t)s->cfg.header_timeout_s * 1000000000u;

	s->last_sweep_ns = s->now_ns;
	while (s->lru_first && s->now_ns - s->lru_first->active_ns >= limit)
		conn_close(s->lru_first);
	/* The whole header within its deadline, however steadily its bytes come. */
	while (s->hdr_first && s->now_ns - s->hdr_first->header_ns >= header_limit) {
		s->header_timeouts++;
		conn_close(s->hdr_first);
	}
}

/* ---- setup --------------------------------------------------------------- */

static void watch(struct server *s, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev))
		die("epoll_ctl: %s", strerror(errno));
}

static void setup(struct server *s)
{
	/* IPv6 when the address has a colon ("::1", "::" for every address). */
	bool v6 = strchr(s->cfg.bind, ':');
	union {
		struct sockaddr sa;
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} addr = { 0 };
	socklen_t alen = v6 ? sizeof(addr.v6) : sizeof(addr.v4);
	int one = 1;

	/*
	 * A connection holds up to two descriptors (socket, file): raise the
	 * limit as far as allowed and keep the cap below it, so that accept
	 * never fails for want of one (the listening socket would stay
	 * readable and the loop would spin).
	 */
	struct rlimit nofile;

	if (!getrlimit(RLIMIT_NOFILE, &nofile)) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
		getrlimit(RLIMIT_NOFILE, &nofile);
		/* Every worker's connections, and 64 for the rest. */
		rlim_t per = 2 * (rlim_t)s->cfg.workers;

		if (nofile.rlim_cur < per * s->cfg.max_conns + 64)
			s->cfg.max_conns = nofile.rlim_cur > per + 64 ?
					   (unsigned)((nofile.rlim_cur - 64) / per) : 1;
	}
	s->root_fd = open(s->cfg.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->root_fd < 0)
		die("%s: %s", s->cfg.root, strerror(errno));
	s->probe_fd = -1;
	if (s->cfg.probe_root &&
	    (s->probe_fd = open(s->cfg.probe_root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		die("%s: %s", s->cfg.probe_root, strerror(errno));
	if (s->index == 0 && s->cfg.log && !(s->log = fopen(s->cfg.log, "w")))
		die("%s: %s", s->cfg.log, strerror(errno));
	/* Appended to, a line at a time, so that it can be rotated and tailed. */
	if (s->index == 0 && s->cfg.access_log) {
		if (!(s->access = fopen(s->cfg.access_log, "ae")))
			die("%s: %s", s->cfg.access_log, strerror(errno));
		setvbuf(s->access, NULL, _IOLBF, 0);
	}
	if (s->index == 0 && s->log)
		fprintf(s->log, "# nowait-serve mode=%s tls=%d\n# wall_start_ns service_ns "
			"data_ns status body_bytes cached reads_inline reads_queued how\n",
			mode_names[s->cfg.mode], s->cfg.cert != NULL);
	if (s->cfg.cert) {
		s->tls = SSL_CTX_new(TLS_server_method());
		if (!s->tls || !SSL_CTX_set_min_proto_version(s->tls, TLS1_2_VERSION) ||
		    SSL_CTX_use_certificate_chain_file(s->tls, s->cfg.cert) != 1 ||
		    SSL_CTX_use_PrivateKey_file(s->tls, s->cfg.key, SSL_FILETYPE_PEM) != 1)
			die("TLS setup with %s and %s failed", s->cfg.cert, s->cfg.key);
		SSL_CTX_set_mode(s->tls, SSL_MODE_ENABLE_PARTIAL_WRITE |
				 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
		SSL_CTX_set_options(s->tls, SSL_OP_NO_RENEGOTIATION);
	}

	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->listen_fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (v6) {
		addr.v6.sin6_family = AF_INET6;
		addr.v6.sin6_port = htons((uint16_t)s->cfg.port);
	} else {
		addr.v4.sin_family = AF_INET;
		addr.v4.sin_port = htons((uint16_t)s->cfg.port);
	}
	if (s->epfd < 0 || s->listen_fd < 0 ||
	    inet_pton(v6 ? AF_INET6 : AF_INET, s->cfg.bind,
		      v6 ? (void *)&addr.v6.sin6_addr : (void *)&addr.v4.sin_addr) != 1)
		die("cannot set up the listening socket on %s", s->cfg.bind);
	setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* Workers: a listening socket each on one port, the kernel spreads connections. */
	if (s->cfg.workers > 1 &&
	    setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)))
		die("SO_REUSEPORT: %s", strerror(errno));
	if (bind(s->listen_fd, &addr.sa, alen) || listen(s->listen_fd, 1024) ||
	    getsockname(s->listen_fd, &addr.sa, &alen))
		die("%s:%u: %s", s->cfg.bind, s->cfg.port, strerror(errno));
	s->v6 = v6;
	s->bound_port = ntohs(v6 ? addr.v6.sin6_port : addr.v4.sin_port);
	load_mime_types(s);
	watch(s, s->listen_fd, EV_LISTEN);

	if (s->cfg.mode == MODE_URING) {
		int err = io_uring_queue_init(256, &s->ring, 0);

		if (err)
			die("io_uring_queue_init: %s", strerror(-err));
		watch(s, s->ring.ring_fd, EV_COMPLETIONS);
	} else if (s->cfg.mode != MODE_SENDFILE) {
		struct nowait_params p = { .threads = s->cfg.threads };

		if (s->cfg.mode == MODE_POOL)
			p.preadv2 = preadv2_without_nowait;
		int err = nowait_create(&p, &s->nowait);

		if (err)
			die("nowait_create: %s", strerror(-err));
		watch(s, nowait_fd(s->nowait), EV_COMPLETIONS);
	}

	s->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->stop_fd < 0)
		die("eventfd: %s", strerror(errno));
	watch(s, s->stop_fd, EV_SIGNAL);

	/* main() blocked SIGINT and SIGTERM: the opener inherits the mask. */
	s->op.root_fd = s->root_fd;
	s->op.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_mutex_init(&s->op.lock, NULL);
	pthread_cond_init(&s->op.wake, NULL);
	if (s->op.efd < 0 || pthread_create(&s->op.thread, NULL, opener, s))
		die("opener thread: %s", strerror(errno));
	watch(s, s->op.efd, EV_OPENED);
}

/* Closes everything; reads still in flight finish into their buffers
 * before those are freed. */
static void shutdown_server(struct server *s)
{
	struct rusage ru;

	while (s->lru_first)
		conn_close(s->lru_first);
	run_ready(s);	/* the batch the signal interrupted may have left some */
	while (s->opens_in_flight) {
		struct pollfd p = { .fd = s->op.efd, .events = POLLIN };

		poll(&p, 1, -1);
		reap_opens(s);
	}
	pthread_mutex_lock(&s->op.lock);
	s->op.stop = true;
	pthread_cond_signal(&s->op.wake);
	pthread_mutex_unlock(&s->op.lock);
	pthread_join(s->op.thread, NULL);
	close(s->op.efd);
	while (s->reads_in_flight) {
		if (s->cfg.mode == MODE_URING) {
			struct io_uring_cqe *cqe;

			io_uring_wait_cqe(&s->ring, &cqe);
		} else {
			struct pollfd p = { .fd = nowait_fd(s->nowait), .events = POLLIN };

			poll(&p, 1, -1);
		}
		reap_completions(s);
		run_ready(s);
	}
	free_dead(s);
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr, "nowait-serve: mode=%s worker=%u requests=%" PRIu64 " reads_inline=%" PRIu64
		" reads_queued=%" PRIu64 " evictions=%" PRIu64 " refused=%" PRIu64
		" header_timeouts=%" PRIu64 " opens_cached=%" PRIu64 " opens_helper=%" PRIu64
		" cpu_user_s=%.3f cpu_sys_s=%.3f\n",
		mode_names[s->cfg.mode], s->index, s->requests, s->reads_inline, s->reads_queued, s->evictions,
		s->refused, s->header_timeouts, s->opens_cached, s->opens_helper, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	if (s->nowait)
		nowait_destroy(s->nowait);
	if (s->cfg.mode == MODE_URING)
		io_uring_queue_exit(&s->ring);
	if (s->log && s->index == 0)
		fclose(s->log);	/* main() shuts worker 0 down last */
	if (s->access && s->index == 0)
		fclose(s->access);
	SSL_CTX_free(s->tls);
	close(s->stop_fd);
	close(s->listen_fd);
	close(s->epfd);
	close(s->root_fd);
	free(s->mimes);
	if (s->probe_fd >= 0)
		close(s->probe_fd);
}

static void serve(struct server *s)
{
	struct epoll_event events[64];

	for (;;) {
		int n = epoll_wait(s->epfd, events, 64, s->lru_first ? 1000 : -1);

		s->now_ns = clock_ns(CLOCK_MONOTONIC);
		for (int i = 0; i < n; i++) {
			switch (events[i].data.u64) {
			case EV_LISTEN:
				accept_all(s);
				break;
			case EV_COMPLETIONS:
				reap_completions(s);
				break;
			case EV_SIGNAL:
				return;
			case EV_OPENED:
				reap_opens(s);
				break;
			default: {
				struct conn *c = events[i].data.ptr;

				/* A completion earlier in this batch may have closed it. */
				if (!c->closed && !c->read_in_flight && !c->opening)
					conn_run(c);
			}
			}
			run_ready(s);
		}
		free_dead(s);
		if (s->now_ns - s->last_sweep_ns >= 250000000u)
			sweep_idle(s);
	}
}

static void *worker_main(void *arg)
{
	struct server *s = arg;

	s->now_ns = s->last_sweep_ns = clock_ns(CLOCK_MONOTONIC);
	serve(s);
	return NULL;
}

/*
 * The workers, each a server of its own on the same port, in threads; this
 * thread waits for SIGINT or SIGTERM, stops them, and shuts each down.
 */
static int run_workers(const struct config *cfg)
{
	struct server *servers = calloc(cfg->workers, sizeof(*servers));
	uint64_t one = 1;
	sigset_t sigs;
	int sig;

	if (!servers)
		die("out of memory");
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);	/* every thread inherits it */
	signal(SIGPIPE, SIG_IGN);	/* OpenSSL writes with write(2), not MSG_NOSIGNAL */
	for (unsigned i = 0; i < cfg->workers; i++) {
		struct server *s = &servers[i];

		s->cfg = *cfg;
		s->index = i;
		if (i) {
			s->cfg.port = servers[0].bound_port;
			s->log = servers[0].log;
			s->access = servers[0].access;
		}
		setup(s);
	}
	/* Tests and the benchmark read the port from this line (--port 0). */
	printf("nowait-serve: listening on %s://%s%s%s:%u mode %s\n",
	       servers[0].tls ? "https" : "http", servers[0].v6 ? "[" : "", cfg->bind,
	       servers[0].v6 ? "]" : "", servers[0].bound_port, mode_names[cfg->mode]);
	fflush(stdout);
	for (unsigned i = 0; i < cfg->workers; i++)
		if (pthread_create(&servers[i].thread, NULL, worker_main, &servers[i]))
			die("worker thread: %s", strerror(errno));
	while (sigwait(&sigs, &sig))
		;
	for (unsigned i = 0; i < cfg->workers; i++)
		if (write(servers[i].stop_fd, &one, sizeof(one)) < 0)
			die("stop: %s", strerror(errno));
	for (unsigned i = cfg->workers; i-- > 0;) {
		pthread_join(servers[i].thread, NULL);
		shutdown_server(&servers[i]);
	}
	free(servers);
	return 0;
}

static void usage(void)
{
	fputs("usage: nowait-serve --root DIR [options]\n"
	      "  --mode M            pool, adaptive (default), io_uring, sendfile (plain HTTP only)\n"
	      "  --bind ADDR         IPv4 or IPv6 address to listen on (default 127.0.0.1)\n"
	      "  --port N            TCP port, 0 for any free one (default 8080)\n"
	      "  --cert F --key F    serve HTTPS with this PEM certificate chain and key\n"
	      "  --log FILE          one line per request: service time, cached, inline or queued\n"
	      "  --access-log FILE   append one line per request in the common log format\n"
	      "  --probe-root DIR    the log's cached column: probe the same path below DIR\n"
	      "                      (overlayfs: its lower layer; an overlay file shows no pages)\n"
	      "  --threads N         libnowait pool threads (default 4), per worker\n"
	      "  --workers N         event loop threads, each with its own listening socket\n"
	      "                      (SO_REUSEPORT), pool or ring, and limits (default 1)\n"
	      "  --chunk BYTES       bytes per file read (default 65536)\n"
	      "  --max-conns N       connection cap (default 1024)\n"
	      "  --idle-timeout S    close connections without progress for S seconds (default 30)\n"
	      "  --header-timeout S  the whole request header (and TLS handshake) within S\n"
	      "                      seconds of its first byte, or the connection is closed (10)\n"
	      "  --max-per-addr N    connections from one client address at once (default 256)\n",
	      stderr);
	exit(2);
}

static unsigned parse_unsigned(const char *s, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (!*s || *end || v < lo || v > hi)
		usage();
	return (unsigned)v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "root", required_argument, NULL, 'r' },
		{ "mode", required_argument, NULL, 'm' },
		{ "bind", required_argument, NULL, 'b' },
		{ "port", required_argument, NULL, 'p' },
		{ "cert", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{ "log", required_argument, NULL, 'l' },
		{ "probe-root", required_argument, NULL, 'P' },
		{ "threads", required_argument, NULL, 't' },
		{ "chunk", required_argument, NULL, 'C' },
		{ "max-conns", required_argument, NULL, 'M' },
		{ "idle-timeout", required_argument, NULL, 'i' },
		{ "header-timeout", required_argument, NULL, 'H' },
		{ "max-per-addr", required_argument, NULL, 'A' },
		{ "workers", required_argument, NULL, 'W' },
		{ "access-log", required_argument, NULL, 'a' },
		{ 0 }
	};
	struct server s = {
		.cfg = { .bind = "127.0.0.1", .mode = MODE_ADAPTIVE, .port = 8080, .max_conns = 1024,
			 .idle_timeout_s = 30, .header_timeout_s = 10, .max_per_addr = 256, .workers = 1,
			 .threads = 4, .chunk = 65536 },
	};
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'r': s.cfg.root = optarg; break;
		case 'b': s.cfg.bind = optarg; break;
		case 'p': s.cfg.port = parse_unsigned(optarg, 0, 65535); break;
		case 'c': s.cfg.cert = optarg; break;
		case 'k': s.cfg.key = optarg; break;
		case 'l': s.cfg.log = optarg; break;
		case 'P': s.cfg.probe_root = optarg; break;
		case 't': s.cfg.threads = parse_unsigned(optarg, 1, NOWAIT_MAX_THREADS); break;
		case 'C': s.cfg.chunk = parse_unsigned(optarg, 4096, 1u << 24); break;
		case 'M': s.cfg.max_conns = parse_unsigned(optarg, 1, 1u << 20); break;
		case 'i': s.cfg.idle_timeout_s = parse_unsigned(optarg, 1, 86400); break;
		case 'H': s.cfg.header_timeout_s = parse_unsigned(optarg, 1, 86400); break;
		case 'A': s.cfg.max_per_addr = parse_unsigned(optarg, 1, 1u << 20); break;
		case 'W': s.cfg.workers = parse_unsigned(optarg, 1, 256); break;
		case 'a': s.cfg.access_log = optarg; break;
		case 'm': {
			unsigned m = 0;

			while (m < 4 && strcmp(optarg, mode_names[m]))
				m++;
			if (m == 4)
				usage();
			s.cfg.mode = (enum mode)m;
			break;
		}
		default:
			usage();
		}
	}
	if (!s.cfg.root || optind != argc || !s.cfg.cert != !s.cfg.key ||
	    (s.cfg.cert && s.cfg.mode == MODE_SENDFILE))
		usage();
	return run_workers(&s.cfg);
}
