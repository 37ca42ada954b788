# The two commands a newcomer needs (see README.md):
#   make demo    set up, build, and run quip's main job
#   make check   set up, build, and run every test (release, ASan+UBSan, fuzz)
#
# The demo model (scripts/fetch_models.sh) lives outside the repository, in MODELS_DIR.
# Build folders: build/ (release, with tests and benchmarks),
# build-asan/ (AddressSanitizer + UndefinedBehaviorSanitizer), build-fuzz/ (clang, libFuzzer).

JOBS         ?= $(shell nproc)
FUZZ_SECONDS ?= 60
TOKENIZER_FUZZ_SECONDS ?= 20
SHARED       ?= $(CURDIR)/../shared
MODEL        ?=
MODELS_DIR   ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/quip/models
PREFIX       ?= /usr/local
DESTDIR      ?=

CMAKE_FLAGS = -G Ninja -DQUIP_SHARED_DIR=$(SHARED) -DQUIP_MODELS_DIR=$(MODELS_DIR)

.PHONY: all setup models configure build demo check test check-asan fuzz bench format clean \
	install deb

all: build

setup:
	@scripts/setup.sh

# The demo model and the trained models of the golden tests; tests that
# need one skip without it (and fail when CI is set).
models: setup
	@scripts/fetch_models.sh "$(MODELS_DIR)" smollm2 gemma3-270m >/dev/null || true

configure: setup
	@cmake -S . -B build $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build build -j $(JOBS)

# Only what the demo runs: quip, and quip-synth for the fallback model.
demo: configure
	@cmake --build build -j $(JOBS) --target quip quip-synth
	@model="$(MODEL)"; [ -n "$$model" ] || model=$$(scripts/fetch_models.sh "$(MODELS_DIR)") || model=; \
	  scripts/demo.sh "$$model"

test: build models
	cd build && ctest --output-on-failure -j $(JOBS)

# Optimized (-O2 -g): the sanitizers see the same code paths, and the
# numeric tests (forward passes, quantizers) run several times faster than at -O0.
check-asan: setup models
	@cmake -S . -B build-asan $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DQUIP_SANITIZE=address,undefined -DQUIP_BENCHMARKS=OFF >/dev/null
	@cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS)

fuzz: setup
	@CC=clang CXX=clang++ cmake -S . -B build-fuzz $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DQUIP_FUZZ=ON >/dev/null
	@cmake --build build-fuzz -j $(JOBS)
	@scripts/fuzz.sh build-fuzz/fuzz_gguf_reader $(FUZZ_SECONDS) "$(SHARED)" gguf
	@QUIP_FUZZ_VOCAB="$(SHARED)/vocab/ggml-vocab-llama-spm.gguf" \
	  scripts/fuzz.sh build-fuzz/fuzz_tokenizer $(TOKENIZER_FUZZ_SECONDS) "$(SHARED)" text
	@QUIP_FUZZ_VOCAB="$(SHARED)/vocab/ggml-vocab-llama-bpe.gguf" \
	  scripts/fuzz.sh build-fuzz/fuzz_tokenizer $(TOKENIZER_FUZZ_SECONDS) "$(SHARED)" text
	@scripts/fuzz.sh build-fuzz/fuzz_jinja $(TOKENIZER_FUZZ_SECONDS) "$(SHARED)" jinja
	@scripts/fuzz.sh build-fuzz/fuzz_reasoning $(TOKENIZER_FUZZ_SECONDS) "$(SHARED)" reasoning
	@scripts/fuzz.sh build-fuzz/fuzz_gbnf $(TOKENIZER_FUZZ_SECONDS) "$(SHARED)" gbnf
	@scripts/fuzz.sh build-fuzz/fuzz_json_schema $(TOKENIZER_FUZZ_SECONDS) "$(SHARED)" json_schema
	@scripts/fuzz.sh build-fuzz/fuzz_config $(TOKENIZER_FUZZ_SECONDS) "$(SHARED)" config
	@scripts/fuzz.sh build-fuzz/fuzz_prefix_cache $(TOKENIZER_FUZZ_SECONDS) "$(SHARED)" edits
	@scripts/fuzz.sh build-fuzz/fuzz_store $(TOKENIZER_FUZZ_SECONDS) "$(SHARED)" edits
	@scripts/fuzz.sh build-fuzz/fuzz_sse $(TOKENIZER_FUZZ_SECONDS) "$(SHARED)" sse
	@scripts/fuzz.sh build-fuzz/fuzz_api $(TOKENIZER_FUZZ_SECONDS) "$(SHARED)" api
	@scripts/fuzz.sh build-fuzz/fuzz_model_stores $(TOKENIZER_FUZZ_SECONDS) "$(SHARED)" manifests
	@scripts/fuzz.sh build-fuzz/fuzz_hf_listing $(TOKENIZER_FUZZ_SECONDS) "$(SHARED)" hf

check: test check-asan fuzz

# quip, its man page quip(1) and the bash, zsh and fish completions under
# $(DESTDIR)$(PREFIX) (as `cmake --install build --prefix PREFIX` does).
install: configure
	@cmake --build build -j $(JOBS) --target quip quip_docs
	@DESTDIR="$(DESTDIR)" cmake --install build --prefix "$(PREFIX)"

# The Debian package, build-deb/quip_VERSION_ARCH.deb (`apt install ./quip_*.deb`),
# from a build of only what it holds.
deb: setup
	@cmake -S . -B build-deb $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=Release -DQUIP_TESTS=OFF \
	  -DQUIP_BENCHMARKS=OFF >/dev/null
	@cmake --build build-deb -j $(JOBS) --target quip quip_docs
	@cd build-deb && cpack -G DEB

bench: build
	build/quip_benchmarks

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf build build-asan build-fuzz build-deb
