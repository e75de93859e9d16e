# tfg: the compiler tfgc and its runtime libtfg.
#
#   make run      install missing packages, build, run examples/hello.tfg
#   make test     install missing packages, build, run every test
#   make test-slurm   srun under a one-node Slurm started here (in test)
#   make test-gpu     GPU results against the CPU's (in test; SKIP
#                     without a GPU, NVRTC compiles kernels anyway)
#   make mnist    the MNIST examples' full training runs (past 97%)
#   make bench    benchmarks (not part of test)
#   make bench-deps   NumPy and PyTorch, the references of make bench
#   make bench-gpu-ref   build/bench/gpu_ref: the GPU's limits (GPU machine)
#   make bench-gpu       bench/gpu.sh: the GPU rows of the README (GPU machine)
#   make asan     build/asan/tfgc with AddressSanitizer + UBSan
#   make fuzz [FUZZ_SECS=60] [FUZZ_MIN=1]   run each libFuzzer target
#                 (tests/fuzz/); FUZZ_MIN: make the corpus again, smaller
#   make static   build/static/tfgc(.xz): needs only libc and libm
#   make golden-update [AREA=..] [T=..]   rewrite golden files for review
#   make install [PREFIX=/usr/local] [DESTDIR=]   tfgc, its man page,
#                 libtfg.a and its header; make uninstall removes them
#   make man      man/tfgc.1 again from compiler/help.def (committed)

CC          ?= cc
LLVM_CONFIG ?= llvm-config-19
BUILD       ?= build
SAN         ?=
PREFIX      ?= /usr/local
DESTDIR     ?=

# Debian 12 packages the build and the tests need (libnng-dev only for
# bench/nng_rtt, the reference round trip the benchmarks compare with;
# graphviz for the test that renders --emit=dot; openmpi-bin, slurm-wlm
# and munge for the launchers' tests: mpirun, and srun under a Slurm of
# this machine; libssl-dev for the cluster key's MACs and TLS, openssl
# for the certificates the TLS test makes; libcairo2 for tfgc plot, which
# loads it with dlopen when it runs: nothing links it; groff-base for the
# test that renders man/tfgc.1; iproute2 for the hosts of network
# namespaces in tests/integration/hosts.sh, util-linux for prlimit).
PKGS = gcc make libc6-dev re2c lemon llvm-19-dev libopenblas-dev libnng-dev \
       libzstd-dev zlib1g-dev libssl-dev openssl python3 procps graphviz \
       openmpi-bin slurm-wlm munge libcairo2 groff-base iproute2 util-linux

OPT     ?= -O2
WARN     = -Wall -Wextra -Wpedantic
ifeq ($(CI),true)
WARN    += -Werror
endif
CFLAGS   = -std=c11 -D_GNU_SOURCE $(OPT) -g $(WARN) -fvisibility=hidden \
           -I. -I$(BUILD) $(SANFLAGS)
# float-cast-overflow: clang's undefined has it, gcc's not
ifeq ($(SAN),1)
SANFLAGS = -fsanitize=address,undefined,float-cast-overflow \
           -fno-omit-frame-pointer \
           -fno-sanitize-recover=undefined,float-cast-overflow
endif
# make fuzz: the same, and libFuzzer's coverage (clang only)
ifeq ($(SAN),fuzz)
SANFLAGS = -fsanitize=fuzzer-no-link,address,undefined \
           -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif
LLVM_INC = -I$(shell $(LLVM_CONFIG) --includedir)
LLVM_LIB = -L$(shell $(LLVM_CONFIG) --libdir) -lLLVM-19
LDLIBS   = $(LLVM_LIB) -lopenblas -lz -lssl -lcrypto -lpthread -ldl -lm

# the optimizers' loops (runtime/optim.c) vectorise, sqrt included, and
# so do the direct convolutions' and the pools' (runtime/conv.c)
%/runtime/optim.o: OPT = -O3 -fno-math-errno
%/runtime/conv.o: OPT = -O3

