#!/usr/bin/env bash
# Runs a command the way Lambda runs a provided.al2023 function, as far as a Linux host can:
# chroot into an empty root that holds only the layer at /opt and the function at /var/task,
# both mounted read-only, a fresh tmpfs at /tmp, /dev/{null,zero,urandom}, and an older glibc and
# libstdc++ in /lib64 (the cross toolchain's, standing in for AL2023's, which Lambda's
# LD_LIBRARY_PATH puts first). arm64 programs run through qemu-user, which the root also holds,
# as does aws-lambda-rie when given. The environment is Lambda's (AWS Lambda Developer Guide,
# "Defined runtime environment variables"), plus the -e variables.
#
#   lambda-chroot.sh --opt DIR [--task DIR] [--rie FILE] [--bind SRC:DST]... [--container] [-e K=V]... -- COMMAND [ARG]...
#
# --bind adds a read-only bind mount (the convert container's /usr/local/bin and /etc/ssl);
# --container gives the command only the -e variables (an image's own environment, as ECS
# does), not Lambda's.
# COMMAND is a path inside the root; an arm64 ELF is started through /usr/bin/qemu-aarch64-static.
# With --rie, COMMAND is what /usr/local/bin/aws-lambda-rie starts (its flags go in -- before it).
# Mounts live in a private mount namespace (unshare), so they vanish with the process; the root
# is a tmpfs over /mnt inside that namespace. Needs root (mount, chroot).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=layers/gdal/layer-env.sh
. "$HERE/layer-env.sh"

if [ "${LAMBDA_CHROOT_INNER:-}" != 1 ]; then
	exec unshare --mount --propagation private env LAMBDA_CHROOT_INNER=1 "$0" "$@"
fi

opt="" task="" rie="" envs=() binds=() container=""
while [ $# -gt 0 ]; do
	case "$1" in
	--opt) opt="$(readlink -f "$2")"; shift 2 ;;
	--task) task="$(readlink -f "$2")"; shift 2 ;;
	--rie) rie="$(readlink -f "$2")"; shift 2 ;;
	-e) envs+=("$2"); shift 2 ;;
	--bind) binds+=("$2"); shift 2 ;;
	--container) container=1; shift ;;
	--) shift; break ;;
	*) echo "lambda-chroot.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ -n "$opt" ] && [ -d "$opt" ] || { echo "lambda-chroot.sh: --opt DIR is required" >&2; exit 2; }
[ $# -gt 0 ] || { echo "lambda-chroot.sh: no command" >&2; exit 2; }
qemu="$(command -v "$QEMU")" || { echo "lambda-chroot.sh: $QEMU not found (make layer-deps)" >&2; exit 2; }

# The root is a tmpfs mounted over /mnt in this private mount namespace, and everything else is
# mounted under it: the host sees none of it, nothing is created on the host's disk, and it all
# goes away with the namespace's last process, however that process ends (a test's SIGKILL
# included). Nothing is ever deleted through a mount.
root=/mnt
for d in "$opt" "$task" "$rie"; do
	case "$d" in /mnt | /mnt/*) echo "lambda-chroot.sh: $d is under /mnt, which the root covers" >&2; exit 2 ;; esac
done
mount -t tmpfs -o size=64m,mode=0755 lambda-root "$root"
mkdir -p "$root"/{opt,var/task,tmp,dev,lib64,usr/bin,usr/local/bin,etc}
bind_ro() { # source target
	mount --bind "$1" "$2"
	mount -o remount,bind,ro "$2"
}
bind_ro "$opt" "$root/opt"
if [ -n "$task" ]; then bind_ro "$task" "$root/var/task"; fi
mount -t tmpfs -o size=512m tmpfs "$root/tmp"
for d in null zero urandom; do : >"$root/dev/$d"; mount --bind "/dev/$d" "$root/dev/$d"; done
# Older C and C++ runtimes first on LD_LIBRARY_PATH, as on AL2023: only DT_RPATH keeps them out.
for l in /usr/$TRIPLET/lib/libc.so.6 /usr/$TRIPLET/lib/libm.so.6 /usr/$TRIPLET/lib/libstdc++.so.6 /usr/$TRIPLET/lib/libgcc_s.so.1; do
	if [ -e "$l" ]; then cp -L "$l" "$root/lib64/"; fi
done
: >"$root/usr/bin/$QEMU"; bind_ro "$qemu" "$root/usr/bin/$QEMU"
if [ -n "$rie" ]; then : >"$root/usr/local/bin/aws-lambda-rie"; bind_ro "$rie" "$root/usr/local/bin/aws-lambda-rie"; fi
printf 'root:x:0:0::/tmp:/sbin/nologin\n' >"$root/etc/passwd"
for b in "${binds[@]}"; do
	src="$(readlink -f "${b%%:*}")"; dst="$root/${b#*:}"
	mkdir -p "$dst"; bind_ro "$src" "$dst"
done

lambda_env=(
	"PATH=/var/lang/bin:/usr/local/bin:/usr/bin/:/bin:/opt/bin"
	"LD_LIBRARY_PATH=/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib"
	"LAMBDA_TASK_ROOT=/var/task" "LAMBDA_RUNTIME_DIR=/var/runtime" "TZ=:UTC" "LANG=en_US.UTF-8" "HOME=/tmp"
	"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=${AWS_LAMBDA_FUNCTION_MEMORY_SIZE:-1024}"
)
if [ -n "$container" ]; then lambda_env=(); fi
is_arm64() { # path inside the root
	local f="$root$1"
	[ -f "$f" ] && [ "$(head -c 20 "$f" | od -An -tx1 -j18 -N2 | tr -d ' ')" = b700 ]
}
cmd=("$@")
if [ -n "$rie" ]; then
	# rie's own flags come first; the first argument that is a file in the root is the bootstrap.
	for i in "${!cmd[@]}"; do
		if is_arm64 "${cmd[$i]}"; then cmd=("${cmd[@]:0:$i}" "/usr/bin/$QEMU" "${cmd[@]:$i}"); break; fi
	done
	cmd=(/usr/local/bin/aws-lambda-rie "${cmd[@]}")
elif is_arm64 "${cmd[0]}"; then
	cmd=("/usr/bin/$QEMU" "${cmd[@]}")
fi
chroot_bin="$(command -v chroot)"
cd "$root"
# exec: the command keeps this process's PID, so a test that stops rie by PID stops rie itself,
# and the namespace, with every mount in it, ends with it.
exec env -i "${lambda_env[@]}" "${envs[@]}" "$chroot_bin" "$root" "${cmd[@]}"
