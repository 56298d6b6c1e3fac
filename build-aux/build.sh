#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Build the tree out of source into ./build (configure once, then make).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
	./autogen.sh >/dev/null 2>&1 || ./autogen.sh
fi
mkdir -p build
cd build
[ -f Makefile ] || ../configure ${K8S_CONFIGURE_FLAGS:-}
make -j"$(nproc)" ${K8S_MAKE_TARGETS:-all}
