// SPDX-License-Identifier: MIT
#define _GNU_SOURCE	/* timegm, strptime */
#include "http.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 5.6.2 tchar. */
static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool token_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && !strncasecmp(s, word, n);
}

static int hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decodes the origin-form target into a path relative to the root. The
 * %-decoding comes first, so "%2e%2e" and "%2f" are judged as the file
 * system will see them. Segments "" and "." are dropped; ".." is refused
 * outright rather than resolved, and a decoded NUL could cut the path
 * short in open(2), so it is a bad request.
 */
static int decode_target(const char *t, size_t n, char *out)
{
	char decoded[HTTP_PATH_MAX + 1];
	size_t len = 0, o = 0;

	if (n == 0 || t[0] != '/')
		return 400;	/* absolute-form and asterisk-form are not for us */
	for (size_t i = 0; i < n && t[i] != '?' && t[i] != '#'; i++) {
		unsigned char c = (unsigned char)t[i];

		if (c == '%') {
			int hi = i + 2 < n ? hex_value((unsigned char)t[i + 1]) : -1;
			int lo = hi >= 0 ? hex_value((unsigned char)t[i + 2]) : -1;

			if (lo < 0)
				return 400;
			c = (unsigned char)(hi * 16 + lo);
			i += 2;
		}
		if (c == '\0')
			return 400;
		if (len == HTTP_PATH_MAX)
			return 414;
		decoded[len++] = (char)c;
	}
	for (size_t s = 0; s < len;) {
		size_t e = s;

		while (e < len && decoded[e] != '/')
			e++;
		if (e - s == 2 && decoded[s] == '.' && decoded[s + 1] == '.')
			return 403;
		if (e > s && !(e - s == 1 && decoded[s] == '.')) {
			if (o)
				out[o++] = '/';
			memcpy(out + o, decoded + s, e - s);
			o += e - s;
		}
		s = e + 1;
	}
	if (o == 0)
		out[o++] = '.';
	out[o] = '\0';
	return 200;
}

/* A decimal without sign or spaces that fits 64 bits. */
static bool parse_u64(const char *s, size_t n, uint64_t *v)
{
	*v = 0;
	if (n == 0 || n > 19)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (uint64_t)(s[i] - '0');
	}
	return true;
}

/* A single byte range; anything else (other units, several ranges, bad
 * syntax) leaves RANGE_NONE and the whole file is sent, as RFC 9110 allows. */
static void parse_range(const char *v, size_t n, struct http_request *req)
{
	const char *dash;

	req->range = RANGE_NONE;
	if (n < 6 || strncasecmp(v, "bytes=", 6) || memchr(v, ',', n))
		return;
	v += 6;
	n -= 6;
	dash = memchr(v, '-', n);
	if (!dash)
		return;
	size_t before = (size_t)(dash - v), after = n - before - 1;

	if (before == 0) {
		if (parse_u64(dash + 1, after, &req->range_a))
			req->range = RANGE_SUFFIX;
	} else if (parse_u64(v, before, &req->range_a)) {
		if (after == 0)
			req->range = RANGE_FROM;
		else if (parse_u64(dash + 1, after, &req->range_b) && req->range_b >= req->range_a)
			req->range = RANGE_FROM_TO;
	}
}

/* Whether the comma-separated list of tokens in a Connection header holds word. */
static bool list_has(const char *v, size_t n, const char *word)
{
	for (size_t s = 0; s < n;) {
		size_t e = s;

		while (e < n && v[e] != ',')
			e++;
		size_t a = s, b = e;

		while (a < b && (v[a] == ' ' || v[a] == '\t'))
			a++;
		while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
			b--;
		if (token_is(v + a, b - a, word))
			return true;
		s = e + 1;
	}
	return false;
}

