# SPDX-License-Identifier: GPL-2.0-or-later
# The Slurm-facing shared object. Only these files include Slurm headers, from
# the configured Slurm source tree of exactly the selected release. One
# adapter per ABI family (configure's SLURM_ABI) over the shared sources;
# slurm_compat.h holds the type, name and header differences.
plugindir = $(PLUGINDIR)
plugin_LTLIBRARIES = select_k8s_cons_tres.la
select_k8s_cons_tres_la_SOURCES = \
	plugin/slurm_compat.h plugin/k8s_log.h \
	plugin/select_common.c plugin/select_common.h \
	plugin/inner_select.c plugin/inner_select.h \
	plugin/core_bridge.c plugin/core_bridge.h \
	plugin/k8s_view.c plugin/k8s_view.h \
	plugin/k8s_gpu.c plugin/k8s_gpu.h \
	plugin/k8s_jobs.c plugin/k8s_jobs.h \
	plugin/k8s_steer.c plugin/k8s_steer.h \
	plugin/k8s_agent.c plugin/k8s_agent.h \
	plugin/k8s_registered.c plugin/k8s_registered.h \
	plugin/k8s_ending.c plugin/k8s_ending.h \
	plugin/k8s_gate.c plugin/k8s_gate.h plugin/k8s_gate_api.h \
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
#   make select_k8s_cons_tres.la K8S_CONS_TRES_LIBS="../build/libk8s_cons_tres_sync.la ../build/libk8s_cons_tres_client.la ../build/libk8s_cons_tres_core.la"
K8S_CONS_TRES_LIBS = libk8s_cons_tres_sync.la libk8s_cons_tres_client.la libk8s_cons_tres_core.la
select_k8s_cons_tres_la_LIBADD = $(K8S_CONS_TRES_LIBS) $(PTHREAD_LIBS)
select_k8s_cons_tres_la_DEPENDENCIES = $(K8S_CONS_TRES_LIBS)
EXTRA_DIST += plugin/select_k8s_cons_tres.map
# The core is C++: link with the C++ driver so libstdc++ comes along.
nodist_EXTRA_select_k8s_cons_tres_la_SOURCES = plugin/force-cxx-link.cc

# The launch gate's PrEp plugin: a forwarder to the select plugin's gate
# (k8s_gate_api.h), in C only and linking nothing of ours, since slurmd and
# slurmstepd load every PrEp plugin too.
plugin_LTLIBRARIES += prep_k8s_cons_tres.la
prep_k8s_cons_tres_la_SOURCES = plugin/prep_k8s_cons_tres.c plugin/k8s_gate_api.h \
	plugin/slurm_compat.h plugin/k8s_log.h
prep_k8s_cons_tres_la_CPPFLAGS = $(select_k8s_cons_tres_la_CPPFLAGS)
prep_k8s_cons_tres_la_CFLAGS = $(select_k8s_cons_tres_la_CFLAGS)
prep_k8s_cons_tres_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/plugin/prep_k8s_cons_tres.map \
	-Wl,-z,relro
EXTRA_DIST += plugin/prep_k8s_cons_tres.map

print-plugindir:
	@echo $(plugindir)
.PHONY: print-plugindir
# The .la file is of no use to slurmctld.
install-data-hook: install-release-plugins
	rm -f $(DESTDIR)$(plugindir)/select_k8s_cons_tres.la \
		$(DESTDIR)$(plugindir)/prep_k8s_cons_tres.la
uninstall-local: uninstall-release-plugins
	rm -f $(DESTDIR)$(plugindir)/select_k8s_cons_tres.so \
		$(DESTDIR)$(plugindir)/prep_k8s_cons_tres.so

# The plugin's exported symbols against this build's release (make check
# runs check-plugin-exports.sh too; this is the same, on its own).
check-exports: select_k8s_cons_tres.la prep_k8s_cons_tres.la
	$(AM_TESTS_ENVIRONMENT) $(SHELL) $(srcdir)/testsuite/check-plugin-exports.sh \
		.libs/select_k8s_cons_tres.so

# ---- the other releases of --with-slurm=A,B,... ----------------------------
# configure set up slurm-R/ for each release R after the first; there only
# the plugin is built, linked with this build's core and client (absolute
# paths, as the sub-make runs in slurm-R/). Each is installed into its own
# release's PluginDir and checked against its own release's loader.
EXTRA_SLURM_RELEASES = @EXTRA_SLURM_RELEASES@
release_libs = libs=; for l in $(K8S_CONS_TRES_LIBS); do \
	case $$l in /*) ;; *) l=$(abs_builddir)/$$l ;; esac; libs="$$libs $$l"; done
release_make = $(release_libs); for r in $(EXTRA_SLURM_RELEASES); do \
	$(MAKE) $(AM_MAKEFLAGS) -C slurm-$$r K8S_CONS_TRES_LIBS="$$libs"
release-plugins: $(K8S_CONS_TRES_LIBS)
	@$(release_make) select_k8s_cons_tres.la prep_k8s_cons_tres.la || exit 1; done
check-release-plugins: release-plugins
	@$(release_make) check-exports || exit 1; done
install-release-plugins: release-plugins
	@$(release_make) install-pluginLTLIBRARIES install-data-hook || exit 1; done
uninstall-release-plugins:
	@$(release_make) uninstall-local || exit 1; done
clean-release-plugins:
	@$(release_make) clean || exit 1; done
distclean-release-plugins:
	@for r in $(EXTRA_SLURM_RELEASES); do rm -rf slurm-$$r; done
all-local: release-plugins
check-local: check-release-plugins
.PHONY: check-exports release-plugins check-release-plugins install-release-plugins \
	uninstall-release-plugins clean-release-plugins distclean-release-plugins
