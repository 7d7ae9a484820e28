#!/bin/sh
# Assembles the runtime tree of Tollgate from a built checkout: what `npm pack` ships (package.json "files") plus the
# production dependencies. The container image's build stage runs it; so does the test of these recipes.
#   assemble-runtime.sh CHECKOUT DEST
# CHECKOUT must be built (npm ci && npm run build). Dependencies: `npm ci --omit=dev` in DEST from the lock file, or, when
# TOLLGATE_DEPENDENCIES_FROM names a node_modules folder (a machine without registry access), a link to it.
set -eu
checkout=$(cd "$1" && pwd)
dest=$2
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$checkout" && npm pack --silent --pack-destination "$work" >/dev/null)
tar xzf "$work"/tollgate-*.tgz -C "$dest" --strip-components=1
cp "$checkout/package-lock.json" "$dest/"
chmod 0755 "$dest/dist/bin/tollgate.js"
# The start and health-check scripts travel with the runtime (the image's entry point, the systemd unit's ExecStart).
mkdir -p "$dest/deploy"
cp -R "$checkout/deploy/scripts" "$dest/deploy/"
if [ -n "${TOLLGATE_DEPENDENCIES_FROM:-}" ]; then
  ln -s "$TOLLGATE_DEPENDENCIES_FROM" "$dest/node_modules"
else
  (cd "$dest" && npm ci --omit=dev --no-audit --no-fund)
fi
echo "assembled $(node -p "require('$dest/package.json').version") in $dest"