/* An IMF-fixdate (the only form we accept; others are ignored, RFC 9110 13.1.3). */
static bool parse_date(const char *v, size_t n, time_t *t)
{
	char s[HTTP_DATE_LEN];
	struct tm tm = { 0 };
	const char *end;

	if (n != HTTP_DATE_LEN - 1)
		return false;
	memcpy(s, v, n);
	s[n] = 0;
	end = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (!end || *end)
		return false;
	*t = timegm(&tm);
	return *t != (time_t)-1;
}

void http_date(time_t t, char *out)
{
	static const char days[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	struct tm tm;
	unsigned year;

	gmtime_r(&t, &tm);
	/* The bounds keep every field its width: a date before 1970 is 1970. */
	year = tm.tm_year < 70 ? 1970u : tm.tm_year > 8099 ? 9999u : (unsigned)tm.tm_year + 1900;
	snprintf(out, HTTP_DATE_LEN, "%s, %02u %s %04u %02u:%02u:%02u GMT",
		 days[(unsigned)tm.tm_wday % 7], (unsigned)tm.tm_mday % 100,
		 months[(unsigned)tm.tm_mon % 12], year, (unsigned)tm.tm_hour % 100,
		 (unsigned)tm.tm_min % 100, (unsigned)tm.tm_sec % 100);
}

bool http_etag_matches(const char *inm, const char *etag)
{
	size_t want;

	if (!strncmp(etag, "W/", 2))
		etag += 2;
	want = strlen(etag);
	while (*inm) {
		size_t n;

		while (*inm == ' ' || *inm == '\t' || *inm == ',')
			inm++;
		if (*inm == '*')
			return true;
		if (!strncmp(inm, "W/", 2))
			inm += 2;
		n = strcspn(inm, ",");
		while (n && (inm[n - 1] == ' ' || inm[n - 1] == '\t'))
			n--;
		if (n == want && !memcmp(inm, etag, n))
			return true;
		inm += strcspn(inm, ",");
	}
	return false;
}

/* Where the header block ends: after the first empty line (CRLF or LF). */
static bool find_header_end(const char *buf, size_t len, size_t *end)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n') {
			*end = i + 2;
			return true;
		}
		if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n') {
			*end = i + 3;
			return true;
		}
	}
	return false;
}

bool http_header_ready(const char *buf, size_t len, size_t cap, size_t *from)
{
	size_t i = *from > 2 ? *from - 2 : 0;

	*from = len;
	if (len >= cap)
		return true;
	for (; i + 1 < len; i++)
		if (buf[i] == '\n' && (buf[i + 1] == '\n' ||
		    (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')))
			return true;
	return false;
}

/* The next line of [*p, end) without its CRLF or LF; false at the end. */
static bool next_line(const char **p, const char *end, const char **line, size_t *n)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));

	if (!nl)
		return false;
	*line = *p;
	*n = (size_t)(nl - *p);
	if (*n && (*p)[*n - 1] == '\r')
		(*n)--;
	*p = nl + 1;
	return true;
}

static int parse_request_line(const char *l, size_t n, struct http_request *req, int *minor)
{
	size_t m = 0, t, v;

	while (m < n && is_tchar((unsigned char)l[m]))
		m++;
	if (m == 0 || m == n || l[m] != ' ')
		return 400;
	for (t = m + 1; t < n && l[t] != ' '; t++)
		if ((unsigned char)l[t] <= ' ' || l[t] == 0x7f)
			return 400;
	if (t == n || t == m + 1)
		return 400;
	v = t + 1;
	if (n - v != 8 || memcmp(l + v, "HTTP/", 5) || l[v + 6] != '.' ||
	    l[v + 5] < '0' || l[v + 5] > '9' || l[v + 7] < '0' || l[v + 7] > '9')
		return 400;
	if (l[v + 5] != '1')
		return 505;
	*minor = l[v + 7] - '0';

	if (!strncmp(l, "GET", m) && m == 3)
		req->method = HTTP_GET;
	else if (!strncmp(l, "HEAD", m) && m == 4)
		req->method = HTTP_HEAD;
	else {
		static const char *const known[] = { "POST", "PUT", "DELETE", "OPTIONS",
						     "PATCH", "TRACE", "CONNECT" };

		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (strlen(known[i]) == m && !strncmp(l, known[i], m))
				return 405;
		return 501;
	}
	return decode_target(l + m + 1, t - m - 1, req->path);
}

