#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang-14 in build-fuzz and runs each one for
# FC_FUZZ_SECONDS (default 60) on a copy of its seed corpus fuzz/corpus/<target>/: new corpus
# entries stay in that copy, never in the repository. Prints, per target, the runs, the coverage
# and the crashes. Exit status: 0 = no crash, 1 = a target crashed (its log tail and the crashing
# input, kept under the work directory, are printed), 2 = missing tools or build failure.
# Needs the Debian packages clang-14 and libclang-rt-14-dev (deploy/install-deps.sh).
# --build-only stops after the build. --prebuilt skips configuring and building: FC_FUZZ_BUILD_DIR
# already holds the targets (deploy/test.sh builds them with the unit tier, in one clang tree).
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${FC_FUZZ_SECONDS:-60}
build=${FC_FUZZ_BUILD_DIR:-build-fuzz}
targets=(fuzz_scenario fuzz_topology fuzz_api fuzz_ibnetdiscover)
build_only=0
prebuilt=0
[ "${1:-}" = "--build-only" ] && build_only=1
[ "${1:-}" = "--prebuilt" ] && prebuilt=1

for tool in clang-14 clang++-14 cmake; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "fuzz.sh: missing $tool (Debian packages clang-14 libclang-rt-14-dev, cmake)" >&2
    exit 2
  fi
done

if [ "$prebuilt" -eq 1 ]; then
  for target in "${targets[@]}"; do
    if [ ! -x "$build/fuzz/$target" ]; then
      echo "fuzz.sh: --prebuilt, but $build/fuzz/$target was not built" >&2
      exit 2
    fi
  done
else
  launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  echo "fuzz.sh: configuring $build (clang-14, FC_FUZZ=ON)"
  source deploy/configure.sh
  if ! CC=clang-14 CXX=clang++-14 fc_configure "$build" -DFC_FUZZ=ON -DFC_BUILD_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" "${launcher[@]}" \
      >"$build.configure.log" 2>&1; then
    cat "$build.configure.log" >&2
    echo "fuzz.sh: configuring $build failed" >&2
    exit 2
  fi
  rm -f "$build.configure.log"
  echo "fuzz.sh: building ${targets[*]}"
  if ! cmake --build "$build" -j"${FC_FUZZ_JOBS:-2}" --target "${targets[@]}"; then
    echo "fuzz.sh: building the fuzz targets failed" >&2
    exit 2
  fi
fi
[ "$build_only" -eq 1 ] && exit 0

work=$(mktemp -d /tmp/fc-fuzz.XXXXXX)
failed=0
summary=()
# The targets run side by side (each single-threaded): three minutes of fuzzing in one of wall time.
declare -A pids seeds_of
for target in "${targets[@]}"; do
  dir="$work/$target"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp fuzz/corpus/"$target"/* "$dir/corpus/"
  seeds_of[$target]=$(find "$dir/corpus" -type f | wc -l)
  echo "fuzz.sh: $target for ${seconds}s on ${seeds_of[$target]} seeds"
  "$build/fuzz/$target" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$dir/artifacts/" "$dir/corpus" \
    >"$dir/log" 2>&1 &
  pids[$target]=$!
done
for target in "${targets[@]}"; do
  dir="$work/$target"
  rc=0
  wait "${pids[$target]}" || rc=$?
  seeds=${seeds_of[$target]}
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$dir/log" | grep -oE '[0-9]+$' |
    tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$dir/log" | tail -1 | grep -oE '[0-9]+')
  ft=$(grep -oE 'ft: [0-9]+' "$dir/log" | tail -1 | grep -oE '[0-9]+')
  corpus=$(find "$dir/corpus" -type f | wc -l)
  crashes=$(find "$dir/artifacts" -type f | wc -l)
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi  # died without an artifact
  line=$(printf '%-14s runs %-9s coverage %-5s edges %-6s features corpus %s->%s crashes %s' \
    "$target" "${runs:-?}" "${cov:-?}" "${ft:-?}" "$seeds" "$corpus" "$crashes")
  summary+=("$line")
  echo "$line"
  if [ "$crashes" -ne 0 ]; then
    failed=1
    echo "---- $target: last lines of $dir/log" >&2
    tail -n 60 "$dir/log" >&2
    for input in "$dir"/artifacts/*; do
      [ -f "$input" ] || continue
      echo "---- crashing input $input (reproduce: $build/fuzz/$target $input)" >&2
      head -c 2000 "$input" | od -c | head -n 40 >&2
    done
  fi
done

echo "fuzz.sh: summary (${seconds}s per target)"
printf '  %s\n' "${summary[@]}"
if [ "$failed" -ne 0 ]; then
  echo "fuzz.sh: CRASH found; logs and inputs kept in $work" >&2
  exit 1
fi
rm -rf "$work"
exit 0
