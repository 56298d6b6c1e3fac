# SPDX-License-Identifier: GPL-2.0-or-later
# k8s_sync/: Kubernetes <-> engine over k8s_client/, its Catch2 tests, the
# probe the pytest scenarios drive, and the benchmarks.
noinst_LTLIBRARIES += libk8s_cons_tres_sync.la
libk8s_cons_tres_sync_la_SOURCES = \
	k8s_sync/claim_event.cc k8s_sync/claim_event.h \
	k8s_sync/claim_json.cc k8s_sync/claim_json.h \
	k8s_sync/claim_queue.cc k8s_sync/claim_queue.h \
	k8s_sync/claim_owner.cc k8s_sync/claim_owner.h \
	k8s_sync/claim_writer.cc k8s_sync/claim_writer.h \
	k8s_sync/holder_pod.cc k8s_sync/holder_pod.h \
	k8s_sync/holder_writer.cc \
	k8s_sync/compact_slice.cc k8s_sync/compact_slice.h \
	k8s_sync/compact_devices.cc k8s_sync/compact_devices.h \
	k8s_sync/inventory_handlers.cc k8s_sync/inventory_handlers.h \
	k8s_sync/inventory_watcher.cc k8s_sync/inventory_watcher.h \
	k8s_sync/kube_node.cc k8s_sync/kube_node.h \
	k8s_sync/lease.cc k8s_sync/lease.h \
	k8s_sync/slice_json.cc k8s_sync/slice_json.h \
	k8s_sync/taint_rule.cc k8s_sync/taint_rule.h \
	k8s_sync/snapshot.cc k8s_sync/snapshot.h \
	k8s_sync/engine_feed.cc k8s_sync/engine_feed.h k8s_sync/start.cc \
	k8s_sync/inventory_update.cc k8s_sync/inventory_update.h \
	k8s_sync/node_builder.cc k8s_sync/node_builder.h \
	k8s_sync/job_claims.cc k8s_sync/job_claims.h \
	k8s_sync/claim_sync.cc k8s_sync/claim_sync.h \
	k8s_sync/claim_gate.cc \
	k8s_sync/user_names.cc k8s_sync/user_names.h \
	k8s_sync/view_json.cc k8s_sync/view_json.h
# The engine's two directions through the client: slices, claims and pods
# into core/'s Engine; its claims, holder pods, Lease and view back out.
libk8s_cons_tres_sync_la_CXXFLAGS = $(AM_CXXFLAGS) $(CURL_CFLAGS) $(HWLOC_CFLAGS)

check_PROGRAMS += testsuite/unit/client_tests
testsuite_unit_client_tests_SOURCES = testsuite/unit/client_main.cc \
	testsuite/unit/client_test_util.h \
	testsuite/unit/client_backoff_tests.cc \
	testsuite/unit/client_claim_json_tests.cc \
	testsuite/unit/client_claim_owner_tests.cc \
	testsuite/unit/client_lease_tests.cc \
	testsuite/unit/client_claim_sync_tests.cc testsuite/unit/client_claim_gate_tests.cc \
	testsuite/unit/client_handler_bounds_tests.cc \
	testsuite/unit/client_compact_slice_tests.cc \
	testsuite/unit/client_config_tests.cc \
	testsuite/unit/client_cow_map_tests.cc \
	testsuite/unit/client_json_stream_tests.cc \
	testsuite/unit/client_json_limits_tests.cc \
	testsuite/unit/client_claim_queue_tests.cc \
	testsuite/unit/client_freshness_tests.cc \
	testsuite/unit/client_slice_json_tests.cc \
	testsuite/unit/client_taint_rule_tests.cc \
	testsuite/unit/client_driver_variants_tests.cc \
	testsuite/unit/client_job_claims_tests.cc \
	testsuite/unit/client_holder_pod_tests.cc \
	testsuite/unit/client_list_page_tests.cc \
	testsuite/unit/client_node_builder_tests.cc \
	testsuite/unit/client_kube_node_tests.cc \
	testsuite/unit/client_start_tests.cc
testsuite_unit_client_tests_CPPFLAGS = $(AM_CPPFLAGS) \
	-DK8S_CONS_TRES_FIXTURE_DIR='"$(abs_top_srcdir)/testsuite/fixtures/json"'
