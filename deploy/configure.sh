# Sourced by deploy/test.sh and deploy/fuzz.sh: `fc_configure BUILD_DIR [cmake args...]` configures
# BUILD_DIR with Ninja. Ninja builds the many targets of a tier in parallel; CMake's Makefiles
# build the goals of one `make a b c` one after another (their top-level .NOTPARALLEL), which
# left one of the two cores idle for the whole unit-tier build. A build directory made earlier
# with another generator is started afresh, since CMake cannot switch generators in place.
fc_configure() {
  local dir=$1
  shift
  if [ -f "$dir/CMakeCache.txt" ] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt"; then
    echo "configure: $dir was made by another generator; configuring it afresh for Ninja"
    rm -rf "$dir"
  fi
  cmake -G Ninja -S . -B "$dir" "$@"
}
