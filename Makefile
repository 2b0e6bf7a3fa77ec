# carma build. Public targets: all demo test bench fuzz eval-estimator install uninstall clean.
# Every public target first runs `deps`, which installs missing Debian build packages
# when run as root (apt-get) and otherwise names them and stops.

DEB_PKGS := gcc make pkg-config libsqlite3-dev libjansson-dev libinih-dev \
            libmicrohttpd-dev libcmocka-dev libncurses-dev python3 curl tmux
PC_PKGS  := sqlite3 jansson inih libmicrohttpd ncursesw

CC      ?= cc
MODE    ?= release
ifeq ($(MODE),asan)
BUILD   ?= build/asan
OPTFLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else
BUILD   ?= build/release
OPTFLAGS = -O2 -g
endif

WARN     = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wvla -Wformat=2 -Wno-format-nonliteral
CPPFLAGS = -D_GNU_SOURCE -Isrc
CFLAGS   = -std=c17 $(WARN) $(OPTFLAGS) $(EXTRA_CFLAGS)
PC_CFLAGS = $(shell pkg-config --cflags $(PC_PKGS) 2>/dev/null)
PC_LIBS   = $(shell pkg-config --libs $(PC_PKGS) 2>/dev/null)
LDLIBS    = -Wl,--as-needed $(PC_LIBS) -ldl -lm -lpthread
TEST_LIBS = $(shell pkg-config --libs cmocka 2>/dev/null)

