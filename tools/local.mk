# SPDX-License-Identifier: GPL-2.0-or-later
# tools/: k8s-cons-tres-inspect, installed with the plugin, and its tests.
# The report logic is a small library so the unit tests can drive it.
noinst_LTLIBRARIES += libk8s_cons_tres_inspect.la
libk8s_cons_tres_inspect_la_SOURCES = \
	tools/inspect_report.cc tools/inspect_report.h \
	tools/inspect_format.cc \
	tools/inspect_sources.cc tools/inspect_sources.h \
	tools/inspect_topology.cc tools/inspect_topology.h
libk8s_cons_tres_inspect_la_CXXFLAGS = $(AM_CXXFLAGS) $(HWLOC_CFLAGS)

bin_PROGRAMS += tools/k8s-cons-tres-inspect
tools_k8s_cons_tres_inspect_SOURCES = tools/k8s_cons_tres_inspect.cc
tools_k8s_cons_tres_inspect_CXXFLAGS = $(AM_CXXFLAGS) $(HWLOC_CFLAGS)
tools_k8s_cons_tres_inspect_LDADD = libk8s_cons_tres_inspect.la libk8s_cons_tres_sync.la libk8s_cons_tres_client.la libk8s_cons_tres_core.la \
	$(CURL_LIBS) $(YAMLCPP_LIBS) $(HWLOC_LIBS) $(PTHREAD_LIBS)

# Per driver variant: recorded slices -> report fields.
check_PROGRAMS += testsuite/unit/inspect_tests
testsuite_unit_inspect_tests_SOURCES = testsuite/unit/inspect_main.cc \
	testsuite/unit/inspect_report_tests.cc
testsuite_unit_inspect_tests_CPPFLAGS = $(AM_CPPFLAGS) \
	-DK8S_CONS_TRES_FIXTURE_DIR='"$(abs_top_srcdir)/testsuite/fixtures/json"'
testsuite_unit_inspect_tests_CXXFLAGS = $(AM_CXXFLAGS) $(CATCH2_CFLAGS) $(HWLOC_CFLAGS)
testsuite_unit_inspect_tests_LDADD = libk8s_cons_tres_inspect.la libk8s_cons_tres_sync.la libk8s_cons_tres_client.la libk8s_cons_tres_testsupport.la libk8s_cons_tres_core.la \
	$(CURL_LIBS) $(YAMLCPP_LIBS) $(HWLOC_LIBS) $(PTHREAD_LIBS)
TESTS += testsuite/unit/inspect_tests

# Recorded-style slices for `testsuite/cluster up --slices` (test_real_drivers.py).
EXTRA_DIST += testsuite/fixtures/recorded/make-recorded.sh \
	testsuite/fixtures/recorded/slices.json testsuite/fixtures/recorded/claims.json \
	testsuite/integration/test_real_drivers.py
