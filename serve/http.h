/* SPDX-License-Identifier: MIT */
/*
 * The HTTP/1.1 request parsing of nowait-serve: pure functions over a
 * buffer, no I/O, so that every rule can be read in one place.
 */
#ifndef NOWAIT_SERVE_HTTP_H
#define NOWAIT_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The longest decoded path we accept; longer targets get 414. */
#define HTTP_PATH_MAX 1024
/* The longest If-None-Match we keep; a longer one is ignored (no 304). */
#define HTTP_INM_MAX 255
/* An IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT", and its NUL. */
#define HTTP_DATE_LEN 30

enum http_method { HTTP_GET, HTTP_HEAD };

enum range_kind {
	RANGE_NONE,	/* no Range header, or one we ignore (RFC 9110 14.2) */
	RANGE_FROM,	/* bytes=first- */
	RANGE_FROM_TO,	/* bytes=first-last */
	RANGE_SUFFIX,	/* bytes=-length */
};

struct http_request {
	enum http_method method;
	unsigned char minor;	/* HTTP/1.minor */
	bool keep_alive;
	enum range_kind range;
	uint64_t range_a, range_b;	/* first and last, or the suffix length in a */
	char path[HTTP_PATH_MAX + 1];	/* relative to the document root, never empty */
	char if_none_match[HTTP_INM_MAX + 1];	/* "" when absent */
	bool has_ims;			/* a valid If-Modified-Since, in ims */
	time_t ims;
};

/*
 * Parses one request at the start of buf. Returns 0 when the header is not
 * complete yet, 200 with *req and *consumed (the header's length) filled,
 * or the status code of the error: 400, 403 (a path that climbs out with
 * ".."), 405, 414, 431 (no end of header in len == cap bytes), 501, 505.
 * After an error the connection must be closed: the request's framing is
 * not trusted.
 */
int http_parse(const char *buf, size_t len, size_t cap, struct http_request *req,
	       size_t *consumed);

/*
 * Whether http_parse() may find a whole header in buf now: an empty line
 * is there, or len reached cap. Scans only from *from (minus the two bytes
 * a split line end needs) and moves *from to len, so that a header that
 * arrives a byte at a time costs linear time, not quadratic; start *from
 * at 0 for a new buffer. True can still mean incomplete (empty lines
 * before the request line): http_parse() has the last word.
 */
bool http_header_ready(const char *buf, size_t len, size_t cap, size_t *from);

/*
 * The byte range [*first, *last] of a file of size bytes that req asks
 * for: 200 for the whole file (no usable Range), 206 for a part, 416 when
 * the range cannot be satisfied.
 */
int http_resolve_range(const struct http_request *req, uint64_t size, uint64_t *first,
		       uint64_t *last);

const char *http_reason(int status);

/* t as an IMF-fixdate (RFC 9110 5.6.7) into out[HTTP_DATE_LEN]. */
void http_date(time_t t, char *out);

/*
 * Whether an If-None-Match value (a list of entity tags, or "*") matches
 * etag, by the weak comparison that RFC 9110 13.1.2 asks for GET and HEAD.
 */
bool http_etag_matches(const char *if_none_match, const char *etag);

#endif
