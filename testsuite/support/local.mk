# SPDX-License-Identifier: GPL-2.0-or-later
# testsuite/support/: what only tests and benchmarks call, kept out of the
# plugin (and so hwloc out of slurmctld): the hwloc fixture that makes
# synthetic nodes, the reference node ranking with its kept index, and a C
# ABI over inventories and placement (k8s_cons_tres_test.h).
noinst_LTLIBRARIES += libk8s_cons_tres_testsupport.la
libk8s_cons_tres_testsupport_la_SOURCES = \
	testsuite/support/k8s_cons_tres_test.h \
	testsuite/support/c_api.cc testsuite/support/c_api_bridge.h \
	testsuite/support/hwloc_fixture.cc testsuite/support/hwloc_fixture.h \
	testsuite/support/ranking.cc testsuite/support/ranking.h \
	testsuite/support/rank_index.cc testsuite/support/rank_index.h
libk8s_cons_tres_testsupport_la_CXXFLAGS = $(AM_CXXFLAGS) $(HWLOC_CFLAGS)
libk8s_cons_tres_testsupport_la_LIBADD = $(HWLOC_LIBS)
