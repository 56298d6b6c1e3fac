# SPDX-License-Identifier: GPL-2.0-or-later
# k8s_client/: the generic Kubernetes REST client (libcurl + RapidJSON +
# yaml-cpp: HTTP, kubeconfig, informers, list/watch, JSON, backoff).
noinst_LTLIBRARIES += libk8s_cons_tres_client.la
libk8s_cons_tres_client_la_SOURCES = \
	k8s_client/api_status.cc k8s_client/api_status.h \
	k8s_client/backoff.cc k8s_client/backoff.h \
	k8s_client/config.cc k8s_client/config.h \
	k8s_client/cow_map.h \
	k8s_client/http_client.cc k8s_client/http_client.h \
	k8s_client/informer.cc k8s_client/informer.h \
	k8s_client/json.cc k8s_client/json.h \
	k8s_client/json_stream.cc k8s_client/json_stream.h \
	k8s_client/list_page.cc k8s_client/list_page.h \
	k8s_client/log.h \
	k8s_client/string_pool.cc k8s_client/string_pool.h \
	k8s_client/thread_name.h \
	k8s_client/stopper.h
# Knows nothing of core/ or k8s_sync/ (build-aux/check-layout.sh checks it).
libk8s_cons_tres_client_la_CXXFLAGS = $(AM_CXXFLAGS) $(CURL_CFLAGS) $(YAMLCPP_CFLAGS)
libk8s_cons_tres_client_la_LIBADD = $(CURL_LIBS) $(YAMLCPP_LIBS) $(PTHREAD_LIBS)

