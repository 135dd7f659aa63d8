// SPDX-License-Identifier: MIT
/*
 * The public header compiles without a warning as C99, C11 and C++11, with
 * -pedantic -Wall -Wextra -Werror; the runtime version is the header's and
 * the build's (NW_VERSION of mk/libnowait.mk).
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* The exit status of compiling a file that includes nowait.h. */
static int compile(const char *cc, const char *lang, const char *std)
{
	char cmd[8192];
	int rc;

	snprintf(cmd, sizeof(cmd),
		 "printf '#include <nowait.h>\\nint x;\\n' | %s -x %s -std=%s -pedantic -Wall -Wextra "
		 "-Werror -D_FILE_OFFSET_BITS=64 -I%s -fsyntax-only - 2>&1", cc, lang, std, T_INCLUDE);
	rc = system(cmd);
	CHECK(rc != -1 && WIFEXITED(rc));
	if (WEXITSTATUS(rc))
		printf("# %s -x %s -std=%s: exit %d\n", cc, lang, std, WEXITSTATUS(rc));
	return WEXITSTATUS(rc);
}

int main(void)
{
	char want[32];

	t_start(60);
	CHECK(nowait_version() == NOWAIT_VERSION);
	CHECK(NOWAIT_VERSION == 10200);
	snprintf(want, sizeof(want), "%d.%d.%d", NOWAIT_VERSION_MAJOR, NOWAIT_VERSION_MINOR,
		 NOWAIT_VERSION_PATCH);
	CHECK(!strcmp(want, T_VERSION));
	CHECK(compile(T_CC, "c", "c99") == 0);
	CHECK(compile(T_CC, "c", "c11") == 0);
	CHECK(compile(T_CXX, "c++", "c++11") == 0);
	return 0;
}
