# SPDX-License-Identifier: GPL-2.0-or-later
# The Slurm-facing shared object. Only these files include Slurm headers, from
# the configured Slurm source tree of exactly the selected release. One
# adapter per ABI family (configure's SLURM_ABI) over the shared sources;
# slurm_compat.h holds the type, name and header differences.
plugindir = $(PLUGINDIR)
plugin_LTLIBRARIES = select_k8s_cons_tres.la
select_k8s_cons_tres_la_SOURCES = \
	plugin/slurm_compat.h \
	plugin/select_common.c plugin/select_common.h \
	plugin/inner_select.c plugin/inner_select.h \
	plugin/core_bridge.c plugin/core_bridge.h \
	plugin/k8s_view.c plugin/k8s_view.h \
	plugin/k8s_gpu.c plugin/k8s_gpu.h \
	plugin/k8s_jobs.c plugin/k8s_jobs.h \
	plugin/k8s_steer.c plugin/k8s_steer.h \
	plugin/k8s_agent.c plugin/k8s_agent.h \
	plugin/k8s_nodes.c plugin/k8s_nodes.h
if SLURM_ABI_22_05
select_k8s_cons_tres_la_SOURCES += plugin/select_22_05.c
endif
if SLURM_ABI_23_11
select_k8s_cons_tres_la_SOURCES += plugin/select_23_11.c
endif
if SLURM_ABI_25_05
select_k8s_cons_tres_la_SOURCES += plugin/select_25_05.c
endif
EXTRA_DIST += plugin/select_22_05.c plugin/select_23_11.c plugin/select_25_05.c
# Slurm's own config.h must win over anything of ours; its headers trip
# -Wunused-parameter and -Wsign-compare in inline helpers we do not own.
select_k8s_cons_tres_la_CPPFLAGS = -I$(SLURM_SRC) -I$(SLURM_SRC)/src/common \
	-I$(top_srcdir)
# Visibility here is the version script's job, so no -fvisibility=hidden.
select_k8s_cons_tres_la_CFLAGS = -fPIC $(WARN_FLAGS) -Wno-unused-parameter -Wno-sign-compare
select_k8s_cons_tres_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/plugin/select_k8s_cons_tres.map \
	-Wl,-z,relro
# No -z now: slurmctld-only functions (lock_slurmctld) must stay lazily bound
# so that slurmd and the client commands can load the plugin too.
# The Slurm-free libraries it links. They are the same for every release,
# so a build for another release may link those of this tree's main build
# instead of compiling its own (build-aux/release-plugin.sh):
#   make select_k8s_cons_tres.la K8SDRA_LIBS="../build/libk8sdra_client.la ../build/libk8sdra_core.la"
K8SDRA_LIBS = libk8sdra_client.la libk8sdra_core.la
select_k8s_cons_tres_la_LIBADD = $(K8SDRA_LIBS) $(PTHREAD_LIBS)
select_k8s_cons_tres_la_DEPENDENCIES = $(K8SDRA_LIBS)
EXTRA_DIST += plugin/select_k8s_cons_tres.map
# The core is C++: link with the C++ driver so libstdc++ comes along.
nodist_EXTRA_select_k8s_cons_tres_la_SOURCES = plugin/force-cxx-link.cc

print-plugindir:
	@echo $(plugindir)
.PHONY: print-plugindir
# The .la file is of no use to slurmctld.
install-data-hook:
	rm -f $(DESTDIR)$(plugindir)/select_k8s_cons_tres.la
uninstall-local:
	rm -f $(DESTDIR)$(plugindir)/select_k8s_cons_tres.so
