// SPDX-License-Identifier: MIT
/*
 * The ABI guards: including nowait.h with a 32-bit off_t does not compile,
 * a reserved field of struct nowait_params that is set (by a program built
 * for a later version) is refused, and the reserved counters read as zero.
 * The 1.1 and 1.2 fields took reserved space: 1.0 sizes and offsets are unchanged.
 */
#include "helpers.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* The exit status of compiling a file that includes nowait.h for i386. */
static int compile_i386(const char *flags)
{
	char cmd[8192];
	int rc;

	snprintf(cmd, sizeof(cmd),
		 "printf '#include <nowait.h>\\nint x;\\n' | %s -m32 -std=c11 -Werror %s -I%s "
		 "-fsyntax-only -x c - >/dev/null 2>&1", T_CC, flags, T_INCLUDE);
	rc = system(cmd);
	CHECK(rc != -1 && WIFEXITED(rc));
	return WEXITSTATUS(rc);
}

int main(void)
{
	struct nowait_params p = { 0 };
	struct nowait_ctx *ctx = NULL;
	struct nowait_stats st;

	t_start(60);
	CHECK(offsetof(struct nowait_params, pool) == offsetof(struct nowait_params, reserved));
	/* 1.2's field after 1.1's, still inside the reserved space. */
	CHECK(offsetof(struct nowait_params, max_inflight) ==
	      offsetof(struct nowait_params, backend) + sizeof(unsigned));
	CHECK(sizeof(p) == offsetof(struct nowait_params, reserved) + 8 * sizeof(uint64_t));
	CHECK(offsetof(struct nowait_req, state) == offsetof(struct nowait_req, reserved));
	CHECK(sizeof(struct nowait_req) ==
	      offsetof(struct nowait_req, reserved) + 4 * sizeof(uint64_t));
	CHECK(sizeof(st) == 31 * sizeof(uint64_t));
	CHECK(offsetof(struct nowait_stats, pool_queued) ==
	      offsetof(struct nowait_stats, bytes_written_pool) + sizeof(uint64_t));
	p.reserved[7] = 1;
	CHECK(nowait_create(&p, &ctx) == -EINVAL && !ctx);
	CHECK(nowait_create(NULL, &ctx) == 0);
	memset(&st, 0xff, sizeof(st));
	CHECK(nowait_stats(ctx, &st) == 0);
	for (size_t i = 0; i < sizeof(st.reserved) / sizeof(st.reserved[0]); i++)
		CHECK(st.reserved[i] == 0);
	nowait_destroy(ctx);

	if (compile_i386("-D_FILE_OFFSET_BITS=64") != 0)
		t_skip("%s -m32 cannot compile here (no 32-bit libc headers)", T_CC);
	CHECK(compile_i386("") != 0);
	CHECK(compile_i386("-D_FILE_OFFSET_BITS=32") != 0);
	return 0;
}
