# SPDX-License-Identifier: GPL-2.0-or-later
check_PROGRAMS += testsuite/unit/plugin_tests
testsuite_unit_plugin_tests_SOURCES = testsuite/unit/plugin_main.cc \
	testsuite/unit/lifecycle_test.cc testsuite/unit/plugin_config_test.cc \
	testsuite/unit/engine_test.cc testsuite/unit/engine_choice_test.cc
testsuite_unit_plugin_tests_CPPFLAGS = $(AM_CPPFLAGS) -DK8S_CONS_TRES_SRCDIR='"$(abs_top_srcdir)"'
testsuite_unit_plugin_tests_CXXFLAGS = $(AM_CXXFLAGS) $(CATCH2_CFLAGS) $(HWLOC_CFLAGS)
testsuite_unit_plugin_tests_LDADD = libk8s_cons_tres_testsupport.la libk8s_cons_tres_core.la $(HWLOC_LIBS)

TESTS += testsuite/unit/plugin_tests testsuite/check-plugin-exports.sh testsuite/check-layout.sh
# check-plugin-exports.sh checks against the release configure selected.
AM_TESTS_ENVIRONMENT = SLURM_SRC='$(SLURM_SRC)' SLURM_PREFIX='$(SLURM_PREFIX)'; \
	export SLURM_SRC SLURM_PREFIX;
EXTRA_DIST += testsuite/check-plugin-exports.sh testsuite/check-layout.sh etc/k8s_cons_tres.conf.example \
	etc/rbac.yaml etc/rbac-node-discovery.yaml etc/deviceclasses.yaml etc/slurm.conf.snippet etc/gres.conf.example
