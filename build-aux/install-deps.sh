#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Install exactly the Debian packages this project needs to build, test and
# run its local cluster (clang and its compiler-rt for the libFuzzer targets of
# testsuite/run-fuzz; gcc's ASan/UBSan/TSan runtimes come with g++; ccache
# keeps compiled objects between runs, see testsuite/run-tests).
# expect and patch run SchedMD's regression tests (testsuite/slurm-suite).
# Idempotent: does nothing when all are present.
# Run as root on Debian 12.
set -eu

PACKAGES="
  g++ make autoconf automake libtool pkg-config dpkg-dev
  libcurl4-openssl-dev rapidjson-dev libhwloc-dev hwloc libyaml-cpp-dev catch2
  libslurm-dev slurmctld slurmd slurm-client slurm-wlm-basic-plugins
  python3 python3-pytest python3-pytest-xdist python3-yaml openssl ca-certificates procps
  binutils clang libclang-rt-14-dev ccache
  expect patch
"

missing=""
for p in $PACKAGES; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = "installed" ] || missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing:$missing; run this script as root" >&2
	exit 1
fi
echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
