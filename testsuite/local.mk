# SPDX-License-Identifier: GPL-2.0-or-later
check_PROGRAMS += testsuite/unit/plugin_tests
testsuite_unit_plugin_tests_SOURCES = testsuite/unit/plugin_main.cc \
	testsuite/unit/lifecycle_test.cc testsuite/unit/plugin_config_test.cc
testsuite_unit_plugin_tests_CXXFLAGS = $(AM_CXXFLAGS) $(CATCH2_CFLAGS)
testsuite_unit_plugin_tests_LDADD = libk8sdra_core.la

TESTS += testsuite/unit/plugin_tests testsuite/check-plugin-exports.sh
EXTRA_DIST += testsuite/check-plugin-exports.sh