LANG_SRC     = $(wildcard lang/*.c)
COMPILER_SRC = $(filter-out compiler/main.c,$(wildcard compiler/*.c))
CODEGEN_SRC  = $(wildcard codegen/*.c)
RUNTIME_SRC  = $(wildcard runtime/*.c) $(wildcard stdlib/*.c)
GEN_SRC      = $(BUILD)/lang/lex.c $(BUILD)/lang/parse.c

obj = $(patsubst %.c,$(BUILD)/%.o,$(1))
LANG_OBJ     = $(call obj,$(LANG_SRC)) $(BUILD)/lang/lex.o $(BUILD)/lang/parse.o
COMPILER_OBJ = $(call obj,$(COMPILER_SRC))
CODEGEN_OBJ  = $(call obj,$(CODEGEN_SRC))
RUNTIME_OBJ  = $(call obj,$(RUNTIME_SRC))

UNIT_SRC = $(wildcard tests/unit/*_test.c)
UNIT_BIN = $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))

.PHONY: all run test deps unit golden golden-update integration asan bench mnist check-ops \
        lint 80 clean static bench-deps test-slurm test-gpu fuzz fuzz-replay \
        fuzz-seeds bench-gpu-ref bench-gpu man install uninstall
all: tfgc $(BUILD)/libtfg.a

tfgc: $(BUILD)/tfgc
	cp $< $@.tmp && mv -f $@.tmp $@

# tfgc links LLVM, OpenBLAS, zlib, zstd, OpenSSL and libstdc++ from their
# static libraries (STATIC_LIBS, Debian's -dev packages): every tfgc
# process (each task's server too) then starts without the dynamic
# loader's relocations of libLLVM and without libopenblas's start-up, a
# whole `tfgc run examples/hello.tfg` in 34 ms rather than 51.  The
# sanitizer builds link them dynamically, as the unit tests do.
ifeq ($(SAN),)
TFGC_LIBS = -static-libgcc -static-libstdc++ $(STATIC_LIBS)
else
TFGC_LIBS = $(LDLIBS)
endif
$(BUILD)/tfgc: $(BUILD)/compiler/main.o $(BUILD)/libtfgc.a $(BUILD)/libtfg.a
	$(CC) $(SANFLAGS) -rdynamic -o $@ $^ $(TFGC_LIBS)

$(BUILD)/libtfg.a: $(RUNTIME_OBJ)
	rm -f $@; ar rcs $@ $^

$(BUILD)/libtfgc.a: $(LANG_OBJ) $(COMPILER_OBJ) $(CODEGEN_OBJ)
	rm -f $@; ar rcs $@ $^

# Generated front end: never committed.
$(BUILD)/lang/parse.c $(BUILD)/lang/parse.h: lang/parse.y
	@mkdir -p $(BUILD)/lang
	lemon -q -d$(BUILD)/lang lang/parse.y
	@touch $(BUILD)/lang/parse.c $(BUILD)/lang/parse.h # lemon keeps an unchanged .h
$(BUILD)/lang/lex.c: lang/lex.re
	@mkdir -p $(BUILD)/lang
	re2c -W --no-generation-date -o $@ lang/lex.re
# The generated parser gets only the exemptions it needs.
$(BUILD)/lang/parse.o: CFLAGS += -Wno-unused-parameter -Wno-unused-variable \
                                 -Wno-type-limits -Wno-pedantic
$(BUILD)/lang/lex.o: CFLAGS += -Wno-unused-label

$(LANG_OBJ) $(COMPILER_OBJ): $(BUILD)/lang/parse.h

$(BUILD)/codegen/%.o: CFLAGS += $(LLVM_INC)
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<
$(BUILD)/lang/%.o: $(BUILD)/lang/%.c
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

# One translation unit a test: tests/unit/jit_harness.h is header-only.
# -MMD: build/tests/X.d, so a test is rebuilt when a header changes (and
# the headers join $^, hence the filter).
$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libtfgc.a $(BUILD)/libtfg.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LLVM_INC) -MMD -MP -o $@ $(filter %.c %.a,$^) $(LDLIBS)

# gpu_test's pretend CUDA driver (tests/unit/cuda_mock.c), which
# runtime/gpu.c opens through $TFG_LIBCUDA.
$(BUILD)/tests/gpu_test: $(BUILD)/tests/libcuda_mock.so
$(BUILD)/tests/libcuda_mock.so: tests/unit/cuda_mock.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -shared -o $@ $<

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# The man page is tfgc's own help (compiler/help.def) as troff, committed
# so that an installation needs no build to have it; make man writes it
# again after a change to the table, and tests/integration/help.sh fails
# while the two differ.
man: $(BUILD)/tfgc
	@mkdir -p man
	$(BUILD)/tfgc help --man >man/tfgc.1.tmp
	@if cmp -s man/tfgc.1.tmp man/tfgc.1; then rm -f man/tfgc.1.tmp; \
	else mv -f man/tfgc.1.tmp man/tfgc.1; echo "man: man/tfgc.1 updated"; fi

# tfgc (self-contained: run starts its servers as /proc/self/exe), its
# man page, and for programs that link what tfgc compile writes (spec
# §10.3 "Ahead-of-time compilation"), libtfg.a and the runtime's header
# as <tfg/tfg.h> (with the error list it includes, beside it).
BINDIR = $(DESTDIR)$(PREFIX)/bin
MANDIR = $(DESTDIR)$(PREFIX)/share/man/man1
LIBDIR = $(DESTDIR)$(PREFIX)/lib
INCDIR = $(DESTDIR)$(PREFIX)/include/tfg
install: all
	install -d $(BINDIR) $(MANDIR) $(LIBDIR) $(INCDIR)/runtime
	install -m 755 $(BUILD)/tfgc $(BINDIR)/tfgc
	install -m 644 man/tfgc.1 $(MANDIR)/tfgc.1
	install -m 644 $(BUILD)/libtfg.a $(LIBDIR)/libtfg.a
	install -m 644 runtime/tfg.h $(INCDIR)/tfg.h
	install -m 644 runtime/errors.def $(INCDIR)/runtime/errors.def

uninstall:
	rm -f $(BINDIR)/tfgc $(MANDIR)/tfgc.1 $(LIBDIR)/libtfg.a \
		$(INCDIR)/tfg.h $(INCDIR)/runtime/errors.def
	rmdir $(INCDIR)/runtime $(INCDIR) 2>/dev/null || true

# ------------------------------------------------------------ set-up, tests

deps:
	@missing=""; for p in $(PKGS); do \
		dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "make: installing$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi

run: deps
	$(MAKE) all
	./tfgc run examples/hello.tfg

test: deps
	$(MAKE) all
	$(MAKE) unit golden integration test-gpu test-slurm asan lint
	@# after asan: both build build/asan, and two makes at once race
	$(MAKE) fuzz-replay

unit: $(UNIT_BIN)
	@sh tests/unit/run.sh $(UNIT_BIN)

golden: tfgc
	@sh tests/golden/run.sh

golden-update: tfgc
	@UPDATE=1 sh tests/golden/run.sh $(AREA) $(T); \
	git status --short tests/golden

integration: tfgc $(BUILD)/tests/netfwd
	@sh tests/integration/run.sh

# The MNIST examples' full runs, the perceptrons past 97% test accuracy
# and the convolutional network past 99% (make test runs them shortened);
# the data: $TFG_MNIST or ../shared/data/mnist
mnist: tfgc
	@FULL=1 sh tests/integration/mnist.sh
	@FULL=1 sh tests/integration/cnn_mnist.sh

# GPU kernels against the CPU (tests/gpu/run.sh): NVRTC compiles every
# program's kernels; with a GPU each result is compared with the CPU's,
# without one the same programs run through the copies and
# --soft-placement, and the GPU comparisons are skipped.  The GPU unit
# tests run first.  TFG_REQUIRE_GPU=1: what would be skipped for want of
# a GPU or NVRTC fails.
GPU_UNIT = $(BUILD)/tests/gpu_test $(BUILD)/tests/cuda_gen_test \
	   $(BUILD)/tests/cuda_mm_test
test-gpu: tfgc $(GPU_UNIT)
	@UNIT_LABEL="gpu unit" sh tests/unit/run.sh $(GPU_UNIT)
	@timeout -k 5 1200 sh tests/gpu/run.sh

# srun under a one-node Slurm of this machine that the script starts and
# stops (as root; about 2 s to come up here): tests/slurm/run.sh.
test-slurm: tfgc
	@timeout -k 5 300 sh tests/slurm/run.sh || \
		{ echo "slurm: 0 passed, 1 failed, 0 skipped"; exit 1; }

# The unit tests, every golden case (the error cases among them, and runs
# across task processes), the integration tests (variables, restarts,
# checkpoints, killed tasks, launchers) and the Slurm test again under
# ASan + UBSan, leaks included.
asan:
	ASAN_OPTIONS=detect_leaks=1 \
		$(MAKE) BUILD=build/asan SAN=1 OPT=-O1 build/asan/tfgc unit
	@TFGC=build/asan/tfgc ASAN_OPTIONS=detect_leaks=1 \
		sh tests/golden/run.sh
	@TFGC=build/asan/tfgc ASAN_OPTIONS=detect_leaks=1 \
		sh tests/integration/run.sh
	@TFGC=build/asan/tfgc ASAN_OPTIONS=detect_leaks=1 \
		timeout -k 5 300 sh tests/slurm/run.sh

# ------------------------------------------------------------ fuzzing
# spec/design.md "Fuzzing".  tests/fuzz/X_fuzz.c is a libFuzzer target;
# make fuzz builds each with clang-19 (its packages installed only then)
# into build/fuzz and runs it for FUZZ_SECS seconds from its corpus,
# tests/fuzz/corpus/X, and its seeds, adding what finds new code to the
# corpus.  make fuzz-replay (part of test) links each target with
# tests/fuzz/replay.c instead, under ASan with $(CC), and runs the corpus
# and the seeds once.  The targets run no code generation: no LLVM.
FUZZ_PKGS    = clang-19 libclang-rt-19-dev
FUZZ_CC      = clang-19
FUZZ_SECS   ?= 60
FUZZ_MIN    ?= 0
FUZZ_TARGETS = wire front npy
FUZZ_LIBS    = -lopenblas -lz -lssl -lcrypto -lpthread -ldl -lm
FUZZ_SEEDS_front = $(wildcard examples/*.tfg tests/golden/*/*.tfg \
                              tests/integration/progs/*.tfg)
FUZZ_SEEDS_npy   = $(wildcard tests/data/*.npy tests/golden/*/*.npy \
                              tests/golden/*/*.idx tests/golden/*/*.idx.gz)
