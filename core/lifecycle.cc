// SPDX-License-Identifier: GPL-2.0-or-later
// Lifecycle of the core inside slurmctld, started by the plugin's init() and
// stopped by fini(): the engine that answers the scheduling path, and (when
// k8s_cons_tres.conf is present) the feed whose own threads do all
// Kubernetes I/O. Reached through the C ABI, so nothing may throw past here.
#include "k8s_config.h"
#include "core/engine.h"
#include "core/feed.h"
#include "core/k8s_cons_tres.h"
#include "core/plugin_config.h"

#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace {

struct Core {
    std::shared_ptr<k8s_cons_tres::Engine> engine;
    std::unique_ptr<k8s_cons_tres::Feed> feed;  // null: Kubernetes integration off
};

// Production slurmctld exits without calling fini(): the plugin's threads
// still run while static destructors would. So the lock and the core are
// never destroyed at exit (the process ends them); only k8s_cons_tres_stop(),
// from fini(), takes the core down in order. Writes cut short by the exit
// are left for reconciliation after the next start.
std::mutex &g_mu = *new std::mutex;
Core *g_core = nullptr;

void set_error(char *err, size_t errlen, const std::string &msg) {
    if (err && errlen > 0) std::snprintf(err, errlen, "%s", msg.c_str());
}

// Reads the configuration; a missing file means integration off.
bool read_config(const char *conf_path, std::optional<k8s_cons_tres::PluginConfig> *config,
                 std::string *mode, std::string *error) {
    *mode = "Kubernetes integration off (no configuration)";
    if (!conf_path) return true;
    const std::string path = conf_path;
    if (!std::filesystem::exists(path)) {
        *mode = "no " + path + ": Kubernetes integration is OFF, every node is scheduled as by select/cons_tres";
        return true;
    }
    auto loaded = k8s_cons_tres::load_plugin_config(path);
    if (!loaded.config) {
        *error = loaded.error;
        return false;
    }
    *config = std::move(loaded.config);
    *mode = "configuration " + path;
    return true;
}

}  // namespace

std::shared_ptr<k8s_cons_tres::Engine> k8s_cons_tres::running_engine() {
    std::lock_guard lock(g_mu);
    return g_core ? g_core->engine : nullptr;
}

int k8s_cons_tres::start_core(const k8s_cons_tres_start_args *args, const FeedFactory &make_feed, char *err,
                       size_t errlen) {
    set_error(err, errlen, "");
    try {
        std::lock_guard lock(g_mu);
        if (g_core) {
            set_error(err, errlen, "core already started");
            return K8S_CONS_TRES_ESTATE;
        }
        const k8s_cons_tres_log_fn log = args ? args->log : nullptr;
        std::optional<k8s_cons_tres::PluginConfig> config;
        std::string mode, error;
        if (!read_config(args ? args->conf_path : nullptr, &config, &mode, &error)) {
            set_error(err, errlen, error);
            return K8S_CONS_TRES_EINVAL;
        }
        if (config && config->cluster_label.empty())
            config->cluster_label = args && args->cluster_name ? args->cluster_name : "slurm";
        if (config && args && args->state_dir) config->state_dir = args->state_dir;
        if (config && args) config->replaced_pid = args->replaced_pid;
        auto core = std::make_unique<Core>();
        core->engine = std::make_shared<k8s_cons_tres::Engine>(std::move(config));
        if (core->engine->integration_on()) {
            if (!make_feed) {
                set_error(err, errlen, "this build has no Kubernetes client to feed the core");
                return K8S_CONS_TRES_EINVAL;
            }
            // DebugLevel= filters the core's own lines before Slurm's level does.
            const int max_level = core->engine->config()->log_level;
            k8s_cons_tres::FeedLog feed_log = [log, max_level](int level, const std::string &msg) {
                if (log && level <= max_level) log(level, msg.c_str());
            };
            core->feed = make_feed(core->engine, feed_log, &error);
            if (!core->feed) {
                set_error(err, errlen, error);
                return K8S_CONS_TRES_EINVAL;
            }
        }
        g_core = core.release();
        if (log) log(K8S_CONS_TRES_LOG_INFO, (std::string("core ") + k8s_cons_tres_version() + " started; " + mode).c_str());
        return K8S_CONS_TRES_OK;
    } catch (const std::exception &e) {
        set_error(err, errlen, std::string("core start failed: ") + e.what());
    } catch (...) {
        set_error(err, errlen, "core start failed: unknown error");
    }
    return K8S_CONS_TRES_EINTERNAL;
}

extern "C" void k8s_cons_tres_stop(void) {
    try {
        std::unique_ptr<Core> core;
        {
            std::lock_guard lock(g_mu);
            core.reset(g_core);
            g_core = nullptr;
        }
        core.reset();  // the feed joins its threads outside g_mu
    } catch (...) {
        // Nothing sensible to do at shutdown; never let it reach C.
    }
}

extern "C" int k8s_cons_tres_running(void) {
    try {
        std::lock_guard lock(g_mu);
        return g_core ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

extern "C" const char *k8s_cons_tres_version(void) { return PACKAGE_VERSION; }
