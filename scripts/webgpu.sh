#!/bin/sh
# scripts/webgpu.sh DIR — Dawn, Chromium's WebGPU implementation, for the tests: the npm package
# `webgpu` (prebuilt dawn.node, N-API, on Vulkan) and an ML framework that runs on it,
# TensorFlow.js's WebGPU backend (`@tensorflow/tfjs-core`, `@tensorflow/tfjs-backend-webgpu`),
# installed under DIR/node_modules, pinned to the versions the tests were written against. Run the programs of tests/webgpu with
# REPRISE_WEBGPU=DIR. Idempotent. Exit 0 done; 4 when node/npm are missing or the
# registry cannot be reached (the reason on stderr).
set -eu
dir=${1:?usage: scripts/webgpu.sh DIR}
version=0.6.2
tfjs=4.22.0
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
has() { # has PACKAGE VERSION: installed at that version
    [ -f "$dir/node_modules/$1/package.json" ] &&
        grep -q "\"version\": \"$2\"" "$dir/node_modules/$1/package.json"
}
has webgpu $version && has @tensorflow/tfjs-backend-webgpu $tfjs && exit 0
for c in node npm; do
    command -v $c >/dev/null 2>&1 || {
        echo "webgpu: $c not found (apt-get install nodejs npm)" >&2
        exit 4
    }
done
# Node trusts its own CA bundle, npm too: where the system's bundle has more (a proxy that
# inspects TLS has its CA installed there), let them trust it as well
if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r /etc/ssl/certs/ca-certificates.crt ]; then
    NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
    export NODE_EXTRA_CA_CERTS
fi
# --ignore-scripts: its postinstall only concerns macOS; no script of a dependency runs here
if ! (cd "$dir" && npm install --no-audit --no-fund --ignore-scripts --no-save --prefix "$dir" \
    "webgpu@$version" "@tensorflow/tfjs-core@$tfjs" "@tensorflow/tfjs-backend-webgpu@$tfjs" \
    >"$dir/npm.log" 2>&1); then
    echo "webgpu: npm install webgpu@$version tfjs@$tfjs failed (see $dir/npm.log)" >&2
    exit 4
fi