# Library layers (DESIGN.md §2). Every .c in these folders goes into libcarma.a.
LIB_DIRS   = src/util src/core src/estimate src/gpu src/sim src/report src/proto
LIB_SRC    = $(wildcard $(addsuffix /*.c,$(LIB_DIRS)))
DAEMON_SRC = $(filter-out src/daemon/main.c src/daemon/shepherd_main.c,$(wildcard src/daemon/*.c))
CLI_SRC    = $(wildcard src/cli/*.c)
TEST_SRC   = $(wildcard tests/unit/test_*.c)
FUZZ_SRC   = $(wildcard tests/fuzz/fuzz_*.c)
BENCH_SRC  = $(wildcard bench/bench_*.c)
FAKE_DIRS  = $(wildcard tests/fake/*)

OBJ = $(BUILD)/obj
LIB_OBJ    = $(LIB_SRC:%.c=$(OBJ)/%.o)
DAEMON_OBJ = $(DAEMON_SRC:%.c=$(OBJ)/%.o)
CLI_OBJ    = $(CLI_SRC:%.c=$(OBJ)/%.o)

# The version string (tools/version.sh) in a generated object of its own, rewritten only
# when the string changes, and linked into carma and carmad only: a commit relinks those
# two and recompiles nothing else.
VERSION_C = $(OBJ)/gen/version.c
VERSION_O = $(OBJ)/gen/version.o

LIBCARMA  = $(BUILD)/libcarma.a
LIBCARMAD = $(BUILD)/libcarmad.a
BIN       = $(BUILD)/bin
TESTS     = $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZERS   = $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)
BENCHES   = $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
FAKES     = $(foreach d,$(FAKE_DIRS),$(BUILD)/fake/$(notdir $(d))/lib$(notdir $(d)).so)

.PHONY: all deps build demo test test-all bench fuzz eval-estimator install uninstall clean format FORCE

all: deps
	@$(MAKE) --no-print-directory build

deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else echo "carma: missing Debian packages:$$missing (install them, or run make as root)" >&2; exit 1; fi; \
	fi

build: $(BIN)/carma $(BIN)/carmad $(BIN)/carma-shepherd $(FAKES)

$(OBJ)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PC_CFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# Run on every make; the file is replaced only when the version it holds changed.
$(VERSION_C): FORCE
	@mkdir -p $(@D)
	@v=$$(sh tools/version.sh .) || exit 1; \
	printf '#include "util/version.h"\nconst char carma_version[] = "%s";\n' "$$v" >$@.tmp && \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

$(VERSION_O): $(VERSION_C) src/util/version.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LIBCARMA): $(LIB_OBJ)
	@mkdir -p $(@D)
	@rm -f $@
	ar rcs $@ $^

$(LIBCARMAD): $(DAEMON_OBJ) $(OBJ)/src/daemon/.keep.o
	@mkdir -p $(@D)
	@rm -f $@
	ar rcs $@ $^

# An empty object keeps libcarmad.a valid while src/daemon holds only main.c.
$(OBJ)/src/daemon/.keep.o:
	@mkdir -p $(@D)
	echo 'extern int carmad_keep_; int carmad_keep_;' | $(CC) -x c -c - -o $@

$(BIN)/carma: $(CLI_OBJ) $(VERSION_O) $(LIBCARMAD) $(LIBCARMA)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) $(VERSION_O) $(LIBCARMAD) $(LIBCARMA) $(LDLIBS)

$(BIN)/carmad: $(OBJ)/src/daemon/main.o $(VERSION_O) $(LIBCARMAD) $(LIBCARMA)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(VERSION_O) $(LIBCARMAD) $(LIBCARMA) $(LDLIBS)

# The job shepherd carmad spawns: the C library only (a small, quick exec).
$(BIN)/carma-shepherd: $(OBJ)/src/daemon/shepherd_main.o $(LIBCARMAD) $(LIBCARMA)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(LIBCARMAD) $(LIBCARMA) -Wl,--as-needed

# Fake vendor libraries for tests: tests/fake/NAME/*.c -> libNAME.so (+ the soname the
# real library has, e.g. libnvidia-ml.so.1), built without sanitizers, loaded by dlopen.
# Rebuilt when any fake source or the vendor API header it shares with src/gpu changes
# (a fake may #include another's source to build a variant, e.g. nvidia-ml-old).
$(BUILD)/fake/%.so: $(wildcard tests/fake/*/*.c tests/fake/*/*.h src/gpu/*_api.h)
	@mkdir -p $(@D)
	$(CC) -std=c17 -D_GNU_SOURCE -Isrc -O1 -g -Wall -Wextra -Werror -fPIC -shared \
	  -o $@ $(wildcard tests/fake/$(patsubst lib%,%,$(basename $(notdir $@)))/*.c)
	@d=$(patsubst lib%,%,$(basename $(notdir $@))); [ ! -f tests/fake/$$d/SONAME ] || \
	  cp $@ $(@D)/$$(cat tests/fake/$$d/SONAME)

$(BUILD)/tests/%: tests/unit/%.c $(LIBCARMAD) $(LIBCARMA)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PC_CFLAGS) $(CFLAGS) -Itests -o $@ $< $(LIBCARMAD) $(LIBCARMA) $(TEST_LIBS) $(LDLIBS)

$(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/driver.c $(LIBCARMAD) $(LIBCARMA)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PC_CFLAGS) $(CFLAGS) -o $@ $< tests/fuzz/driver.c $(LIBCARMAD) $(LIBCARMA) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIBCARMAD) $(LIBCARMA)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PC_CFLAGS) $(CFLAGS) -o $@ $< $(LIBCARMAD) $(LIBCARMA) $(LDLIBS)

# The README's main command: the simulator on the bundled CARMA 90-task trace.
demo: all
	$(BIN)/carma sim --trace data/trace-mix90.csv --gpus 4xa100-40gb --sharing mps --policy all

# Unit tests (cmocka), end-to-end tests and fuzz corpora, first in a release build,
# then all again under AddressSanitizer + UndefinedBehaviorSanitizer. Builds on every
# CPU unless the caller chose -j; tests/run.sh runs the tests in parallel too.
test: deps
	@j=; case " $(MAKEFLAGS) " in *" -j"*) ;; *) j=-j$$(nproc 2>/dev/null || echo 1) ;; esac; \
	$(MAKE) --no-print-directory $$j MODE=release test-all && \
	$(MAKE) --no-print-directory $$j MODE=asan test-all

test-all: build $(TESTS) $(FUZZERS)
	@MODE=$(MODE) BUILD=$(BUILD) sh tests/run.sh

bench: deps
	@$(MAKE) --no-print-directory MODE=release build $(patsubst %,build/release/bench/%,$(notdir $(BENCH_SRC:.c=)))
	@sh bench/run.sh build/release

eval-estimator: all
	$(BIN)/carma eval-estimator --data data/estimator

# Installation: make install [PREFIX=/usr/local] [DESTDIR=staging folder]. carmad and the
# carma-shepherd it runs every job under go to SBINDIR, side by side (carmad looks for it
# beside itself); the workload catalog and CARMA's two traces to DATADIR, where `carma sim`
# finds the catalog from its own folder; the systemd unit to UNITDIR.
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
DATADIR ?= $(PREFIX)/share/carma
DOCDIR  ?= $(PREFIX)/share/doc/carma
UNITDIR ?= $(PREFIX)/lib/systemd/system
INSTALL_DATA = data/workloads.csv data/trace-mix90.csv data/trace-t1.csv data/README.md
INSTALL_DOCS = README.md LICENSE $(filter-out docs/CONTRIBUTING-helpers.md,$(wildcard docs/*.md))

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(DATADIR) \
	  $(DESTDIR)$(DOCDIR) $(DESTDIR)$(UNITDIR)
	install -m 0755 $(BIN)/carma $(DESTDIR)$(BINDIR)/carma
	install -m 0755 $(BIN)/carmad $(BIN)/carma-shepherd $(DESTDIR)$(SBINDIR)/
	install -m 0644 $(INSTALL_DATA) $(DESTDIR)$(DATADIR)/
	install -m 0644 $(INSTALL_DOCS) $(DESTDIR)$(DOCDIR)/
	sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' dist/systemd/carmad.service \
	  >$(DESTDIR)$(UNITDIR)/carmad.service.tmp
	chmod 0644 $(DESTDIR)$(UNITDIR)/carmad.service.tmp
	mv $(DESTDIR)$(UNITDIR)/carmad.service.tmp $(DESTDIR)$(UNITDIR)/carmad.service

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/carma $(DESTDIR)$(SBINDIR)/carmad \
	  $(DESTDIR)$(SBINDIR)/carma-shepherd $(DESTDIR)$(UNITDIR)/carmad.service \
	  $(addprefix $(DESTDIR)$(DATADIR)/,$(notdir $(INSTALL_DATA))) \
	  $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(INSTALL_DOCS)))
	-rmdir $(DESTDIR)$(DATADIR) $(DESTDIR)$(DOCDIR) 2>/dev/null

# libFuzzer builds (clang) for long fuzzing sessions: make fuzz FUZZ_SECONDS=60
FUZZ_SECONDS ?= 30
fuzz: deps
	@$(MAKE) --no-print-directory CC=clang MODE=asan BUILD=build/libfuzzer \
	  EXTRA_CFLAGS=-fsanitize=fuzzer-no-link build/libfuzzer/libcarma.a build/libfuzzer/libcarmad.a
	@sh tests/fuzz/libfuzzer.sh build/libfuzzer $(FUZZ_SECONDS)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
