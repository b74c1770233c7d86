# reprise — one non-recursive Makefile; a build directory per flavour.
#
#   make              library, CLI and capture libraries in build/default
#   make check        build and run every Criterion test, replay the fuzz corpora, then the Python
#                     API's tests (python/tests, scripts/pytest.sh; `make pytest` runs them alone)
#   make asan         the same under ASan+UBSan in build/asan
#   make fuzz         libFuzzer targets (clang) in build/fuzz, each run for FUZZ_SECONDS
#   make bench        benchmark programs (see bench/RESULTS.md)
#   make install PREFIX=/usr/local
#   make dist         a self-contained tree and tarball for x86-64 Linux (build/reprise-*/)
#   make demo / make test   set up a fresh Debian 12 machine and run the example / the tests
#
# Modules point one way: format <- scheduler <- replay <- checker; capture -> format; cli on top.

BUILD    ?= build/default
PREFIX   ?= /usr/local
CC       ?= cc
CFLAGS   ?= -O2 -g
CPPFLAGS += -I. -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
XCFLAGS  := -std=c11 -fPIC -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla
LDLIBS   := -lzstd -lxxhash -lprotobuf-c -lvulkan -ldl -lpthread -lm
FUZZ_SECONDS ?= 20
# make dist: the tree's name and its build (see "make dist" below)
VERSION  := $(shell sed -n 's/^\#define REPRISE_VERSION "\(.*\)"/\1/p' cli/cli_main.c)
DIST_BUILD := build/dist
DIST_NAME := reprise-$(VERSION)-linux-x86_64
DIST_DIR := build/$(DIST_NAME)

