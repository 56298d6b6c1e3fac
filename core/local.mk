# SPDX-License-Identifier: GPL-2.0-or-later
# (seeded by the lead; owned by the core)
# core/: DRA topology model, ledger, placement, the engine and its C ABI
# (k8s_cons_tres.h, k8s_cons_tres_ctld.h): only what slurmctld runs, no hwloc. Its Catch2
# tests, fixture tool and benchmark link testsuite/support/ as well.
noinst_LTLIBRARIES += libk8s_cons_tres_core.la
libk8s_cons_tres_core_la_SOURCES = core/k8s_cons_tres.h core/dra_types.h core/lifecycle.cc \
	core/plugin_config.cc core/plugin_config.h \
	core/engine.cc core/engine.h core/feed.h \
	core/ctld_api.cc core/k8s_cons_tres_ctld.h \
	core/discovery_api.cc core/external_nodes.cc core/external_nodes.h \
	core/cpu_mask.h \
	core/build_notes.cc core/build_notes.h \
	core/interned.cc core/interned.h \
	core/inventory.cc core/inventory.h \
	core/ledger.cc core/ledger.h \
	core/hostlist.cc core/hostlist.h \
	core/network_position.cc core/network_position.h \
	core/topology_conf.cc core/topology_conf.h \
	core/placement.cc core/placement.h \
	core/placement_cache.h \
	core/placement_key.cc core/placement_key.h \
	core/pool_select.cc core/pool_select.h \
	core/slice_devices.cc core/slice_devices.h \
	core/slurm_map.cc core/slurm_map.h \
	core/topology.h \
	core/topology_build.cc core/topology_build.h \
	core/topology_build_attrs.cc core/topology_build_attrs.h \
	core/topology_build_gpu.cc \
	core/topology_reserved.cc core/topology_reserved.h
libk8s_cons_tres_core_la_CXXFLAGS = $(AM_CXXFLAGS)
libk8s_cons_tres_core_la_LIBADD = $(PTHREAD_LIBS)

# The JSON round trip uses the client's ResourceSlice codec, compiled in
# directly so these tests do not depend on how libk8s_cons_tres_client is built.
check_PROGRAMS += testsuite/unit/core_tests
testsuite_unit_core_tests_SOURCES = testsuite/unit/core_main.cc \
	testsuite/unit/core_test_util.h \
	testsuite/unit/core_model_test.cc \
	testsuite/unit/core_ledger_test.cc \
	testsuite/unit/core_placement_test.cc \
	testsuite/unit/core_rank_index_test.cc \
	testsuite/unit/core_oracle_test.cc \
	testsuite/unit/core_fixture_test.cc \
	testsuite/unit/core_driver_variants_test.cc \
	testsuite/unit/core_capi_test.cc \
	testsuite/unit/core_json_roundtrip_test.cc \
	testsuite/unit/core_external_nodes_test.cc \
	testsuite/unit/core_network_position_test.cc \
	k8s_client/json.cc k8s_client/string_pool.cc k8s_sync/slice_json.cc k8s_sync/compact_slice.cc
testsuite_unit_core_tests_CXXFLAGS = $(AM_CXXFLAGS) $(CATCH2_CFLAGS) $(HWLOC_CFLAGS)
testsuite_unit_core_tests_LDADD = libk8s_cons_tres_testsupport.la libk8s_cons_tres_core.la $(HWLOC_LIBS) $(PTHREAD_LIBS)
TESTS += testsuite/unit/core_tests

# Fixture generator: hwloc topology -> ResourceSlices JSON (or --summary).
noinst_PROGRAMS += testsuite/fixtures/k8s_cons_tres_fixture_gen
testsuite_fixtures_k8s_cons_tres_fixture_gen_SOURCES = \
	testsuite/fixtures/k8s_cons_tres_fixture_gen.cc \
	k8s_client/json.cc k8s_client/string_pool.cc k8s_sync/slice_json.cc k8s_sync/compact_slice.cc
testsuite_fixtures_k8s_cons_tres_fixture_gen_CXXFLAGS = $(AM_CXXFLAGS) $(HWLOC_CFLAGS)
testsuite_fixtures_k8s_cons_tres_fixture_gen_LDADD = libk8s_cons_tres_testsupport.la libk8s_cons_tres_core.la $(HWLOC_LIBS) $(PTHREAD_LIBS)

# Benchmark (not a test): make testsuite/bench/bench_placement
EXTRA_PROGRAMS += testsuite/bench/bench_placement
testsuite_bench_bench_placement_SOURCES = testsuite/bench/bench_placement.cc
testsuite_bench_bench_placement_CXXFLAGS = $(AM_CXXFLAGS) $(HWLOC_CFLAGS)
testsuite_bench_bench_placement_LDADD = libk8s_cons_tres_testsupport.la libk8s_cons_tres_core.la $(HWLOC_LIBS) $(PTHREAD_LIBS)