FUZZ_SEEDS_wire  =

FUZZ_OBJ = $(FUZZ_TARGETS:%=$(BUILD)/tests/fuzz/%_fuzz.o) \
           $(BUILD)/tests/fuzz/replay.o $(BUILD)/tests/fuzz/wire_seeds.o
.SECONDARY: $(FUZZ_OBJ)
$(FUZZ_OBJ): $(BUILD)/lang/parse.h
$(BUILD)/tests/fuzz/%_fuzz: $(BUILD)/tests/fuzz/%_fuzz.o $(BUILD)/libtfgc.a \
                            $(BUILD)/libtfg.a
	$(CC) $(SANFLAGS) -fsanitize=fuzzer -o $@ $^ $(FUZZ_LIBS)
$(BUILD)/tests/fuzz/%_replay: $(BUILD)/tests/fuzz/%_fuzz.o \
                              $(BUILD)/tests/fuzz/replay.o \
                              $(BUILD)/libtfgc.a $(BUILD)/libtfg.a
	$(CC) $(SANFLAGS) -o $@ $^ $(FUZZ_LIBS)
$(BUILD)/tests/fuzz/wire_seeds: $(BUILD)/tests/fuzz/wire_seeds.o \
                                $(BUILD)/libtfgc.a $(BUILD)/libtfg.a
	$(CC) $(SANFLAGS) -o $@ $^ $(FUZZ_LIBS)