# ---- the library: every module but capture and cli -----------------------------------------
LIB_SRC  := $(wildcard format/*.c scheduler/*.c replay/*.c replay/*/*.c checker/*.c)
# Generated protobuf-c sources (export): format/*.proto -> $(BUILD)/gen/format/*.pb-c.{c,h}
PROTO    := $(wildcard format/*.proto)
PROTO_C  := $(PROTO:%.proto=$(BUILD)/gen/%.pb-c.c)
# Vulkan headers and registry: Debian 13's libvulkan-dev when scripts/vulkan-headers.sh has
# fetched it into build/vulkan-headers (scripts/deps.sh does), else the system's (Debian 12:
# 1.3.239, which lacks structures and commands today's programs and drivers use: the script
# says which). $(BUILD)/vulkan-headers.txt names the choice; objects rebuild when it changes.
VK_HDRS  := build/vulkan-headers/root/usr
ifneq ($(wildcard $(VK_HDRS)/include/vulkan/vulkan_core.h),)
CPPFLAGS += -I$(VK_HDRS)/include
VK_XML   ?= $(VK_HDRS)/share/vulkan/registry/vk.xml
endif
VK_XML   ?= /usr/share/vulkan/registry/vk.xml
VK_CHOICE := $(BUILD)/vulkan-headers.txt
$(shell mkdir -p $(BUILD) && (echo "$(VK_XML)" | cmp -s - $(VK_CHOICE) || echo "$(VK_XML)" > $(VK_CHOICE)))
# Generated from the Vulkan registry: the features structures and the image formats
# (format/sbt_vk.h)
VK_GEN_C := $(BUILD)/gen/format/sbt_vk_features.c $(BUILD)/gen/format/sbt_vk_formats.c
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(PROTO_C:.c=.o) $(VK_GEN_C:.c=.o)
LIB      := $(BUILD)/libreprise.a
CPPFLAGS += -I$(BUILD)/gen

# The same objects as a shared library with a versioned soname (make install): libreprise.so.0
# (the soname: the major version of the C API) -> libreprise.so.$(VERSION), and libreprise.so for
# the linker. The Python package (python/reprise) loads it with ctypes, from the build tree or
# from where make install put it.
SO_MAJOR := 0
SO_NAME  := libreprise.so.$(SO_MAJOR)
SO_REAL  := $(BUILD)/libreprise.so.$(VERSION)
SO       := $(BUILD)/libreprise.so
# Public headers: every module's but its *_int.h; installed under include/reprise/<module>/
PUB_HDRS := $(filter-out %_int.h,$(wildcard format/*.h scheduler/*.h replay/*.h checker/*.h))
# Debian's Python (python3-numpy, python3-pandas, python3-pytest are Debian packages for it);
# make install puts the package in its dist-packages under PREFIX
PYTHON   ?= /usr/bin/python3
PYVER    := $(shell $(PYTHON) -c 'import sys; print("python%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYSITE   ?= $(PREFIX)/lib/$(PYVER)/dist-packages

# ---- the CLI ----------------------------------------------------------------------------------
CLI_SRC  := $(wildcard cli/*.c)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
BIN      := $(BUILD)/reprise

# ---- capture libraries (loaded into other programs) ------------------------------------------
# capture/vk/ builds the Vulkan layer, capture/cuda/ the CUDA shim; capture/common/ is what both
# share (configuration, the pump thread, fatal signals), linked into each; capture/cap.h is the
# environment interface the CLI sets.
CAP_SRC  := $(wildcard capture/*/*.c)
CAP_OBJ  := $(CAP_SRC:%.c=$(BUILD)/%.o)
CAP_COMMON_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard capture/common/*.c))

# ---- tests ------------------------------------------------------------------------------------
TEST_SRC := $(wildcard tests/test_*.c)
TESTS    := $(TEST_SRC:%.c=$(BUILD)/%)
TESTLIB_SRC := $(filter-out tests/test_%.c,$(wildcard tests/*.c))
TESTLIB_OBJ := $(TESTLIB_SRC:%.c=$(BUILD)/%.o)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_NAMES := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=%)
CORPUS_RUNNERS := $(FUZZ_NAMES:%=$(BUILD)/tests/fuzz/replay_%)

BENCH_SRC := $(wildcard bench/*.c)
BENCHES  := $(BENCH_SRC:%.c=$(BUILD)/%)

ALL_OBJ  := $(LIB_OBJ) $(CLI_OBJ) $(CAP_OBJ) $(TESTLIB_OBJ)

.PHONY: all check asan fuzz fuzz-build fuzz-merge seeds bench install pytest dist dist-tree clean demo test format-check extra golden
.SECONDARY:
.DELETE_ON_ERROR:

all: $(BIN) $(SO) extra

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: %.proto
	@mkdir -p $(@D)
	protoc-c --c_out=$(BUILD)/gen $<

$(BUILD)/gen/format/sbt_vk_%.c: format/gen_vk_%.py format/vkxml.py $(VK_XML) $(VK_CHOICE)
	@mkdir -p $(@D)
	python3 $< $(VK_XML) $@
# the features also with the SPIR-V grammar (spirv-headers, fetched beside the Vulkan headers
# by scripts/vulkan-headers.sh; else the system's, if installed; else none)
SPIRV_GRAMMAR := $(firstword $(wildcard build/vulkan-headers/spirv/root/usr/include/spirv/unified1/spirv.core.grammar.json \
                   /usr/include/spirv/unified1/spirv.core.grammar.json))
$(BUILD)/gen/format/sbt_vk_features.c: format/gen_vk_features.py format/vkxml.py $(VK_XML) $(VK_CHOICE) $(SPIRV_GRAMMAR)
	@mkdir -p $(@D)
	python3 $< $(VK_XML) $@ $(SPIRV_GRAMMAR)

$(VK_GEN_C:.c=.o): %.o: %.c
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c
	$(CC) -std=c11 -fPIC $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# every library object may include generated headers
$(LIB_SRC:%.c=$(BUILD)/%.o) $(CLI_OBJ) $(TESTLIB_OBJ): | $(PROTO_C)
# ... and every object the Vulkan headers
$(ALL_OBJ) $(VK_GEN_C): $(VK_CHOICE)

$(LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(SO_REAL): $(LIB_OBJ)
	$(CC) -shared $(CFLAGS) $(LDFLAGS) -Wl,-soname,$(SO_NAME) -Wl,-z,defs $(LIB_OBJ) -o $@ $(LDLIBS)
$(BUILD)/$(SO_NAME): $(SO_REAL)
	ln -sf $(notdir $<) $@
$(SO): $(BUILD)/$(SO_NAME)
	ln -sf $(SO_NAME) $@

$(BIN): $(CLI_OBJ) $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/tests/test_%: tests/test_%.c $(TESTLIB_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) -MMD -MP $< $(TESTLIB_OBJ) $(TEST_OBJ) $(LIB) -o $@ \
	  $(LDFLAGS) -lcriterion $(LDLIBS)

# ---- fuzzing ----------------------------------------------------------------------------------
# Every tests/fuzz/fuzz_<name>.c is a libFuzzer target. Its inputs: tests/fuzz/seeds/<name>
# (small files: tests/fuzz/mkseeds* write them, `make seeds`, or by hand), tests/fuzz/corpus/
# <name> (what fuzzing found, minimized by `make fuzz-merge`), the directories in CORPUS_<name>. `make
# check` replays them all through a main() from corpus_driver.c (gcc, no libFuzzer); `make fuzz`
# fuzzes each target for FUZZ_SECONDS. Both build in the fuzzing mode,
# -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, where checksums are computed but not enforced
# (format/sbt_int.h) so that mutated inputs reach the decoders. No other build sets it: the
# corpus runners link fuzzing-mode copies of the library objects that use it, placed before
# the library so that the archive's own copies are never pulled in.
FUZZ_DEF := -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
FUZZMODE_SRC := $(shell grep -l 'SBT__ENFORCE_CHECKSUMS\|FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION' $(LIB_SRC))
FUZZMODE_OBJ := $(FUZZMODE_SRC:%.c=$(BUILD)/fuzzmode/%.o)
CORPUS_sbt_reader := tests/data/format/good tests/data/format/bad
corpus_of = tests/fuzz/seeds/$(1) tests/fuzz/corpus/$(1) $(CORPUS_$(1))
$(FUZZMODE_OBJ): $(VK_CHOICE)
$(BUILD)/fuzzmode/%.o: %.c | $(PROTO_C)
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(FUZZ_DEF) $(CFLAGS) -MMD -MP -c $< -o $@
# a target may fuzz a parser outside the library: its sources in FUZZ_SRC_<name>
FUZZ_SRC_cap_spirv := capture/vk/cap_vk_spirv.c
$(BUILD)/tests/fuzz/replay_cap_spirv: $(FUZZ_SRC_cap_spirv)
$(BUILD)/tests/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/corpus_driver.c $(FUZZMODE_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(FUZZ_DEF) $(CFLAGS) $< tests/fuzz/corpus_driver.c \
	  $(FUZZ_SRC_$*) $(FUZZMODE_OBJ) $(LIB) -o $@ $(LDFLAGS) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) $< $(LIB) -o $@ $(LDFLAGS) $(LDLIBS)

# Module sections below add to these (capture libraries, test programs, shaders).
EXTRA :=
TEST_ENV := REPRISE_BIN=$(abspath $(BIN)) REPRISE_BUILD=$(abspath $(BUILD)) REPRISE_SRC=$(CURDIR) \
  REPRISE_DIST=$(abspath $(DIST_DIR))

# ---- capture: Vulkan layer ---------------------------------------------------------------------
# (capture section: the capture module owns these lines)
# libVkLayer_reprise_capture.so: the capture/vk/cap_vk_*.c objects plus the library, every symbol
# hidden but the three loader entry points (capture/vk/cap_vk.map); -Bsymbolic so that our own
# references to vkGetInstanceProcAddr are not bound to the loader's symbol of that name. The
# manifest in $(BUILD) points at the .so beside it, so VK_ADD_LAYER_PATH=$(BUILD) works from the
# build tree.
#
# Its entry points come from the Vulkan registry: capture/vk/cap_vk_gen.py (python3, standard library)
# reads $(VK_XML) and the reviewed class list capture/vk/cap_vk_classes.txt and writes
# $(BUILD)/gen/capture/vk/cap_vk_gen.{h,c} (command ids, next-function tables, pass-through wrappers
# of the unmodelled commands, the name lookup) and cap_vk_classes.txt (every command with its
# level, class and reason). The check stamp fails the build, naming the command, when the
# hand-written wrappers of capture/vk/cap_vk_*.c are not exactly the commands listed "recorded".
# Provisional (beta) commands are typed too: VK_ENABLE_BETA_EXTENSIONS needs no other header.
CAP_VK_SRC := $(wildcard capture/vk/cap_vk_*.c)
CAP_VK_GENDIR := $(BUILD)/gen/capture/vk
CAP_VK_GEN := $(CAP_VK_GENDIR)/cap_vk_gen.h $(CAP_VK_GENDIR)/cap_vk_gen.c
CAP_VK_CHECK := $(CAP_VK_GENDIR)/cap_vk_check.stamp
CAP_VK_GENARGS := --xml $(VK_XML) --classes capture/vk/cap_vk_classes.txt
CAP_VK_OBJ := $(CAP_VK_SRC:%.c=$(BUILD)/%.o) $(CAP_VK_GENDIR)/cap_vk_gen.o $(CAP_COMMON_OBJ)
CAP_VK_SO  := $(BUILD)/libVkLayer_reprise_capture.so
CAP_VK_JSON := $(BUILD)/VK_LAYER_REPRISE_capture.json
ALL_OBJ    += $(CAP_VK_GENDIR)/cap_vk_gen.o
# (files are rewritten only when their text changes, so a new class list recompiles little)
$(CAP_VK_GENDIR)/cap_vk_gen.stamp: capture/vk/cap_vk_gen.py format/vkxml.py capture/vk/cap_vk_classes.txt $(VK_XML) \
  $(VK_CHOICE)
	python3 capture/vk/cap_vk_gen.py $(CAP_VK_GENARGS) --out $(CAP_VK_GENDIR)
	@touch $@
$(CAP_VK_GEN): $(CAP_VK_GENDIR)/cap_vk_gen.stamp ;
$(CAP_VK_CHECK): capture/vk/cap_vk_gen.py format/vkxml.py capture/vk/cap_vk_classes.txt $(VK_XML) $(VK_CHOICE) \
  $(CAP_VK_SRC)
	@mkdir -p $(@D)
	python3 capture/vk/cap_vk_gen.py $(CAP_VK_GENARGS) --check $(CAP_VK_SRC)
	@touch $@
$(CAP_VK_GENDIR)/%.o: $(CAP_VK_GENDIR)/%.c
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@
$(CAP_VK_OBJ): | $(CAP_VK_GEN) $(CAP_VK_CHECK)
$(CAP_VK_OBJ): XCFLAGS += -fvisibility=hidden
$(CAP_VK_OBJ): CPPFLAGS += -DVK_ENABLE_BETA_EXTENSIONS
$(CAP_VK_SO): $(CAP_VK_OBJ) $(LIB) capture/vk/cap_vk.map
	$(CC) -shared $(CFLAGS) $(LDFLAGS) -Wl,--version-script=capture/vk/cap_vk.map -Wl,-z,defs -Wl,-Bsymbolic \
	  -Wl,-soname,libVkLayer_reprise_capture.so $(CAP_VK_OBJ) $(LIB) -o $@ \
	  -lzstd -lxxhash -lpthread -ldl
$(CAP_VK_JSON): capture/vk/VK_LAYER_REPRISE_capture.json.in
	@mkdir -p $(@D)
	sed 's|@LIBRARY_PATH@|./libVkLayer_reprise_capture.so|' $< > $@
EXTRA += $(CAP_VK_SO) $(CAP_VK_JSON)
# test_capture also tests capture/common/ (the fatal-signal handling) in its own processes
$(BUILD)/tests/test_capture: $(CAP_COMMON_OBJ) $(BUILD)/capture/vk/cap_vk_spirv.o
$(BUILD)/tests/test_capture: TEST_OBJ = $(CAP_COMMON_OBJ) $(BUILD)/capture/vk/cap_vk_spirv.o
TEST_ENV += REPRISE_VK_XML=$(VK_XML)
define INSTALL_CAP_VK
install -m 755 $(CAP_VK_SO) $(DESTDIR)$(PREFIX)/lib/reprise/libVkLayer_reprise_capture.so
sed 's|@LIBRARY_PATH@|$(PREFIX)/lib/reprise/libVkLayer_reprise_capture.so|' capture/vk/VK_LAYER_REPRISE_capture.json.in > $(DESTDIR)$(PREFIX)/share/vulkan/explicit_layer.d/VK_LAYER_REPRISE_capture.json

endef
INSTALL_EXTRA += $(INSTALL_CAP_VK)

# ---- capture: CUDA shim --------------------------------------------------------------------------
# (cuda section)
# Where cuda.h comes from: Debian 12 main has no CUDA headers (nvidia-cuda-dev is non-free and
# 11.x), so the build uses $(CUDA_HOME)/include when a toolkit is installed there, and otherwise
# the minimal declaration header compat/cuda/cuda.h (only what reprise uses). Nothing links
# against a CUDA library: the shim and the replay backend dlopen the driver at run time.
CUDA_HOME ?= /usr/local/cuda
CUDA_COMMA := ,
CUDA_INC  := $(if $(wildcard $(CUDA_HOME)/include/cuda.h),$(CUDA_HOME)/include,compat/cuda)
CUDA_STUB := $(wildcard $(CUDA_HOME)/lib64/stubs/libcuda.so)
# libreprise_cuda.so: capture/cuda/cap_cuda_*.c plus the library; exports every symbol of the driver
# stub (capture/cuda/cap_cuda_exports.h) and nothing else. $(BUILD)/cuda/libcuda.so.1 links to it:
# that directory goes first on LD_LIBRARY_PATH ("reprise capture --api cuda" does this).
CAP_CUDA_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard capture/cuda/cap_cuda_*.c)) $(CAP_COMMON_OBJ)
CAP_CUDA_SO  := $(BUILD)/libreprise_cuda.so
CAP_CUDA_DIR := $(BUILD)/cuda/libcuda.so.1
$(CAP_CUDA_OBJ): XCFLAGS += -fvisibility=hidden
$(CAP_CUDA_OBJ) $(BUILD)/replay/cuda/replay_cuda.o: CPPFLAGS += -I$(CUDA_INC)
$(CAP_CUDA_SO): $(CAP_CUDA_OBJ) $(LIB) capture/cuda/cap_cuda.map
	$(CC) -shared $(CFLAGS) $(LDFLAGS) -Wl,--version-script=capture/cuda/cap_cuda.map -Wl,-z,defs \
	  -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 $(CAP_CUDA_OBJ) $(LIB) -o $@ \
	  -lzstd -lxxhash -lpthread -ldl
$(CAP_CUDA_DIR): $(CAP_CUDA_SO)
	@mkdir -p $(@D)
	ln -sf ../libreprise_cuda.so $@
EXTRA += $(CAP_CUDA_SO) $(CAP_CUDA_DIR)
define INSTALL_CAP_CUDA
install -d $(DESTDIR)$(PREFIX)/lib/reprise/cuda
install -m 755 $(CAP_CUDA_SO) $(DESTDIR)$(PREFIX)/lib/reprise/libreprise_cuda.so
ln -sf ../libreprise_cuda.so $(DESTDIR)$(PREFIX)/lib/reprise/cuda/libcuda.so.1

endef
INSTALL_EXTRA += $(INSTALL_CAP_CUDA)
# tests/cuda (test only, never installed): the fake driver $(BUILD)/tests/cuda/fake/libcuda.so.1
# (fake_cuda.c, plus weak stubs for every other stub symbol) and Driver-API programs
# tests/cuda/prog_*.c linked against it (any libcuda.so.1 first on LD_LIBRARY_PATH serves them).
# -z nodelete: it stays loaded after dlclose, so that the runs it counts (FAKE_CUDA_LIE) and a
# device it lost span every replay of one process (check runs several, each opening the driver).
FAKE_CUDA := $(BUILD)/tests/cuda/fake/libcuda.so.1
CUDA_PROGS := $(patsubst tests/cuda/%.c,$(BUILD)/tests/cuda/%,$(wildcard tests/cuda/prog_*.c))
$(FAKE_CUDA): tests/cuda/fake_cuda.c tests/cuda/fake_stubs.c tests/cuda/fake_cuda.h capture/cuda/cap_cuda_exports.h
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) -I$(CUDA_INC) $(CFLAGS) -shared -Wl,-Bsymbolic -Wl,-z,nodelete -Wl,-soname,libcuda.so.1 \
	  tests/cuda/fake_cuda.c tests/cuda/fake_stubs.c -o $@ -lpthread -ldl
# -MMD: a program that includes another (prog_ptds.c, prog_memkinds_ptds.c) is rebuilt with it
$(BUILD)/tests/cuda/prog_%: tests/cuda/prog_%.c tests/cuda/fake_cuda.h $(FAKE_CUDA)
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) -I$(CUDA_INC) $(CFLAGS) -MMD -MP $< -o $@ $(LDFLAGS) \
	  -L$(dir $(FAKE_CUDA)) -l:libcuda.so.1 -lpthread -lm
-include $(CUDA_PROGS:=.d)
EXTRA += $(FAKE_CUDA) $(CUDA_PROGS)
$(BUILD)/tests/test_cuda: CPPFLAGS += -I$(CUDA_INC)
# The engine names replay__cuda_backend weakly, which does not pull replay_cuda.o out of the
# archive: ask the linker for it wherever the CUDA backend must be present (once the engine and
# its Vulkan backend exist; until then test_cuda skips its replay tests).
CUDA_BACKEND_LD := $(if $(and $(wildcard replay/replay_engine.c),$(wildcard replay/vk/replay_vk.c)),-Wl$(CUDA_COMMA)--undefined=replay__cuda_backend)
$(BIN) $(BUILD)/tests/test_cuda: override LDFLAGS += $(CUDA_BACKEND_LD)
TEST_ENV += REPRISE_CUDA_STUB=$(CUDA_STUB)

# ---- test programs and shaders ---------------------------------------------------------------------
# (tests section)
# tests/vk: headless Vulkan compute programs for the capture tests, each linked with the shared
# helper vkt.c; their shaders tests/vk/*.comp compile to $(BUILD)/tests/vk/*.spv beside them.
VKT_PROGS := $(patsubst tests/vk/%.c,$(BUILD)/tests/vk/%,$(filter-out tests/vk/vkt.c tests/vk/layer_%.c,$(wildcard tests/vk/*.c)))
VKT_SPV   := $(patsubst tests/vk/%.comp,$(BUILD)/tests/vk/%.spv,$(wildcard tests/vk/*.comp))
$(BUILD)/tests/vk/%: tests/vk/%.c $(BUILD)/tests/vk/vkt.o
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) -MMD -MP $< $(BUILD)/tests/vk/vkt.o -o $@ $(LDFLAGS) \
	  -lvulkan -lpthread
# vk_formats takes the image formats and their packed layout from the library (format/sbt_vk.h)
$(BUILD)/tests/vk/vk_formats: tests/vk/vk_formats.c $(BUILD)/tests/vk/vkt.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) -MMD -MP $< $(BUILD)/tests/vk/vkt.o $(LIB) -o $@ \
	  $(LDFLAGS) -lvulkan -lzstd -lxxhash -lprotobuf-c -lpthread -lm
# GLSLFLAGS_<name>: options of one shader (subgroup operations need SPIR-V 1.3)
GLSLFLAGS_subgroup := --target-env vulkan1.1
$(BUILD)/tests/vk/%.spv: tests/vk/%.comp
	@mkdir -p $(@D)
	glslangValidator -V --quiet $(GLSLFLAGS_$*) $< -o $@
# tests/vk/layer_<name>.c: test-only Vulkan layers VK_LAYER_REPRISE_<name>, each a library with
# its manifest in $(BUILD)/tests/vk (VK_ADD_LAYER_PATH=$(BUILD)/tests/vk finds them); what they
# share is tests/vk/layer_common.h.
VKT_LAYERS := $(patsubst tests/vk/layer_%.c,$(BUILD)/tests/vk/libVkLayer_reprise_%.so,$(wildcard tests/vk/layer_*.c))
$(BUILD)/tests/vk/libVkLayer_reprise_%.so: tests/vk/layer_%.c tests/vk/layer_common.h
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) -fvisibility=hidden -shared -Wl,-Bsymbolic $< -o $@ $(LDFLAGS)
	printf '{"file_format_version": "1.2.0", "layer": {"name": "VK_LAYER_REPRISE_%s", "type": "GLOBAL", "library_path": "./%s", "api_version": "1.3.239", "implementation_version": "1", "description": "reprise test layer"}}\n' \
	  $* $(@F) > $(@D)/VK_LAYER_REPRISE_$*.json
EXTRA += $(VKT_PROGS) $(VKT_SPV) $(VKT_LAYERS)
# tests/vk3p: programs we did not write. VkFFT (libvkfft-dev, header-only, with glslang-dev:
# scripts/deps.sh test installs both) generates GLSL, compiles it with glslang at run time and
# records its own pipelines and dispatches; tests/vk3p/vk_fft.c only drives it. Debian 12's
# vkFFT.h 1.2.26 does not compile against Debian 12's glslang 12 as shipped (empty scalar
# initializers in C; its hard-coded glslang_resource_t predates glslang 12's layout, so shader
# limits come out zero and every shader fails to compile): the build uses a copy with those two
# spots changed to glslang's own glslang_default_resource(). Built only where the headers are.
VKFFT_H := $(wildcard /usr/include/vkFFT.h)
ifneq ($(VKFFT_H),)
$(BUILD)/gen/vk3p/vkFFT.h: $(VKFFT_H)
	@mkdir -p $(@D)
	sed -e 's/= {};/= {0};/' -e 's/&default_resource,/glslang_default_resource(),/' \
	  -e 's|#include <glslang/Include/glslang_c_interface.h>|&\n#include <glslang/Public/resource_limits_c.h>|' \
	  $< > $@
$(BUILD)/tests/vk3p/vk_fft: tests/vk3p/vk_fft.c $(BUILD)/gen/vk3p/vkFFT.h $(BUILD)/tests/vk/vkt.o
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -w -I$(BUILD)/gen/vk3p $(CPPFLAGS) $(CFLAGS) $< $(BUILD)/tests/vk/vkt.o -o $@ \
	  $(LDFLAGS) -Wl,--start-group -lglslang -lMachineIndependent -lOSDependent -lOGLCompiler \
	  -lHLSL -lGenericCodeGen -lSPIRV -lSPIRV-Tools-opt -lSPIRV-Tools \
	  -lglslang-default-resource-limits -Wl,--end-group -lvulkan -lstdc++ -lpthread -lm
EXTRA += $(BUILD)/tests/vk3p/vk_fft
endif

# ---- sanitizer runs (make asan) -----------------------------------------------------------------
# tests/lsan/run.sh wraps each test command of an ASan build: reports to files, leaks judged by
# the module that allocated them (tests/lsan/keep_loaded.c and leaks.sh say why). keep_loaded
# is built without sanitizer flags: it is preloaded into every process, uninstrumented ones too.
LSAN_DIR := $(BUILD)/tests/lsan
$(LSAN_DIR)/libkeep_loaded.so: tests/lsan/keep_loaded.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -O2 -fPIC -shared $< -o $@
$(LSAN_DIR)/libleak.so: tests/lsan/leak_lib.c
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) -shared $< -o $@ $(LDFLAGS)
$(LSAN_DIR)/leaky: tests/lsan/leaky.c
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) $< -o $@ $(LDFLAGS) -ldl
EXTRA += $(LSAN_DIR)/libkeep_loaded.so $(LSAN_DIR)/libleak.so $(LSAN_DIR)/leaky
# tests/preload/*.c: LD_PRELOAD libraries for the capture tests (each says what it changes);
# like keep_loaded, built without sanitizer flags
$(BUILD)/tests/preload/lib%.so: tests/preload/%.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -O2 -fPIC -shared $< -o $@ -ldl
EXTRA += $(patsubst tests/preload/%.c,$(BUILD)/tests/preload/lib%.so,$(wildcard tests/preload/*.c))
SAN_RUN := $(if $(findstring sanitize=address,$(CFLAGS)),tests/lsan/run.sh $(BUILD))

extra: $(EXTRA)

check: $(BIN) $(SO) $(EXTRA) $(TESTS) $(CORPUS_RUNNERS) dist-tree
	@mkdir -p $(BUILD)/tap
	@set -e; for t in $(TESTS); do echo "== $$t"; tap=$(BUILD)/tap/$${t##*/}.tap; \
	  $(TEST_ENV) $(SAN_RUN) $$t --jobs 2 --tap=$$tap; \
	  sed -n 's/^ok - \(.*\)  # SKIP \(.*\)/[SKIP] \1: \2/p' $$tap; done
	@set -e; $(foreach n,$(FUZZ_NAMES),echo "== $(BUILD)/tests/fuzz/replay_$(n)"; \
	  $(SAN_RUN) $(BUILD)/tests/fuzz/replay_$(n) $(call corpus_of,$(n));)
	@echo "== python/tests (scripts/pytest.sh)"
	@$(if $(SAN_RUN),echo "[SKIP] python/tests: the Python API loads $(SO) into an uninstrumented interpreter",$(TEST_ENV) scripts/pytest.sh $(BUILD))