testsuite_unit_client_tests_CXXFLAGS = $(AM_CXXFLAGS) $(CATCH2_CFLAGS) $(HWLOC_CFLAGS)
testsuite_unit_client_tests_LDADD = libk8s_cons_tres_sync.la libk8s_cons_tres_client.la libk8s_cons_tres_testsupport.la libk8s_cons_tres_core.la $(HWLOC_LIBS)
TESTS += testsuite/unit/client_tests

# Driven by testsuite/integration/test_client_k8s.py (K8S_CONS_TRES_BUILDDIR=builddir).
check_PROGRAMS += testsuite/integration/k8s_cons_tres_client_probe
testsuite_integration_k8s_cons_tres_client_probe_SOURCES = \
	testsuite/integration/k8s_cons_tres_client_probe.cc
testsuite_integration_k8s_cons_tres_client_probe_LDADD = libk8s_cons_tres_sync.la libk8s_cons_tres_client.la

# Benchmarks: make testsuite/bench/bench_ingest testsuite/bench/bench_claims
EXTRA_PROGRAMS += testsuite/bench/bench_ingest testsuite/bench/bench_claims
testsuite_bench_bench_ingest_SOURCES = testsuite/bench/bench_ingest.cc
testsuite_bench_bench_ingest_LDADD = libk8s_cons_tres_sync.la libk8s_cons_tres_client.la
testsuite_bench_bench_claims_SOURCES = testsuite/bench/bench_claims.cc
testsuite_bench_bench_claims_LDADD = libk8s_cons_tres_sync.la libk8s_cons_tres_client.la

EXTRA_DIST += k8s_client/README.md k8s_sync/README.md testsuite/integration/test_client_k8s.py \
	testsuite/fixtures/json/claim_allocated.json \
	testsuite/fixtures/json/claim_grouped.json \
	testsuite/fixtures/json/claim_pending.json \
	testsuite/fixtures/json/dra_cpu_grouped.json \
	testsuite/fixtures/json/dra_cpu_individual.json \
	testsuite/fixtures/json/nvidia_gpu.json \
	testsuite/fixtures/json/dra_cpu_v0.2_individual_pcie.json \
	testsuite/fixtures/json/example_partitions.json \
	testsuite/fixtures/json/nvidia_main_numa_list.json \
	testsuite/fixtures/json/nvidia_mig.json \
	testsuite/fixtures/json/nvidia_taints.json \
	testsuite/fixtures/json/nvidia_v25.12.json \
	testsuite/fixtures/json/nvidia_v25.3.json \
	testsuite/fixtures/json/nvidia_v25.8.json

# The Kubernetes -> engine path end to end: make testsuite/bench/bench_feed
EXTRA_PROGRAMS += testsuite/bench/bench_feed
testsuite_bench_bench_feed_SOURCES = testsuite/bench/bench_feed.cc
testsuite_bench_bench_feed_CXXFLAGS = $(AM_CXXFLAGS) $(HWLOC_CFLAGS)
testsuite_bench_bench_feed_LDADD = libk8s_cons_tres_sync.la libk8s_cons_tres_client.la libk8s_cons_tres_testsupport.la libk8s_cons_tres_core.la $(CURL_LIBS) $(YAMLCPP_LIBS) $(HWLOC_LIBS) $(PTHREAD_LIBS)

# Claim and holder pod writes at a job rate through ClaimSync:
# make testsuite/bench/bench_holders
EXTRA_PROGRAMS += testsuite/bench/bench_holders
testsuite_bench_bench_holders_SOURCES = testsuite/bench/bench_holders.cc
testsuite_bench_bench_holders_CXXFLAGS = $(AM_CXXFLAGS) $(HWLOC_CFLAGS)
testsuite_bench_bench_holders_LDADD = libk8s_cons_tres_sync.la libk8s_cons_tres_client.la libk8s_cons_tres_testsupport.la libk8s_cons_tres_core.la $(CURL_LIBS) $(YAMLCPP_LIBS) $(HWLOC_LIBS) $(PTHREAD_LIBS)
