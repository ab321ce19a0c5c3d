#!/usr/bin/env bash
# Installs the dependencies, builds warnings-as-errors and runs the whole suite: the unit tier
# under AddressSanitizer + UBSan, then every tier (unit, privileged namespaces, vm qemu lab, browser),
# then each libFuzzer target for a bounded time.
# In CI (CI=true) a tier whose prerequisite is missing fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
jobs=$(nproc)
artifacts=${FC_ARTIFACTS:-$(pwd)/artifacts}
mkdir -p "$artifacts"

echo "== dashboard (web/: npm ci, bundle uPlot and the sources into web/dist)"
(cd web && npm ci --no-audit --no-fund && npm run build)

echo "== build (Debug, -Werror)"
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Debug -DFC_WERROR=ON >/dev/null
cmake --build build-test -j"$jobs"

echo "== build (unit tier under ASan + UBSan)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DFC_WERROR=ON -DFC_SANITIZE=ON >/dev/null
# Only what the unit tier runs (each test's target has the test's name), plus the binary that
# process-level unit tests start: the privileged and vm binaries run from build-test.
unit_targets=$(cd build-asan && ctest -N -L unit | sed -n 's/^ *Test *#[0-9]*: //p')
cmake --build build-asan -j"$jobs" --target fabric-chaos $unit_targets

status=0
echo "== unit tier under ASan + UBSan"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest -L unit --output-on-failure --output-junit "$artifacts/unit-asan.xml") || status=1

echo "== all tiers (unit, privileged, vm, browser; the soak label is left to bench-style runs)"
(cd build-test && FC_ARTIFACTS="$artifacts" ctest -LE soak --output-on-failure \
  --output-junit "$artifacts/all.xml") || status=1

echo "== libFuzzer targets (clang), ${FC_FUZZ_SECONDS:-60} s each"
bash deploy/fuzz.sh || status=1
exit $status