# The Python API's tests alone (make check runs them too)
pytest: $(BIN) $(SO) $(EXTRA)
	$(TEST_ENV) scripts/pytest.sh $(BUILD)

asan:
	$(MAKE) BUILD=build/asan CFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	  -fno-sanitize-recover=all" LDFLAGS="-fsanitize=address,undefined" check

# `make fuzz`: what each target found goes to build/fuzz/corpus-<name> (crashes: build/fuzz/
# crash-*); `make fuzz-merge` then minimizes it with the committed corpus into
# tests/fuzz/corpus/<name>: inputs that reach no edge the others (seeds included) do not reach
# are dropped (hit counts are not kept: a regression corpus, not a fuzzing state). FUZZ_ARGS
# adds libFuzzer options (-jobs=N, -use_value_profile=1, ...).
FUZZ_BUILD := build/fuzz
FUZZ_ARGS ?=
FUZZ_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all $(FUZZ_DEF)
fuzz-build:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang CFLAGS="$(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link" \
	  $(FUZZ_BUILD)/libreprise.a
	@set -e; $(foreach n,$(FUZZ_NAMES), \
	  clang $(CPPFLAGS) -I$(FUZZ_BUILD)/gen $(FUZZ_CFLAGS) -fsanitize=fuzzer tests/fuzz/fuzz_$(n).c \
	    $(FUZZ_SRC_$(n)) $(FUZZ_BUILD)/libreprise.a -o $(FUZZ_BUILD)/fuzz_$(n) $(LDLIBS);)
