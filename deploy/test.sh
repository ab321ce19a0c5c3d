#!/usr/bin/env bash
# Installs the dependencies, builds warnings-as-errors and runs the whole suite: the unit tier
# under AddressSanitizer + UBSan, then the privileged (namespaces), vm (qemu lab) and browser
# tiers, then each libFuzzer target for a bounded time.
# In CI (CI=true) a tier whose prerequisite is missing fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
jobs=$(nproc)
artifacts=${FC_ARTIFACTS:-$(pwd)/artifacts}
mkdir -p "$artifacts"

# Stage times go to the log, so that a slow stage shows up in CI output.
stage() { echo "== [$(date +%H:%M:%S), +${SECONDS}s] $*"; }

stage "dashboard (web/: npm ci, bundle uPlot and the sources into web/dist)"
(cd web && npm ci --no-audit --no-fund && npm run build)

# Each test executable is a target with the test's name; tests run by node or sh are not.
tier_targets() {
  local build=$1
  shift
  local known
  known=$(cmake --build "$build" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')
  (cd "$build" && ctest -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p') | grep -Fxf <(echo "$known") || true
}

stage "build: unit tier under ASan + UBSan (-Werror)"
# -g1: line tables (what sanitizer reports and backtraces need) at a fraction of full debug
# info's compile and link time.
debug_flags=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1)
cmake -S . -B build-asan "${debug_flags[@]}" -DFC_WERROR=ON -DFC_SANITIZE=ON >/dev/null
# fabric-chaos too: process-level unit tests start the real binary.
cmake --build build-asan -j"$jobs" --target fabric-chaos $(tier_targets build-asan -L unit)

status=0
stage "unit tier under ASan + UBSan"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest -L unit --output-on-failure --output-junit "$artifacts/unit-asan.xml") || status=1

stage "build: privileged, vm and browser tiers (Debug, -Werror)"
# The unit tier ran above under the sanitizers; here the binaries that drive real namespaces,
# guests and the browser, plus the benchmarks (built, not run). The soak label is not built.
cmake -S . -B build-test "${debug_flags[@]}" -DFC_WERROR=ON >/dev/null
cmake --build build-test -j"$jobs" --target fabric-chaos store_batch_bench \
  $(tier_targets build-test -LE 'unit|soak')

# The fuzz targets (clang) build meanwhile at the lowest CPU priority: the tiers below mostly wait
# on timers, packets and guests, and nice 19 gives the CPU back whenever a test wants it.
stage "build: libFuzzer targets (clang, nice 19, in the background; log in artifacts/)"
nice -n 19 bash deploy/fuzz.sh --build-only >"$artifacts/fuzz-build.log" 2>&1 &
fuzz_build=$!

stage "privileged, vm and browser tiers (soak is left to bench-style runs: ctest -L soak)"
(cd build-test && FC_ARTIFACTS="$artifacts" ctest -LE 'unit|soak' --output-on-failure \
  --output-junit "$artifacts/tiers.xml") || status=1

stage "waiting for the fuzz build"
if ! wait "$fuzz_build"; then
  cat "$artifacts/fuzz-build.log"
  status=1
fi
stage "libFuzzer targets (clang), ${FC_FUZZ_SECONDS:-60} s each, side by side"
bash deploy/fuzz.sh || status=1
stage "done (status $status)"
exit $status
