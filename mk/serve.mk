# nowait-serve: the HTTP/HTTPS file server of serve/ (see serve/README.md).
#   serve         build/serve/nowait-serve (part of `make`)
#   serve-asan    build/serve-asan/nowait-serve, with ASan and UBSan
#   serve-check   curl correctness and path-safety tests, every mode (TAP)
#   serve-bench   wrk and an open-loop pacer against every mode and against
#                 nginx (Debian's, run by the script) on this host (root:
#                 cgroups), writes build/serve-bench/{bench.txt,bench.json,bench.png}
#   serve-bench-guest  the same in the Debian 12 guest of make regress, stock
#                 kernel then patched, on tmpfs, ext4 and overlayfs (root,
#                 QEMU TCG, about 12 min a kernel), writes
#                 build/serve-bench-guest/serve-bench-guest.{md,json,png}
#   serve-clean
# SERVE_CHECK_BIN picks the binary serve-check tests (e.g. the ASan one);
# SERVE_BENCH_ARGS adds options to serve/bench.sh (see its header);
# SERVE_BENCH_GUEST_ARGS to harness/serve-bench-guest.sh (see its header).

sv_default_goal := $(.DEFAULT_GOAL)

SV_TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
SV_SRC := $(addprefix $(SV_TOP)/serve/,nowait-serve.c http.c)
SV_HDR := $(SV_TOP)/serve/http.h $(SV_TOP)/include/nowait.h
SV_LIB := $(SV_TOP)/build/lib-plain/libnowait.a
# Where the binary goes; debian/rules builds into debian/build and links the
# shared library (SV_OUT=... SV_LIB=.../libnowait.so).
SV_OUT := $(SV_TOP)/build/serve
# CI_CFLAGS: what CI adds (-Werror), as in mk/libnowait.mk.
CI_CFLAGS ?=
SV_CFLAGS := -std=c11 -Wall -Wextra -O2 -g -pthread -D_FILE_OFFSET_BITS=64 \
	-I$(SV_TOP)/include $(CI_CFLAGS)
SV_LIBS := -lssl -lcrypto -luring -lpthread
SV_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SERVE_CHECK_BIN ?= $(SV_OUT)/nowait-serve
SERVE_BENCH_ARGS ?=
SERVE_BENCH_GUEST_ARGS ?=

$(SV_OUT)/nowait-serve: $(SV_SRC) $(SV_HDR) $(SV_LIB)
	@mkdir -p $(@D)
	$(CC) $(SV_CFLAGS) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(SV_SRC) $(SV_LIB) $(SV_LIBS) -o $@

# The library's ASan build, so that its side of each read is checked too.
$(SV_TOP)/build/serve-asan/nowait-serve: $(SV_SRC) $(SV_HDR) $(SV_TOP)/src/nowait.c
	@mkdir -p $(@D)
	$(CC) $(SV_CFLAGS) $(SV_SAN) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(SV_SRC) \
		$(SV_TOP)/src/nowait.c $(SV_LIBS) -o $@

.PHONY: serve serve-asan serve-check serve-bench serve-bench-guest serve-clean
all: serve
serve: $(SV_OUT)/nowait-serve
serve-asan: $(SV_TOP)/build/serve-asan/nowait-serve

serve-check: serve
	$(SV_TOP)/serve/test.sh $(SERVE_CHECK_BIN)

serve-bench: serve
	$(SV_TOP)/serve/bench.sh $(SERVE_BENCH_ARGS)

serve-bench-guest: serve
	$(SV_TOP)/harness/serve-bench-guest.sh $(SERVE_BENCH_GUEST_ARGS)

serve-clean:
	rm -rf $(SV_TOP)/build/serve $(SV_TOP)/build/serve-asan

clean: serve-clean

.DEFAULT_GOAL := $(sv_default_goal)
