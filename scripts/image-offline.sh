#!/usr/bin/env bash
# `make image` where a Docker daemon runs but no image registry is reachable (only Debian's
# package mirror and crates.io, as on the project's machines): the Dockerfile's two base
# images are made locally, then scripts/build-image.sh builds and checks the image with the
# unchanged deploy/docker/Dockerfile.
#
#   - the runtime base (for gcr.io/distroless/cc-debian12:nonroot): a minimal Debian 12
#     (`debootstrap --variant=minbase bookworm`), glibc and libgcc like distroless, but
#     with a shell and dpkg: a stand-in to check the image, not to ship;
#   - the build base (for rust:1.95-bookworm): the same system with gcc and libc6-dev, and
#     this machine's Rust toolchain (`rustc --print sysroot`) in /usr/local/rust;
#   - the crates: `cargo vendor --locked` into a copy of the build context (the working
#     tree's files, untracked ones included, ignored ones not) with a .cargo/config.toml
#     pointing cargo at them, so the build needs no network.
#
#   scripts/image-offline.sh [IMAGE]          (make image-offline; root, Docker daemon)
#
# The bases and the Debian tree are kept in $FRONTIER_IMAGE_CACHE (default
# ~/.cache/frontier/image-offline) and made again only when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${1:-frontier:dev}
CACHE=${FRONTIER_IMAGE_CACHE:-${HOME:-/root}/.cache/frontier/image-offline}
DOCKER=${DOCKER:-docker}
RUST_VERSION=$(rustc --version | awk '{print $2}')
RUNTIME_BASE=frontier-offline/runtime:bookworm
BUILD_BASE=frontier-offline/rust:$RUST_VERSION-bookworm
mkdir -p "$CACHE"

has_image() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }

if ! has_image "$RUNTIME_BASE" || ! has_image "$BUILD_BASE"; then
  if [ ! -x "$CACHE/rootfs/bin/sh" ]; then
    command -v debootstrap >/dev/null || { apt-get update -qq >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
    rm -rf "$CACHE/rootfs"
    echo "image-offline: debootstrap bookworm (minbase) into $CACHE/rootfs" >&2
    debootstrap --variant=minbase bookworm "$CACHE/rootfs" http://deb.debian.org/debian >"$CACHE/debootstrap.log" 2>&1
  fi
  tar -C "$CACHE/rootfs" -c . |
    "$DOCKER" import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$RUNTIME_BASE" >/dev/null
  build="$CACHE/rootfs-build"
  rm -rf "$build"
  cp -a "$CACHE/rootfs" "$build"
  cp /etc/resolv.conf "$build/etc/resolv.conf"
  chroot "$build" apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive chroot "$build" apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null
  chroot "$build" apt-get clean
  rm -f "$build/etc/resolv.conf"
  sysroot=$(rustc --print sysroot)
  mkdir -p "$build/usr/local/rust" "$build/usr/local/cargo"
  cp -a "$sysroot/bin" "$sysroot/lib" "$sysroot/libexec" "$build/usr/local/rust/"
  tar -C "$build" -c . |
    "$DOCKER" import -c 'ENV PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      -c 'ENV CARGO_HOME=/usr/local/cargo' - "$BUILD_BASE" >/dev/null
  rm -rf "$build"
  echo "image-offline: made $RUNTIME_BASE and $BUILD_BASE" >&2
fi

context=$(mktemp -d "$CACHE/context-XXXXXX")
trap 'rm -rf "$context"' EXIT
git ls-files -z --cached --others --exclude-standard | tar --null -T - -c | tar -x -C "$context"
mkdir -p "$context/.cargo"
(cd "$context" && cargo vendor --locked --versioned-dirs --quiet vendor >.cargo/config.toml)
# .dockerignore drops every `target` folder; some crates have source folders of that name.
printf '!vendor/*/src/target\n!vendor/*/src/target/**\n' >>"$context/.dockerignore"

FRONTIER_IMAGE_CONTEXT=$context \
FRONTIER_IMAGE_BUILD_ARGS="--network none --build-arg RUST_IMAGE=$BUILD_BASE --build-arg RUNTIME_IMAGE=$RUNTIME_BASE" \
  scripts/build-image.sh "$IMAGE"
