#!/bin/sh
# npm_setup.sh DIR: installs Microsoft's @vscode/debugadapter-testsupport
# into DIR (the build tree) for the dap_testsupport_* tests; skips (77)
# with the reason when node/npm are missing or the registry is unreachable.
dir=$1
if [ -d "$dir/node_modules/@vscode/debugadapter-testsupport" ]; then
    exit 0
fi
for t in node npm; do
    command -v $t >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done
mkdir -p "$dir"
if ! timeout 300 npm install --no-audit --no-fund --prefix "$dir" \
        @vscode/debugadapter-testsupport >"$dir/npm.log" 2>&1; then
    echo "SKIP: npm install @vscode/debugadapter-testsupport failed (offline?):"
    tail -5 "$dir/npm.log"
    exit 77
fi
