#!/bin/sh
# Builds cmdgate's task image, coding-agent-executor:latest by default, without any
# registry: a minimal Debian (debootstrap --variant=minbase, from Debian's archive) with
# git, ca-certificates, curl, iptables (for the network guard, which runs as root in a
# container of its own; a task's user cannot use it), Python with pip, Go and Node with
# npm (the dependency managers a task's installs use), and a non-root user "agent" (uid
# 1000), imported with `docker import`. The root file system is kept as a tarball in
# the cache, named by a hash of this script and the release, so a rerun only imports it
# again; an image of that hash already present is left as it is.
#
#   scripts/docker-image.sh [IMAGE]        (root; needs debootstrap and a Docker engine)
#
# Environment: CMDGATE_IMAGE_SUITE (default bookworm), CMDGATE_IMAGE_MIRROR (default
# http://deb.debian.org/debian), CMDGATE_IMAGE_CACHE (default ~/.cache/cmdgate-image).
# docker/Dockerfile describes the full image (Node, Python, Go, Java) for machines that
# reach a registry.
set -eu
image=${1:-coding-agent-executor:latest}
suite=${CMDGATE_IMAGE_SUITE:-bookworm}
mirror=${CMDGATE_IMAGE_MIRROR:-http://deb.debian.org/debian}
cache=${CMDGATE_IMAGE_CACHE:-${HOME:-/root}/.cache/cmdgate-image}
packages=git,ca-certificates,curl,procps,iptables
# The language tools, installed by apt in the new system (debootstrap's own resolver
# cannot configure npm's dependencies).
tools="python3-pip golang-go npm"

key=$( (cat "$0"; echo "$suite $mirror $packages $tools") | sha256sum | cut -c1-16)
if [ "$(docker image inspect --format '{{index .Config.Labels "cmdgate.image.key"}}' "$image" 2>/dev/null || true)" = "$key" ]; then
  echo "docker-image: $image is up to date ($key)" >&2
  exit 0
fi
mkdir -p "$cache"
tarball="$cache/rootfs-$key.tar"
if [ ! -s "$tarball" ]; then
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  echo "docker-image: debootstrap $suite into $root" >&2
  debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >&2
  mount -t proc proc "$root/proc"
  # (Under set -e a failing command in the trap ends the script with its status: the
  # umount of a /proc already unmounted must not fail the build that succeeded.)
  trap 'umount "$root/proc" 2>/dev/null || true; rm -rf "$root"' EXIT
  # shellcheck disable=SC2086 # the package names
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $tools >&2
  umount "$root/proc"
  trap 'rm -rf "$root"' EXIT
  chroot "$root" useradd --create-home --uid 1000 --shell /bin/bash agent
  mkdir -p "$root/workspace/project" "$root/workspace/tmp"
  chroot "$root" chown -R agent:agent /workspace
  chroot "$root" apt-get clean
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
  tar -C "$root" -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  # The tarballs of earlier versions of the image are of no use any more.
  find "$cache" -maxdepth 1 -name 'rootfs-*.tar' ! -name "rootfs-$key.tar" -delete
fi
echo "docker-image: import $tarball as $image" >&2
docker import \
  --change 'USER agent' \
  --change 'WORKDIR /workspace/project' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["sleep", "infinity"]' \
  --change "LABEL cmdgate.image.key=$key" \
  "$tarball" "$image" >/dev/null
echo "docker-image: $image ready ($key)" >&2
