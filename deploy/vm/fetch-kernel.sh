#!/usr/bin/env bash
# fetch-kernel.sh [--deb FILE] [--no-initramfs] [CACHE_DIR]
#
# Fetches the guest kernel of the VM lab: Debian's newest linux-image-6.12.N+deb12-amd64-unsigned
# (the full distribution kernel: sch_netem, rdma_rxe and 9p as modules), unpacks it into
# CACHE_DIR/kernel, runs depmod on it and leaves
#   CACHE_DIR/vmlinuz         -> kernel/boot/vmlinuz-<version>
#   CACHE_DIR/modules-dir     -> kernel/lib/modules/<version>
#   CACHE_DIR/kernel.version     <version>, e.g. 6.12.117+deb12-amd64
# then builds CACHE_DIR/initramfs.cpio.gz with make-initramfs.sh (unless --no-initramfs).
#
# CACHE_DIR defaults to /var/cache/fabric-chaos/vm. Idempotent: when the newest package is already
# unpacked it does nothing (and when the package index cannot be read it keeps what it has).
# --deb FILE unpacks a .deb you already have instead of downloading (offline machines).
# Only Debian packages are downloaded, with apt-get. Runs as root or as a user who can write
# CACHE_DIR.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=/var/cache/fabric-chaos/vm
deb=""
build_initramfs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --deb) deb=$(realpath "$2"); shift 2 ;;
    --no-initramfs) build_initramfs=0; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fetch-kernel: unknown option $1" >&2; exit 2 ;;
    *) cache=$1; shift ;;
  esac
done
say() { echo "fetch-kernel: $*"; }
die() { echo "fetch-kernel: $*" >&2; exit 1; }

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
# One fetch at a time per cache (two test runs may start together).
exec 9>"$cache/.fetch.lock"
flock 9

pattern='^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$'
newest_package() {
  apt-cache search --names-only "$pattern" 2>/dev/null | awk '{print $1}' | sort -V | tail -n 1
}

current=""
[ -f "$cache/kernel.version" ] && current=$(cat "$cache/kernel.version")
have_kernel() {
  [ -n "$current" ] && [ -f "$cache/kernel/boot/vmlinuz-$current" ] &&
    [ -f "$cache/kernel/lib/modules/$current/modules.dep" ]
}

if [ -z "$deb" ]; then
  package=$(newest_package)
  if [ -z "$package" ]; then
    say "no $pattern in the package index; running apt-get update"
    if ! apt-get update -q >/dev/null; then
      if have_kernel; then
        say "apt-get update failed; keeping kernel $current"
        package=""
      else
        die "apt-get update failed and no kernel is cached in $cache"
      fi
    fi
    package=$(newest_package)
  fi
  if [ -z "$package" ]; then
    have_kernel || die "no package matches $pattern (is bookworm-security or bookworm-backports in the apt sources?)"
  fi
  version=${package#linux-image-}
  version=${version%-unsigned}
  if [ -z "$package" ] || { have_kernel && [ "$current" = "$version" ]; }; then
    say "kernel $current already unpacked in $cache"
    version=$current
  else
    say "downloading $package"
    mkdir -p "$cache/debs"
    rm -f "$cache/debs/"*.deb.partial
    # apt-get download drops privileges to _apt: let it write there to avoid the sandbox warning.
    chown _apt "$cache/debs" 2>/dev/null || true
    (cd "$cache/debs" && apt-get download -q "$package") || die "apt-get download $package failed"
    deb=$(ls -t "$cache/debs/${package}_"*.deb | head -n 1)
    # Keep only this package (for an offline re-unpack with --deb); older kernels go.
    find "$cache/debs" -name '*.deb' ! -name "$(basename "$deb")" -delete
  fi
fi

if [ -n "$deb" ]; then
  [ -f "$deb" ] || die "$deb does not exist"
  package=$(dpkg-deb -f "$deb" Package)
  [[ $package =~ $pattern ]] || die "$deb is $package, not a package matching $pattern"
  version=${package#linux-image-}
  version=${version%-unsigned}
  if have_kernel && [ "$current" = "$version" ]; then
    say "kernel $current already unpacked in $cache"
  else
    say "unpacking $(basename "$deb")"
    rm -rf "$cache/kernel.new"
    dpkg-deb -x "$deb" "$cache/kernel.new"
    [ -f "$cache/kernel.new/boot/vmlinuz-$version" ] || die "$deb has no boot/vmlinuz-$version"
    # The package ships no modules.dep (its postinst runs depmod); the guest's modprobe needs it.
    say "running depmod for $version"
    depmod -b "$cache/kernel.new" "$version"
    rm -rf "$cache/kernel"
    mv "$cache/kernel.new" "$cache/kernel"
    # The host's /boot is not touched: this kernel is only ever booted by qemu.
  fi
fi

ln -sfn "kernel/boot/vmlinuz-$version" "$cache/vmlinuz"
ln -sfn "kernel/lib/modules/$version" "$cache/modules-dir"
echo "$version" >"$cache/kernel.version.tmp"
mv "$cache/kernel.version.tmp" "$cache/kernel.version"
for m in sch_netem rdma_rxe 9p 9pnet_virtio virtio_net crc32_generic; do
  grep -q "/$m\.ko" "$cache/kernel/lib/modules/$version/modules.dep" ||
    die "kernel $version has no $m module"
done
say "kernel $version: $cache/vmlinuz, modules in $cache/modules-dir"

exec 9>&-
if [ "$build_initramfs" = 1 ]; then
  exec "$here/make-initramfs.sh" "$cache"
fi
