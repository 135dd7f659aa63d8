/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fatal error of the guest's tools: "PROGRAM: what: error", with
 * errno's text as it was when die() was called (printing may change it),
 * and none when errno is 0, for an error that is not a failed call.
 */
#ifndef NOWAIT_DIE_H
#define NOWAIT_DIE_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline _Noreturn void die(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	fprintf(stderr, "%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
	exit(1);
}

#endif
