#!/usr/bin/env bash
# Usage: infra/docker/base-image.sh [--lambda]
#
# Makes sure the Docker engine in DOCKER_HOST has the images the SAM loop needs:
#
# - `follow-seckill/local-base`: a small root file system of this machine's own (busybox and
#   the host's glibc libraries), always built here, in which the project's emulator bridge
#   runs (infra/docker/bridge.sh);
# - with --lambda, Lambda's base image for the host's architecture,
#   public.ecr.aws/lambda/provided:al2023-<arch>, on which `sam local` builds its emulation
#   image (it adds the runtime interface emulator it ships). The real image is used when the
#   engine has it or can pull it; only when neither works is the local base tagged under its
#   name, and this says so: a stand-in that runs the functions' bootstraps (they need only
#   glibc) but is not Amazon Linux 2023. `sam local` must then run with --skip-pull-image.
#
# Prints one line per image: its tag and whether it is the real one or the stand-in.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
lambda=0
case ${1:-} in
--lambda) lambda=1 ;;
"") ;;
*) echo "usage: infra/docker/base-image.sh [--lambda]" >&2; exit 2 ;;
esac

die() {
    echo "base-image: $*" >&2
    exit 1
}

case $(uname -m) in
x86_64) arch=x86_64 ; libdir=x86_64-linux-gnu ; loader=ld-linux-x86-64.so.2 ;;
aarch64) arch=arm64 ; libdir=aarch64-linux-gnu ; loader=ld-linux-aarch64.so.1 ;;
*) die "no Lambda architecture for $(uname -m)" ;;
esac
local_base=follow-seckill/local-base:latest
lambda_base=public.ecr.aws/lambda/provided:al2023-$arch

has_image() { docker image inspect "$1" >/dev/null 2>&1; }

# The environment of Lambda's provided.al2023 image, so the functions see the same paths.
lambda_env=(
    --change 'ENV PATH=/var/lang/bin:/usr/local/bin:/usr/bin:/bin:/opt/bin'
    --change 'ENV LD_LIBRARY_PATH=/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib'
    --change 'ENV LAMBDA_TASK_ROOT=/var/task'
    --change 'ENV LAMBDA_RUNTIME_DIR=/var/runtime'
    --change 'ENV TZ=:/etc/localtime'
    --change 'WORKDIR /var/task'
)

build_local_base() {
    local busybox rootfs lib
    busybox=$(command -v busybox || true)
    # Static, or it would need libraries the root file system lacks (ldd refuses a static one).
    if [[ -z $busybox ]] || ldd "$busybox" >/dev/null 2>&1; then
        # shellcheck source=infra/apt-install.sh
        . "$root/infra/apt-install.sh"
        apt_install busybox-static >/dev/null || die "apt-get install busybox-static failed"
        busybox=/bin/busybox
    fi
    rootfs=$(mktemp -d)
    # shellcheck disable=SC2064 # the path is fixed now
    trap "rm -rf '$rootfs'" RETURN
    mkdir -p "$rootfs"/{bin,lib64,etc,tmp,var/task,var/runtime,var/rapid,opt,usr/bin,proc,sys,dev}
    chmod 1777 "$rootfs/tmp"
    cp "$busybox" "$rootfs/bin/busybox"
    for applet in $("$rootfs/bin/busybox" --list); do
        [[ -e $rootfs/bin/$applet ]] || ln -s busybox "$rootfs/bin/$applet"
    done
    # glibc and the GCC runtime, which a Rust binary for *-linux-gnu links against; at
    # /lib64 as on Amazon Linux, and where this machine's loader looks for them too.
    for lib in "$loader" libc.so.6 libm.so.6 libgcc_s.so.1 libdl.so.2 libpthread.so.0 \
        librt.so.1 libresolv.so.2 libnss_dns.so.2 libnss_files.so.2; do
        [[ -e /lib/$libdir/$lib ]] && cp -L "/lib/$libdir/$lib" "$rootfs/lib64/"
    done
    mkdir -p "$rootfs/lib"
    ln -s ../lib64 "$rootfs/lib/$libdir"
    [[ $arch == x86_64 ]] || ln -sf "../lib64/$loader" "$rootfs/lib/$loader"
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$rootfs/etc/passwd"
    printf 'root:x:0:\nnobody:x:65534:\n' >"$rootfs/etc/group"
    printf 'hosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
    tar -C "$rootfs" -c . | docker import --message follow-seckill-stand-in "${lambda_env[@]}" - "$local_base" >/dev/null
}

if ! has_image "$local_base"; then
    build_local_base
    echo "$local_base: built from busybox and this machine's glibc"
else
    echo "$local_base: present"
fi

((lambda)) || exit 0

if has_image "$lambda_base"; then
    if [[ $(docker image inspect -f '{{.Comment}}' "$lambda_base") == follow-seckill-stand-in ]]; then
        echo "$lambda_base: the project's stand-in (no Lambda base image could be pulled)"
    else
        echo "$lambda_base: present"
    fi
    exit 0
fi
if timeout 120 docker pull -q "$lambda_base" >/dev/null 2>&1; then
    echo "$lambda_base: pulled"
    exit 0
fi
# The stand-in: the local base under Lambda's tag, marked as such so that it is never taken
# for the real image (and a later pull can replace it: `docker rmi` it first).
docker tag "$local_base" "$lambda_base"
echo "$lambda_base: could not be pulled; tagged the project's stand-in (busybox and this" \
    "machine's glibc, not Amazon Linux 2023)"