fuzz:
	@$(MAKE) --no-print-directory deps PKGS="$(FUZZ_PKGS)"
	$(MAKE) BUILD=build/fuzz CC=$(FUZZ_CC) SAN=fuzz OPT=-O1 \
		$(FUZZ_TARGETS:%=build/fuzz/tests/fuzz/%_fuzz)
	@$(foreach t,$(FUZZ_TARGETS),FUZZ_MIN=$(FUZZ_MIN) sh tests/fuzz/run.sh \
		fuzz $(t) $(FUZZ_SECS) $(FUZZ_SEEDS_$(t)) &&) true

fuzz-replay:
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 OPT=-O1 \
		$(FUZZ_TARGETS:%=build/asan/tests/fuzz/%_replay)
	@$(foreach t,$(FUZZ_TARGETS),sh tests/fuzz/run.sh replay $(t) \
		$(FUZZ_SEEDS_$(t)) &&) true

# Rewrites the wire target's seeds (tests/fuzz/wire_seeds.c): after a
# change to the wire format or to the target's programs.
fuzz-seeds: $(BUILD)/tests/fuzz/wire_seeds
	rm -f tests/fuzz/corpus/wire/seed-*
	$(BUILD)/tests/fuzz/wire_seeds tests/fuzz/corpus/wire

