# SPDX-License-Identifier: GPL-2.0-or-later
# k8s_client/: the Kubernetes REST client (libcurl + RapidJSON + yaml-cpp),
# its Catch2 tests, the probe the pytest scenarios drive, and the benchmarks.
noinst_LTLIBRARIES += libk8sdra_client.la
libk8sdra_client_la_SOURCES = \
	k8s_client/api_status.cc k8s_client/api_status.h \
	k8s_client/backoff.cc k8s_client/backoff.h \
	k8s_client/claim_json.cc k8s_client/claim_json.h \
	k8s_client/claim_queue.cc k8s_client/claim_queue.h \
	k8s_client/claim_owner.cc k8s_client/claim_owner.h \
	k8s_client/claim_writer.cc k8s_client/claim_writer.h \
	k8s_client/holder_pod.cc k8s_client/holder_pod.h \
	k8s_client/holder_writer.cc \
	k8s_client/compact_slice.cc k8s_client/compact_slice.h \
	k8s_client/compact_devices.cc k8s_client/compact_devices.h \
	k8s_client/config.cc k8s_client/config.h \
	k8s_client/cow_map.h \
	k8s_client/http_client.cc k8s_client/http_client.h \
	k8s_client/informer.cc k8s_client/informer.h \
	k8s_client/inventory_handlers.cc k8s_client/inventory_handlers.h \
	k8s_client/inventory_watcher.cc k8s_client/inventory_watcher.h \
	k8s_client/json.cc k8s_client/json.h \
	k8s_client/kube_node.cc k8s_client/kube_node.h \
	k8s_client/json_stream.cc k8s_client/json_stream.h \
	k8s_client/list_page.cc k8s_client/list_page.h \
	k8s_client/lease.cc k8s_client/lease.h \
	k8s_client/log.h \
	k8s_client/slice_json.cc k8s_client/slice_json.h \
	k8s_client/snapshot.cc k8s_client/snapshot.h \
	k8s_client/string_pool.cc k8s_client/string_pool.h \
	k8s_client/thread_name.h \
	k8s_client/stopper.h \
	k8s_client/engine_feed.cc k8s_client/engine_feed.h \
	k8s_client/inventory_update.cc k8s_client/inventory_update.h \
	k8s_client/node_builder.cc k8s_client/node_builder.h \
	k8s_client/job_claims.cc k8s_client/job_claims.h \
	k8s_client/claim_sync.cc k8s_client/claim_sync.h k8s_client/claim_gate.cc \
	k8s_client/view_json.cc k8s_client/view_json.h
# engine_feed/job_claims/claim_sync/view_json connect the client to core/'s
# Engine; only the plugin (which links both) pulls them in.
libk8sdra_client_la_CXXFLAGS = $(AM_CXXFLAGS) $(CURL_CFLAGS) $(YAMLCPP_CFLAGS) $(HWLOC_CFLAGS)
libk8sdra_client_la_LIBADD = $(CURL_LIBS) $(YAMLCPP_LIBS) $(PTHREAD_LIBS)

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
	testsuite/unit/client_driver_variants_tests.cc \
	testsuite/unit/client_job_claims_tests.cc \
	testsuite/unit/client_holder_pod_tests.cc \
	testsuite/unit/client_list_page_tests.cc \
	testsuite/unit/client_node_builder_tests.cc \
	testsuite/unit/client_kube_node_tests.cc
testsuite_unit_client_tests_CPPFLAGS = $(AM_CPPFLAGS) \
	-DK8SDRA_FIXTURE_DIR='"$(abs_top_srcdir)/testsuite/fixtures/json"'
testsuite_unit_client_tests_CXXFLAGS = $(AM_CXXFLAGS) $(CATCH2_CFLAGS) $(HWLOC_CFLAGS)
testsuite_unit_client_tests_LDADD = libk8sdra_client.la libk8sdra_core.la $(HWLOC_LIBS)
TESTS += testsuite/unit/client_tests

# Driven by testsuite/integration/test_client_k8s.py (K8SDRA_BUILDDIR=builddir).
check_PROGRAMS += testsuite/integration/k8sdra_client_probe
testsuite_integration_k8sdra_client_probe_SOURCES = \
	testsuite/integration/k8sdra_client_probe.cc
testsuite_integration_k8sdra_client_probe_LDADD = libk8sdra_client.la

# Benchmarks: make testsuite/bench/bench_ingest testsuite/bench/bench_claims
EXTRA_PROGRAMS += testsuite/bench/bench_ingest testsuite/bench/bench_claims
testsuite_bench_bench_ingest_SOURCES = testsuite/bench/bench_ingest.cc
testsuite_bench_bench_ingest_LDADD = libk8sdra_client.la
testsuite_bench_bench_claims_SOURCES = testsuite/bench/bench_claims.cc
testsuite_bench_bench_claims_LDADD = libk8sdra_client.la

EXTRA_DIST += k8s_client/README.md testsuite/integration/test_client_k8s.py \
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
testsuite_bench_bench_feed_LDADD = libk8sdra_client.la libk8sdra_core.la $(CURL_LIBS) $(YAMLCPP_LIBS) $(HWLOC_LIBS) $(PTHREAD_LIBS)

# Claim and holder pod writes at a job rate through ClaimSync:
# make testsuite/bench/bench_holders
EXTRA_PROGRAMS += testsuite/bench/bench_holders
testsuite_bench_bench_holders_SOURCES = testsuite/bench/bench_holders.cc
testsuite_bench_bench_holders_CXXFLAGS = $(AM_CXXFLAGS) $(HWLOC_CFLAGS)
testsuite_bench_bench_holders_LDADD = libk8sdra_client.la libk8sdra_core.la $(CURL_LIBS) $(YAMLCPP_LIBS) $(HWLOC_LIBS) $(PTHREAD_LIBS)
