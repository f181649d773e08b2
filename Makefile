# Everything runs from a virtualenv this Makefile creates: a fresh machine
# needs only python3 (with venv and pip), gcc and git.
PYTHON ?= python3
HG ?= 7.2.4
VENV ?= .venv-hg$(HG)
BIN = $(VENV)/bin
# (renamed when the recipe installs more: venvs made before get it too)
STAMP = $(VENV)/.installed-xdist

.PHONY: all demo test test-parallel test-serial upstream-src test-upstream bench bench-cg bench-e2e bench-fuse bench-io bench-serve bench-mmap bench-durable stress clean

all: test

$(STAMP): pyproject.toml setup.py hgext3rd/fastio/writer/_writepool.c \
	  hgext3rd/fastio/apply/_streamscan.c hgext3rd/fastio/mmap/_populate.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "mercurial==$(HG)" pytest pytest-xdist cram
	$(BIN)/python -m pip install -q -e .
	touch $@

venv: $(STAMP)

# a sample repository applied stock and with fastio, side by side
demo: $(STAMP)
	$(BIN)/python bench/bench.py --demo

# the whole test suite: tests/unit/ and tests/cram/*.t, in two phases:
# TEST_JOBS pytest-xdist workers (many tests wait: sleeps, slow-close
# shims, servers), then the tests marked serial
# (timing-bound under load: tests/conftest.py SERIAL) one at a time; each
# phase ends with its own "N passed" line; TEST_JOBS=0: no workers
TEST_JOBS ?= 3
test: $(STAMP)
	rc=0; $(MAKE) --no-print-directory test-parallel || rc=1; \
	  $(MAKE) --no-print-directory test-serial || rc=1; exit $$rc

# whole files to one worker (module fixtures built once), started in
# tests/conftest.py's order (slowest first), not xdist's (most tests first)
test-parallel: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_JOBS) --dist loadfile \
	  --no-loadscope-reorder -m "not serial" tests

test-serial: $(STAMP)
	$(BIN)/python -m pytest -q -m serial tests

# Mercurial's own tests (tests/upstream-tests.txt) from the source of the
# release under test, with the extension on in every hg they run
# (tests/upstream/ holds our check that it is on: run first, same harness);
# their changegroups are small: the extension applies them all, as it
# applies large ones (devel.fastio.small-applies=false); the harness's
# output substitutions (common-pattern.py, kept as it came in .orig) get
# ours, which take the extension out of listings of enabled extensions
HG_SRC = build/hg-src-$(HG)
# tests run-tests.py runs at once
UPSTREAM_JOBS ?= 3
# seconds a test may take (run-tests.py's default: 360): CI runs these
# beside the suites, on a shared machine; test-clonebundles.t and
# test-strip.t took 393 s and 407 s there (21 s and 48 s of CPU) and were
# failed as timed out; .ci/run runs them niced (nice 5), so that a test
# started with the suites gets less CPU until they end: a guard against
# hangs only (the harness also scales its tests' own waits by it)
UPSTREAM_TIMEOUT ?= 2400
# base of the ports the harness gives its tests (its own default: 20059);
# two runs on one machine need different ones
UPSTREAM_PORT ?= 20059
ABS_BIN = $(CURDIR)/$(BIN)
EXT = $(CURDIR)/hgext3rd/fastio

upstream-src: $(HG_SRC)/tests/run-tests.py

$(HG_SRC)/tests/run-tests.py: | $(STAMP)
	mkdir -p build/sdist
	$(BIN)/python -m pip download -q --no-deps --no-binary :all: -d build/sdist "mercurial==$(HG)"
	rm -rf $(HG_SRC).tmp && mkdir -p $(HG_SRC).tmp
	tar -xzf build/sdist/mercurial-$(HG).tar.gz -C $(HG_SRC).tmp --strip-components=1
	rm -rf $(HG_SRC) && mv $(HG_SRC).tmp $(HG_SRC)

# helpers (get-with-headers.py, ...) run "python3" from PATH: the venv's
# run-tests.py passes the environment on to every hg: PYTHONUNBUFFERED makes
# stdout unbuffered, and tests that kill hg (test-transaction-rollback-on-
# revlog-split.t) then show lines that stay in stdout's buffer otherwise
test-upstream: $(STAMP) $(HG_SRC)/tests/run-tests.py
	cp tests/upstream/test-*.t $(HG_SRC)/tests/
	test -f $(HG_SRC)/tests/common-pattern.py.orig || \
	  cp $(HG_SRC)/tests/common-pattern.py $(HG_SRC)/tests/common-pattern.py.orig
	cat $(HG_SRC)/tests/common-pattern.py.orig tests/upstream/common-pattern-fastio.py \
	  > $(HG_SRC)/tests/common-pattern.py
	cd $(HG_SRC)/tests && env -u PYTHONUNBUFFERED PATH="$(ABS_BIN):$$PATH" \
	  "$(ABS_BIN)/python3" run-tests.py \
	  --with-hg="$(ABS_BIN)/hg" --extra-config-opt extensions.fastio=$(EXT) \
	  --extra-config-opt devel.fastio.small-applies=false \
	  -j$(UPSTREAM_JOBS) --port $(UPSTREAM_PORT) --timeout $(UPSTREAM_TIMEOUT) --time \
	  $$(cd $(CURDIR)/tests/upstream && ls test-*.t) \
	  $$(grep -v '^#' $(CURDIR)/tests/upstream-tests.txt)