# build/static/tfgc: tfgc stripped, one executable that needs only libc
# and libm, with LLVM, OpenBLAS, zlib, zstd, OpenSSL and libstdc++ linked
# in, for a machine without Debian's packages such as the lent GPU machine
# (../shared/TOOLCHAIN.md); tfgc.xz of it is what travels (the binary is
# over 64 MiB).  -rdynamic: a part.so that `server --part` loads finds
# libtfg's functions in the executable.  Not part of test.
LLVM_PARTS  = orcjit native passes core target analysis executionengine \
              bitwriter ipo
STATIC_LIBS = -L$(shell $(LLVM_CONFIG) --libdir) -Wl,--start-group \
              $(shell $(LLVM_CONFIG) --link-static --libs $(LLVM_PARTS)) \
              -Wl,--end-group -Wl,-Bstatic -lopenblas -lz -lzstd -lssl -lcrypto -lstdc++ -Wl,-Bdynamic \
              -lpthread -ldl -lm
static: $(BUILD)/static/tfgc.xz

$(BUILD)/static/tfgc: $(BUILD)/tfgc
	@test -z "$(SAN)" || { echo "make static: not with SAN"; exit 1; }
	@mkdir -p $(dir $@)
	strip -o $@ $<

$(BUILD)/static/tfgc.xz: $(BUILD)/static/tfgc
	xz -6 -T0 -k -f $<

bench: tfgc $(BUILD)/bench/nng_rtt $(BUILD)/bench/rows $(BUILD)/tests/netfwd
	@sh bench/run.sh

# The references bench/ref_sigmoid.py times, for Debian's /usr/bin/python3,
# and TF 2.21 (tf.compat.v1) from PyPI in build/venv for the TF1 peers
# (bench/tf1_*.py); none of it is needed by make test.
BENCH_PKGS = python3-numpy python3-torch python3-venv
TF_PIP     = tensorflow-cpu==2.21.*
bench-deps:
	@$(MAKE) --no-print-directory deps PKGS="$(BENCH_PKGS)"
	@test -x build/venv/bin/python3 || /usr/bin/python3 -m venv build/venv
	@build/venv/bin/python3 -c 'import tensorflow' 2>/dev/null || \
		build/venv/bin/pip install --quiet '$(TF_PIP)'

# The GPU's own limits (copy and read bandwidth, cuBLAS SGEMM) for the
# GPU benchmarks: bench/gpu_ref.c, run on the GPU machine.  It opens
# libcuda, libnvrtc and libcublas with dlopen: no CUDA headers needed.
# GPU benchmarks (bench/gpu.sh; needs a GPU, so not part of make bench)
bench-gpu: tfgc $(BUILD)/bench/gpu_ref
	@sh bench/gpu.sh

bench-gpu-ref: $(BUILD)/bench/gpu_ref
$(BUILD)/bench/gpu_ref: bench/gpu_ref.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -ldl -lpthread -lm

# bench/rows.c: a sparse adagrad update on a task server's variables
$(BUILD)/bench/rows: bench/rows.c $(BUILD)/libtfg.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I. -o $@ $< $(BUILD)/libtfg.a $(FUZZ_LIBS)

# the links of tests/integration/hosts.inc's network namespaces
$(BUILD)/tests/netfwd: tests/netfwd.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) $(WARN) -o $@ $<

$(BUILD)/bench/nng_rtt: bench/nng_rtt.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -lnng -lpthread

# No include may go upward: runtime/ and stdlib/ see only themselves,
# lang/ sees no compiler/ or codegen/, compiler/ no codegen/; and every
# example and golden program is formatted (tfgc fmt --check).
lint: tfgc
	@sh tests/lint.sh

# The op table (stdlib/ops.def): its functions defined, its ops tested,
# the spec's table of op facts as tfgc prints it; part of make lint.
check-ops: tfgc
	@python3 tests/check_ops.py

80:
	@grep -n '.\{81,\}' $$(git ls-files '*.c' '*.h' '*.re' '*.y') || true

clean:
	rm -rf build tfgc
