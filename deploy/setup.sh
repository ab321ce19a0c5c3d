#!/usr/bin/env bash
# Installs the dependencies and builds an optimised fabric-chaos into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
(cd web && npm ci --no-audit --no-fund && npm run build)  # the dashboard, served from web/dist
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFC_BUILD_TESTS=OFF
cmake --build build -j"$(nproc)"
echo "setup: built $(pwd)/build/app/fabric-chaos"
