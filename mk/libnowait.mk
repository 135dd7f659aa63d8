# libnowait: include from the top-level Makefile, or run it alone with
# `make -f mk/libnowait.mk [target]` (default: lib).
#   lib          static + shared library and the example (build/lib-plain/)
#   lib-check    build and run every test in the plain, asan, ubsan, tsan and
#                nouring (no liburing) variants (build/lib-<variant>/);
#                lib-check-<variant> for one.
#                CI: make lib-check CI_CFLAGS=-Werror
#   lib-install  header, libraries, nowait.pc, man pages, the example
#                (PREFIX, LIBDIR, INCLUDEDIR, MANDIR, DOCDIR, DESTDIR)
#   lib-uninstall  what lib-install installed, with the same variables
#   lib-clean
# `install`, `uninstall` and `clean` gain the lib- targets as prerequisites.
# The user's CPPFLAGS, CFLAGS and LDFLAGS (a distribution's hardening flags)
# come after the library's own, so that they win.

# Targets below must not become the includer's default goal.
nw_default_goal := $(.DEFAULT_GOAL)

NW_TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
NW_BUILD := $(NW_TOP)/build
NW_VERSION := 1.2.0
NW_SOMAJOR := 1
NW_VARIANTS := plain asan ubsan tsan nouring
NW_TESTS := $(sort $(basename $(notdir $(filter-out %/helpers.c,$(wildcard $(NW_TOP)/test/*.c)))))
NW_EXAMPLES := $(basename $(notdir $(wildcard $(NW_TOP)/examples/*.c)))

# CI_CFLAGS: what CI adds, such as -Werror; never part of what users build with.
CI_CFLAGS ?=
NW_CFLAGS := -std=c11 -Wall -Wextra -O2 -g -fPIC -pthread \
	-D_FILE_OFFSET_BITS=64 -I$(NW_TOP)/include $(CI_CFLAGS)
# liburing (Debian: liburing-dev) for the io_uring backend, if pkg-config
# finds it: NW_URING=no builds without (the threads backend only), as the
# nouring variant of lib-check always does.
NW_URING ?= $(shell pkg-config --exists liburing 2>/dev/null && echo yes || echo no)
ifeq ($(NW_URING),yes)
NW_LIBS := -luring
NW_PC_REQUIRES := Requires.private: liburing
else
NW_LIBS :=
NW_PC_REQUIRES :=
NW_CFLAGS += -DNOWAIT_NO_URING -DT_NO_URING
endif
NW_TEST_CFLAGS := -D_GNU_SOURCE -I$(NW_TOP)/test -DT_VERSION='"$(NW_VERSION)"' \
	-DT_CC='"$(CC)"' -DT_CXX='"$(CXX)"' -DT_INCLUDE='"$(NW_TOP)/include"'
NW_SAN_plain :=
NW_SAN_asan := -fsanitize=address -fno-omit-frame-pointer
NW_SAN_ubsan := -fsanitize=undefined -fno-sanitize-recover=all
NW_SAN_tsan := -fsanitize=thread
NW_SAN_nouring := -DNOWAIT_NO_URING -DT_NO_URING

PREFIX ?= /usr/local
# Debian's multiarch directory (lib/x86_64-linux-gnu) where the compiler knows one.
NW_MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
LIBDIR ?= $(PREFIX)/lib$(if $(NW_MULTIARCH),/$(NW_MULTIARCH))
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/libnowait

# $(1): variant
define nw_variant
$(NW_BUILD)/lib-$(1)/%.o: $(NW_TOP)/src/%.c $(NW_TOP)/include/nowait.h
	@mkdir -p $$(@D)
	$$(CC) $$(NW_CFLAGS) $$(NW_SAN_$(1)) $$(CPPFLAGS) $$(CFLAGS) -c $$< -o $$@

$(NW_BUILD)/lib-$(1)/test/helpers.o: $(NW_TOP)/test/helpers.c $(NW_TOP)/test/helpers.h $(NW_TOP)/include/nowait.h
	@mkdir -p $$(@D)
	$$(CC) $$(NW_CFLAGS) $$(NW_TEST_CFLAGS) $$(NW_SAN_$(1)) $$(CPPFLAGS) $$(CFLAGS) -c $$< -o $$@

$(NW_BUILD)/lib-$(1)/libnowait.a: $(NW_BUILD)/lib-$(1)/nowait.o
	rm -f $$@
	$$(AR) rcs $$@ $$^

$(NW_BUILD)/lib-$(1)/test/%: $(NW_TOP)/test/%.c $(NW_BUILD)/lib-$(1)/test/helpers.o $(NW_BUILD)/lib-$(1)/libnowait.a
	$$(CC) $$(NW_CFLAGS) $$(NW_TEST_CFLAGS) $$(NW_SAN_$(1)) $$(CPPFLAGS) $$(CFLAGS) \
		$$(LDFLAGS) $$^ $$(NW_LIBS) -o $$@

$(NW_BUILD)/lib-$(1)/examples/%: $(NW_TOP)/examples/%.c $(NW_BUILD)/lib-$(1)/libnowait.a
	@mkdir -p $$(@D)
	$$(CC) $$(NW_CFLAGS) $$(NW_SAN_$(1)) $$(CPPFLAGS) $$(CFLAGS) $$(LDFLAGS) $$^ $$(NW_LIBS) -o $$@

.PHONY: lib-check-$(1)
lib-check-$(1): $(addprefix $(NW_BUILD)/lib-$(1)/test/,$(NW_TESTS))
	$(NW_TOP)/test/runtests.sh $(NW_BUILD)/lib-$(1)
endef
$(foreach v,$(NW_VARIANTS),$(eval $(call nw_variant,$(v))))

NW_SO := $(NW_BUILD)/lib-plain/libnowait.so.$(NW_VERSION)

$(NW_SO): $(NW_BUILD)/lib-plain/nowait.o $(NW_TOP)/src/libnowait.map
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -pthread -Wl,-soname,libnowait.so.$(NW_SOMAJOR) \
		-Wl,--version-script=$(NW_TOP)/src/libnowait.map $< $(NW_LIBS) -o $@
	ln -sf $(@F) $(@D)/libnowait.so.$(NW_SOMAJOR)
	ln -sf $(@F) $(@D)/libnowait.so

.PHONY: lib lib-check lib-install lib-uninstall lib-clean install uninstall clean
lib: $(NW_BUILD)/lib-plain/libnowait.a $(NW_SO) \
	$(addprefix $(NW_BUILD)/lib-plain/examples/,$(NW_EXAMPLES))

lib-check: lib $(foreach v,$(NW_VARIANTS),$(addprefix $(NW_BUILD)/lib-$(v)/test/,$(NW_TESTS)))
	$(NW_TOP)/test/runtests.sh $(addprefix $(NW_BUILD)/lib-,$(NW_VARIANTS))

lib-install: lib
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(DOCDIR)/examples
	install -m 644 $(NW_TOP)/include/nowait.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(NW_BUILD)/lib-plain/libnowait.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(NW_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(NW_SO)) $(DESTDIR)$(LIBDIR)/libnowait.so.$(NW_SOMAJOR)
	ln -sf $(notdir $(NW_SO)) $(DESTDIR)$(LIBDIR)/libnowait.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(NW_VERSION)|' \
		-e 's|@REQUIRES_PRIVATE@|$(NW_PC_REQUIRES)|' \
		$(NW_TOP)/src/nowait.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/nowait.pc
	install -m 644 $(NW_TOP)/man/*.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 644 $(NW_TOP)/man/*.7 $(DESTDIR)$(MANDIR)/man7/
	install -m 644 $(NW_TOP)/examples/*.c $(DESTDIR)$(DOCDIR)/examples/

lib-uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/nowait.h $(DESTDIR)$(LIBDIR)/libnowait.a \
		$(DESTDIR)$(LIBDIR)/libnowait.so $(DESTDIR)$(LIBDIR)/libnowait.so.$(NW_SOMAJOR) \
		$(DESTDIR)$(LIBDIR)/$(notdir $(NW_SO)) $(DESTDIR)$(LIBDIR)/pkgconfig/nowait.pc \
		$(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(wildcard $(NW_TOP)/man/*.3))) \
		$(addprefix $(DESTDIR)$(MANDIR)/man7/,$(notdir $(wildcard $(NW_TOP)/man/*.7))) \
		$(addprefix $(DESTDIR)$(DOCDIR)/examples/,$(notdir $(wildcard $(NW_TOP)/examples/*.c)))
	rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null || true

lib-clean:
	rm -rf $(addprefix $(NW_BUILD)/lib-,$(NW_VARIANTS))

install: lib-install
uninstall: lib-uninstall
clean: lib-clean

ifeq ($(words $(MAKEFILE_LIST)),1)
.DEFAULT_GOAL := lib
else
.DEFAULT_GOAL := $(nw_default_goal)
endif