# the full benchmark table (several minutes)
bench: $(STAMP)
	$(BIN)/python bench/bench.py

# changegroup paths as users take them (http and ssh clones, unbundle of
# bzip2, zstd and none bundles, pulls of the history's last 1000 changesets
# and of its last one), stock vs serial vs fastio: the 10k-file repository,
# the history-rich one of fixtures/makeproject.py (20k files, 30k changesets;
# built once into /dev/shm/hg-fastio-bench), its zstd unbundle on one core
# and a 100k-file unbundle
bench-cg: $(STAMP)
	$(BIN)/python bench/bench.py --plan 10k-paths,hist-paths,hist-1core,100k-cg

# the whole clone a user waits for (bench/e2e.py, issue 24): hg clone
# http:// from a stream v2 clone bundle on a second, static http server,
# checkout included, and hg update from null to tip, stock vs fastio,
# locally and under the net latency model (and the fuse model, the client's
# repository on the FUSE mount, at 10k files): 10k files (3 runs) and 100k
# files (1 run; stock under the model takes minutes); make bench runs all
# but update-100k
bench-e2e: $(STAMP)
	$(BIN)/python bench/bench.py --plan e2e,update,e2e-100k,update-100k

# the kernel's model of a slow filesystem alone (issue 41): the repository
# applied into on a FUSE passthrough filesystem with a latency per request
# (fixtures/fuselat.c; needs /dev/fuse, fuse3 and libfuse3-dev); make bench
# runs these rows too
bench-fuse: $(STAMP)
	$(BIN)/python bench/bench.py --plan 10k-fuse,10k-cg-fuse,100k-fuse

# system calls on bundle files per path, stock vs fastio (strace -f -y), and
# times under a latency per read and write call (bench/bench_io.py)
IO_FILES ?= 5000
IO_DELAY_US ?= 1000
IO_RUNS ?= 3
bench-io: $(STAMP)
	$(BIN)/python bench/bench_io.py --files $(IO_FILES) --delay $(IO_DELAY_US) --runs $(IO_RUNS)

# the serving side (bench/bench_serve.py): read calls on the served store
# while hg serve (http) and hg serve --stdio (ssh) generate stream and pull
# clones, stock vs fastio (strace -f -y); then SERVE_CLIENTS clients cloning
# at once from one hg serve, with the server's peak memory and descriptors
SERVE_CLIENTS ?= 8
bench-serve: $(STAMP)
	$(BIN)/python bench/bench_serve.py --clients $(SERVE_CLIENTS)

# mmap population policies side by side (bench/mmapbench.py): builds a
# 1M-changeset repository in MMAP_DIR once (about 10 min; kept), then times
# every workload under every policy, warm page cache, then cold, and shows
# each policy's system calls (strace)
MMAP_DIR ?= /tmp/fastio-mmap-bench
MMAP_RUNS ?= 21
bench-mmap: $(STAMP)
	$(BIN)/python fixtures/mmaprepo.py --dir $(MMAP_DIR)
	$(BIN)/python bench/mmapbench.py --dir $(MMAP_DIR) --runs $(MMAP_RUNS)
	$(BIN)/python bench/mmapbench.py --dir $(MMAP_DIR) --runs $(MMAP_RUNS) --cold \
	  --workloads log-tip,unbundle-1
	$(BIN)/python bench/mmapbench.py --dir $(MMAP_DIR) --strace

# randomized reliability runs (bench/stress.py): mutated bundles of every
# format (COUNT each), SIGKILL trials (KILLS per path), SIGINT and SIGTERM
# trials (INTERRUPTS per path, each), and STOCK_KILLS trials of each kind
# per path with stock Mercurial for comparison; about 15 min on 2 cores
SEED ?= 1
COUNT ?= 500
KILLS ?= 30
INTERRUPTS ?= 10
STOCK_KILLS ?= 5
JOBS ?= 2
# DURABLE=auto|syncfs|fsync: every fastio apply with fastio.durable=yes
DURABLE ?=
stress: $(STAMP)
	nice -n 10 $(BIN)/python bench/stress.py --seed $(SEED) --count $(COUNT) \
	  --kills $(KILLS) --interrupts $(INTERRUPTS) --stock-kills $(STOCK_KILLS) \
	  --jobs $(JOBS) \
	  $(if $(DURABLE),--durable $(DURABLE))

# what fastio.durable costs (bench/durablebench.py): DURABLE_FILES files on
# the disk of DURABLE_DIR, not durable, durable, durable by fsync per file
DURABLE_FILES ?= 10000
DURABLE_RUNS ?= 7
DURABLE_DIR ?= /tmp/fastio-durable-bench
bench-durable: $(STAMP)
	$(BIN)/python bench/durablebench.py --files $(DURABLE_FILES) \
	  --runs $(DURABLE_RUNS) --dir $(DURABLE_DIR)

# the C helpers built in place, for the extension enabled by path from
# this checkout (PYTHON: the Python that runs hg; setup.py needs a
# setuptools newer than most systems', hence a venv of its own)
helpers:
	$(PYTHON) -m venv build/helpers-venv
	build/helpers-venv/bin/python -m pip install -q "setuptools>=77"
	build/helpers-venv/bin/python setup.py -q build_ext --inplace

clean:
	rm -rf .venv-hg* bench/build build .pytest_cache