fuzz: fuzz-build
	@set -e; $(foreach n,$(FUZZ_NAMES),mkdir -p $(FUZZ_BUILD)/corpus-$(n); \
	  echo "== fuzz_$(n) for $(FUZZ_SECONDS) s"; \
	  (cd $(FUZZ_BUILD) && ./fuzz_$(n) -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 \
	    -print_final_stats=1 $(FUZZ_ARGS) corpus-$(n) $(addprefix $(CURDIR)/,$(wildcard $(call corpus_of,$(n)))));)
fuzz-merge: fuzz-build
	@set -e; $(foreach n,$(FUZZ_NAMES),rm -rf $(FUZZ_BUILD)/merge-$(n); \
	  mkdir -p $(FUZZ_BUILD)/merge-$(n) $(FUZZ_BUILD)/corpus-$(n) tests/fuzz/corpus/$(n); \
	  $(FUZZ_BUILD)/fuzz_$(n) -merge=1 -use_counters=0 -max_len=65536 -timeout=10 $(FUZZ_BUILD)/merge-$(n) \
	    $(wildcard tests/fuzz/seeds/$(n)) tests/fuzz/corpus/$(n) $(FUZZ_BUILD)/corpus-$(n); \
	  for f in tests/fuzz/seeds/$(n)/*; do [ -f $$f ] || continue; \
	    rm -f $(FUZZ_BUILD)/merge-$(n)/$$(sha1sum < $$f | cut -c1-40); done; \
	  rm -rf tests/fuzz/corpus/$(n); mv $(FUZZ_BUILD)/merge-$(n) tests/fuzz/corpus/$(n);)

# Seed inputs of the fuzz targets (committed; deterministic)
seeds: $(LIB)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) tests/fuzz/mkseeds.c $(LIB) -o $(BUILD)/mkseeds $(LDLIBS)
	$(BUILD)/mkseeds tests/fuzz/seeds
	python3 tests/fuzz/mkseeds_vk_payload.py tests/fuzz/seeds/vk_payload

bench: $(BIN) $(BENCHES)

# Golden files of tests/data/format (committed; rebuild only when the format version changes)
golden: $(LIB)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) tests/data/format/mkgolden.c $(LIB) -o $(BUILD)/mkgolden $(LDLIBS)
	$(BUILD)/mkgolden tests/data/format

# install: the CLI, the capture libraries, what a C program builds against (the public headers,
# libreprise.a, libreprise.so.$(SO_MAJOR), reprise.pc: `pkg-config --cflags --libs reprise`) and the
# Python package (which finds the library and the CLI where this put them).
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/reprise $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/share/vulkan/explicit_layer.d
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/reprise
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libreprise.a
	install -m 755 $(SO_REAL) $(DESTDIR)$(PREFIX)/lib/$(notdir $(SO_REAL))
	ln -sf $(notdir $(SO_REAL)) $(DESTDIR)$(PREFIX)/lib/$(SO_NAME)
	ln -sf $(SO_NAME) $(DESTDIR)$(PREFIX)/lib/libreprise.so
	for h in $(PUB_HDRS); do install -D -m 644 $$h $(DESTDIR)$(PREFIX)/include/reprise/$$h; done
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
	  'Name: reprise' 'Description: GPU command stream capture, replay and determinism checks' \
	  'Version: $(VERSION)' 'Requires.private: libzstd libxxhash libprotobuf-c vulkan' \
	  'Cflags: -I$${includedir}/reprise' 'Libs: -L$${libdir} -lreprise' 'Libs.private: -ldl -lpthread -lm' \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/reprise.pc
	if [ -n "$(PYVER)" ]; then install -d $(DESTDIR)$(PYSITE)/reprise && \
	  install -m 644 python/reprise/*.py $(DESTDIR)$(PYSITE)/reprise/ && \
	  printf '%s\n' '# written by make install' 'LIBDIR = "$(PREFIX)/lib"' 'BINDIR = "$(PREFIX)/bin"' \
	    > $(DESTDIR)$(PYSITE)/reprise/_installed.py; \
	else echo "install: no $(PYTHON): the Python package is not installed"; fi
	$(INSTALL_EXTRA)

# `make dist`: the build of build/dist, every program linked with a run path relative to itself
# (a linker option file, so that $$ORIGIN reaches the linker unexpanded), assembled by
# scripts/dist.sh into $(DIST_DIR) with the libraries a bare machine may lack, and packed.
# It runs from wherever it is unpacked: scripts/gpu-check.sh there runs every GPU path.
dist-tree:
	@mkdir -p $(DIST_BUILD)
	printf '%s\n' '-rpath=$$ORIGIN/../lib/reprise:$$ORIGIN:$$ORIGIN/..:$$ORIGIN/../..' \
	  > $(DIST_BUILD)/rpath.opt
	$(MAKE) BUILD=$(DIST_BUILD) CFLAGS="-O2 -g" LDFLAGS=-Wl,@$(abspath $(DIST_BUILD))/rpath.opt all
	scripts/dist.sh $(DIST_BUILD) $(DIST_DIR)
dist: dist-tree
	tar -C build -czf build/$(DIST_NAME).tar.gz $(DIST_NAME)
	@echo "dist: build/$(DIST_NAME).tar.gz ($$(du -h build/$(DIST_NAME).tar.gz | cut -f1))"

format-check:
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h')

# Set-up commands of the README: install Debian packages (as root) then run.
demo:
	scripts/deps.sh build
	$(MAKE) all
	scripts/demo.sh $(BUILD)

test:
	scripts/deps.sh test
	$(MAKE) check
	$(MAKE) asan

clean:
	rm -rf build

-include $(ALL_OBJ:.o=.d) $(TESTS:=.d) $(FUZZMODE_OBJ:.o=.d)