int http_parse(const char *buf, size_t len, size_t cap, struct http_request *req,
	       size_t *consumed)
{
	const char *p = buf, *end, *line;
	size_t n, header_len;
	bool host = false, close = false, keep_alive = false;
	int minor = 1, status;

	/* RFC 9112 2.2: empty lines before a request line are ignored. */
	while (p < buf + len && (*p == '\r' || *p == '\n'))
		p++;
	if (!find_header_end(p, len - (size_t)(p - buf), &header_len))
		return len >= cap ? 431 : 0;
	end = p + header_len;
	*consumed = (size_t)(end - buf);

	if (!next_line(&p, end, &line, &n))
		return 400;	/* not reached: the header ends with a newline */
	status = parse_request_line(line, n, req, &minor);
	if (status != 200)
		return status;
	req->minor = (unsigned char)minor;
	req->range = RANGE_NONE;
	req->if_none_match[0] = 0;
	req->has_ims = false;
	while (next_line(&p, end, &line, &n) && n) {
		const char *colon = memchr(line, ':', n);
		size_t name = colon ? (size_t)(colon - line) : 0;

		if (name == 0)
			return 400;	/* also obsolete line folding, which starts with a space */
		for (size_t i = 0; i < name; i++)
			if (!is_tchar((unsigned char)line[i]))
				return 400;
		const char *v = colon + 1;
		size_t vn = n - name - 1;

		while (vn && (*v == ' ' || *v == '\t'))
			v++, vn--;
		while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
			vn--;
		for (size_t i = 0; i < vn; i++)
			if ((unsigned char)v[i] < ' ' && v[i] != '\t')
				return 400;
		if (token_is(line, name, "Host")) {
			if (host)
				return 400;
			host = true;
		} else if (token_is(line, name, "Connection")) {
			close |= list_has(v, vn, "close");
			keep_alive |= list_has(v, vn, "keep-alive");
		} else if (token_is(line, name, "Range")) {
			parse_range(v, vn, req);
		} else if (token_is(line, name, "If-None-Match")) {
			/* Too long: kept as nothing, so it never matches. */
			size_t keep = vn <= HTTP_INM_MAX ? vn : 0;

			memcpy(req->if_none_match, v, keep);
			req->if_none_match[keep] = 0;
		} else if (token_is(line, name, "If-Modified-Since")) {
			req->has_ims = parse_date(v, vn, &req->ims);
		} else if (token_is(line, name, "Transfer-Encoding") ||
			   (token_is(line, name, "Content-Length") && !token_is(v, vn, "0"))) {
			return 400;	/* a body we would have to read or skip: not for GET */
		}
	}
	if (minor >= 1 && !host)
		return 400;	/* RFC 9112 3.2 */
	req->keep_alive = minor >= 1 ? !close : keep_alive && !close;
	return 200;
}

int http_resolve_range(const struct http_request *req, uint64_t size, uint64_t *first,
		       uint64_t *last)
{
	switch (req->range) {
	case RANGE_NONE:
		break;
	case RANGE_FROM:
	case RANGE_FROM_TO:
		if (req->range_a >= size)
			return 416;
		*first = req->range_a;
		*last = req->range == RANGE_FROM || req->range_b >= size ? size - 1 : req->range_b;
		return 206;
	case RANGE_SUFFIX:
		if (req->range_a == 0 || size == 0)
			return 416;
		*first = req->range_a < size ? size - req->range_a : 0;
		*last = size - 1;
		return 206;
	}
	*first = 0;
	*last = size ? size - 1 : 0;
	return 200;
}

const char *http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 206: return "Partial Content";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 414: return "URI Too Long";
	case 416: return "Range Not Satisfiable";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	}
	return "Unknown";
}
