#!/usr/bin/env bash
# Installs the dependencies, builds warnings-as-errors and runs the whole suite: the unit tier
# under AddressSanitizer + UBSan (clang, in the tree that also builds the libFuzzer targets), then
# the privileged (namespaces), vm (qemu lab) and browser tiers (clang, no sanitizer), then each
# libFuzzer target for a bounded time.
# In CI (CI=true; .ci/run sets it) a tier whose prerequisite is missing fails instead of skipping,
# and any skipped test fails its executable (tests/support/ci_skip_policy.h, ci_no_skip.sh). The
# vm tier includes the privileged tests run again inside a Debian 6.12 guest, which has sch_netem
# (tests/vm/privileged_in_guest.sh: two guests side by side, about 4 min).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
source deploy/configure.sh
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
  known=$(ninja -C "$build" -t targets all | sed -n 's/^\([^:/]*\): phony$/\1/p')
  (cd "$build" && ctest -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p') | grep -Fxf <(echo "$known") || true
}

stage "build: unit tier and libFuzzer targets, one clang tree under ASan + UBSan (-Werror)"
# One tree serves both: every library compiled once by clang-14 with ASan, UBSan and libFuzzer's
# coverage instrumentation (fuzz/flags.cmake); the unit tests and this binary link the sanitizer
# runtime, the fuzz targets the fuzzer's main as well. Two separate trees (gcc for the unit tier,
# clang for fuzzing) compiled the project twice. -g1: line tables (what sanitizer reports and
# backtraces need) at a fraction of full debug info's compile and link time.
debug_flags=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1)
asan_cache=build-asan/CMakeCache.txt
if [ -f "$asan_cache" ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++-14' "$asan_cache"; then
  rm -rf build-asan  # made by another compiler: CMake cannot switch in place
fi
CC=clang-14 CXX=clang++-14 fc_configure build-asan "${debug_flags[@]}" -DFC_WERROR=ON -DFC_FUZZ=ON \
  >/dev/null
# fabric-chaos too: process-level unit tests start the real binary.
cmake --build build-asan -j"$jobs" --target fabric-chaos \
  fuzz_scenario fuzz_topology fuzz_api fuzz_ibnetdiscover \
  $(tier_targets build-asan -L unit)

status=0
stage "unit tier under ASan + UBSan"
# Side by side: unit tests hold no timed assertions and use their own temporary paths, and a slow
# disk (one CI run's ASan binaries took 11 s of wall time for 0.04 s of CPU) costs less in pairs.
# (Building the Debug tree beside them saved 4 s of 738: both are CPU-bound on two cores.)
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest -L unit -j"$jobs" --output-on-failure --output-junit "$artifacts/unit-asan.xml") || status=1

stage "build: privileged, vm and browser tiers (clang, Debug, -Werror)"
# The unit tier ran above under the sanitizers; here the binaries that drive real namespaces,
# guests and the browser. The soak label is not built.
# No debug information: nothing in these tiers reads it, and -g1 cost 2-16 % of a file's compile
# time here (run_execution.cc 8.6 s against 8.5 s, model_test.cc 12.0 s against 10.0 s).
# clang-14 rather than gcc: at -O0 it compiled run_execution.cc and e2e_run_test.cc with 0.67
# and 0.64 of gcc's CPU time (three alternated runs each), and this stage is all compiling.
test_cache=build-test/CMakeCache.txt
if [ -f "$test_cache" ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++-14' "$test_cache"; then
  rm -rf build-test  # made by another compiler: CMake cannot switch in place
fi
CC=clang-14 CXX=clang++-14 fc_configure build-test -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG= -DCMAKE_C_FLAGS_DEBUG= -DFC_WERROR=ON >/dev/null
# The benchmarks are not built here (bench/ says how to run them): they cost 15-20 s of this
# stage, and the suite's budget is 50 minutes.
cmake --build build-test -j"$jobs" --target fabric-chaos $(tier_targets build-test -LE 'unit|soak')

stage "privileged, browser, ibsim, ddp, slurm and deploy tiers"
# A lab left on this machine by an interrupted earlier run holds the fixed namespace names the
# tests use, and every test would wait for it and fail. In CI the machine is the suite's own:
# say what was left and take it down (its processes, Slurm daemons and namespaces) first.
if [ "${CI:-}" = true ] && ip netns list | grep -q '^fcl-'; then
  echo "== a namespace lab left by an earlier run: $(ip netns list | awk '/^fcl-/ {print $1}' | xargs)"
  build-test/app/fabric-chaos lab down || status=1
fi
# First, with nothing else on the CPU: these tests compare scheduled, observed and recovered
# timings, and a compiler starting or stopping between a run's baseline and its recovery window
# shifts the workload's bandwidth by more than the 10 % that "recovered" allows.
# The ibsim tier (a simulated InfiniBand subnet, tests/ib/) runs here too: its OpenSM and ibsim
# sleep between MADs, so they take no CPU from the timed tests.
(cd build-test && FC_ARTIFACTS="$artifacts" ctest -L 'privileged|browser|ibsim|ddp|slurm|deploy' -LE 'vm|soak' \
  --output-on-failure --output-junit "$artifacts/tiers-privileged.xml") || status=1

stage "vm tier (soak is left to bench-style runs: ctest -L soak)"
# Two single-guest tests at a time, one TCG vCPU each; a lab of several guests alone
# (tests/vm/CMakeLists.txt, tests/vm/cores.json).
(cd build-test && FC_ARTIFACTS="$artifacts" ctest -L vm -LE soak -j2 \
  --resource-spec-file "$(pwd)/../tests/vm/cores.json" --output-on-failure \
  --output-junit "$artifacts/tiers-vm.xml") || status=1

# 20 s each here (the suite's time budget); deploy/fuzz.sh alone runs 60 s, or FC_FUZZ_SECONDS.
export FC_FUZZ_SECONDS=${FC_FUZZ_SECONDS:-20}
stage "libFuzzer targets (clang), ${FC_FUZZ_SECONDS} s each, side by side"
FC_FUZZ_BUILD_DIR=build-asan bash deploy/fuzz.sh --prebuilt || status=1
stage "done (status $status)"
exit $status
