# SPDX-License-Identifier: GPL-2.0-or-later
check_PROGRAMS += testsuite/unit/lifecycle_tests
testsuite_unit_lifecycle_tests_SOURCES = testsuite/unit/lifecycle_main.cc \
	testsuite/unit/lifecycle_test.cc
testsuite_unit_lifecycle_tests_CXXFLAGS = $(AM_CXXFLAGS) $(CATCH2_CFLAGS)
testsuite_unit_lifecycle_tests_LDADD = libk8sdra_core.la

TESTS += testsuite/unit/lifecycle_tests testsuite/check-plugin-exports.sh
EXTRA_DIST += testsuite/check-plugin-exports.sh
