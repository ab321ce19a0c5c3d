#!/usr/bin/env python3
"""`cmake --install` and deploy/container/Containerfile agree with what the build makes:

- installing the build tree into a temporary prefix gives bin/fabric-chaos, the verbs fault
  libraries in lib/fabric-chaos, the dashboard in share/fabric-chaos/web, the systemd units in
  lib/systemd/system, and the paths the units and manifests name exist under /usr/local there;
- the installed binary runs (`--help`) from its new place;
- the runtime stage installs the Debian package of every shared library the binary links (ldd,
  then dpkg -S), beyond what debian:12-slim already has;
- the build stage builds every target the install rules name, and installs every -dev package
  deploy/install-deps.sh lists for the build.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# In debian:12-slim already (Priority: required, or their dependencies).
BASE_PACKAGES = {"libc6", "libstdc++6", "libgcc-s1", "zlib1g", "libzstd1", "liblzma5",
                 "libselinux1", "libpcre2-8-0", "libcap2", "libgcrypt20", "libgpg-error0",
                 "libsystemd0", "liblz4-1", "libudev1", "libmd0", "libbz2-1.0"}
# -dev packages install-deps.sh lists for the tests only.
TEST_ONLY_DEV = {"libgtest-dev", "libgmock-dev", "libclang-rt-14-dev"}
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL: " + message)
    return condition


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def stages(containerfile):
    """[(name, text)] per FROM, continuation lines joined."""
    text = re.sub(r"\\\n", " ", open(containerfile).read())
    out = []
    for line in text.splitlines():
        if line.startswith("FROM "):
            out.append([line, ""])
        elif out and not line.lstrip().startswith("#"):
            out[-1][1] += line + "\n"
    return out


def apt_packages(stage_text):
    packages = set()
    for match in re.finditer(r"apt-get install ([^&]*)", stage_text):
        packages |= {w for w in match.group(1).split() if not w.startswith("-")}
    return packages


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    prefix = tempfile.mkdtemp(prefix="fc-install-")
    try:
        out = run(["cmake", "--install", args.build_dir, "--prefix", prefix])
        check(out.returncode == 0, "cmake --install: " + out.stdout[-1500:] + out.stderr[-1500:])
        for path in ("bin/fabric-chaos", "lib/fabric-chaos/libfabric-chaos-verbs.so",
                     "share/fabric-chaos/web/index.html",
                     "lib/systemd/system/fabric-chaos-agent.service",
                     "lib/systemd/system/fabric-chaos-serve.service",
                     "share/doc/fabric-chaos/deployment.md"):
            check(os.path.exists(os.path.join(prefix, path)), "not installed: " + path)
        binary = os.path.join(prefix, "bin/fabric-chaos")
        # Every /usr/local path the units and manifests name, under the temporary prefix.
        named = set()
        for directory in ("deploy/systemd", "deploy/kubernetes"):
            for name in os.listdir(os.path.join(args.source_dir, directory)):
                text = open(os.path.join(args.source_dir, directory, name)).read()
                named |= set(re.findall(r"/usr/local/[\w./-]+", text))
        for path in sorted(named):
            rel = path[len("/usr/local/"):].rstrip(".")
            check(os.path.exists(os.path.join(prefix, rel)),
                  "%s is named by a unit or manifest but not installed" % path)
        out = run([binary, "--help"])
        check(out.returncode == 0 and "serve" in out.stdout + out.stderr,
              "the installed binary does not run: " + out.stderr[-500:])

        containerfile = os.path.join(args.source_dir, "deploy/container/Containerfile")
        (build_from, build), (runtime_from, runtime) = stages(containerfile)
        check("AS build" in build_from and "debian:12" in build_from,
              "the first stage is not the debian:12 build stage")
        check("COPY --from=build /usr/local/ /usr/local/" in runtime,
              "the runtime stage does not copy the installed prefix")
        runtime_packages = apt_packages(runtime)
        # The libraries the binary names itself (NEEDED); apt brings what those depend on.
        needed_names = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                                  run(["readelf", "-d", binary]).stdout)
        paths = dict(re.findall(r"^\s*(\S+) => (/\S+)", run(["ldd", binary]).stdout, re.M))
        libraries = [paths[name] for name in needed_names if name in paths]
        check(len(libraries) == len(needed_names),
              "ldd does not resolve every NEEDED library: %s" %
              sorted(set(needed_names) - set(paths)))
        needed = set()
        for library in libraries:
            owner = run(["dpkg", "-S", os.path.realpath(library)])
            if owner.returncode != 0:
                owner = run(["dpkg", "-S", library])
            if check(owner.returncode == 0, "no Debian package owns " + library):
                needed.add(owner.stdout.split(":")[0])
        missing = sorted(needed - runtime_packages - BASE_PACKAGES)
        check(not missing, "the runtime stage lacks %s (ldd of the binary)" % missing)
        print("runtime libraries: %d, from %d packages; all in the runtime stage or the base "
              "image" % (len(libraries), len(needed)) if not missing else "")

        targets = set(re.findall(r"--target ([\w -]+?)(?:\s*&&|\n)", build))
        built = set(" ".join(targets).split())
        install_targets = set()
        for root, _, files in os.walk(args.source_dir):
            if "/build" in root or "node_modules" in root:
                continue
            if "CMakeLists.txt" in files:
                text = open(os.path.join(root, "CMakeLists.txt")).read()
                for match in re.finditer(r"install\(TARGETS ([\w -]+?) (?:RUNTIME|LIBRARY)",
                                         text):
                    install_targets |= set(match.group(1).split())
        check(install_targets and install_targets <= built,
              "the build stage builds %s, the install rules need %s" %
              (sorted(built), sorted(install_targets)))
        deps = open(os.path.join(args.source_dir, "deploy/install-deps.sh")).read()
        dev = set(re.findall(r"\b(lib[\w.+-]+-dev)\b", deps)) - TEST_ONLY_DEV
        missing_dev = sorted(dev - apt_packages(build))
        check(not missing_dev, "the build stage lacks %s (deploy/install-deps.sh)" % missing_dev)
    finally:
        shutil.rmtree(prefix, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
