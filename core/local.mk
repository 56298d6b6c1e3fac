# SPDX-License-Identifier: GPL-2.0-or-later
# (seeded by the lead; owned by the core)
noinst_LTLIBRARIES += libk8sdra_core.la
libk8sdra_core_la_SOURCES = core/k8sdra.h core/dra_types.h core/lifecycle.cc \
	core/plugin_config.cc core/plugin_config.h
libk8sdra_core_la_CXXFLAGS = $(AM_CXXFLAGS) $(HWLOC_CFLAGS)
libk8sdra_core_la_LIBADD = $(HWLOC_LIBS) $(PTHREAD_LIBS)
