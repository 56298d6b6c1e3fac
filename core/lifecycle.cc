// SPDX-License-Identifier: GPL-2.0-or-later
// Lifecycle of the core inside slurmctld: one background thread that will own
// all Kubernetes I/O, started by init() and stopped by fini(). Everything here
// is reached through the C ABI, so nothing may throw past these functions.
#include "k8s_config.h"
#include "core/k8sdra.h"
#include "core/plugin_config.h"

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace {

class Core {
public:
    Core(k8sdra_log_fn log, std::optional<k8sdra::PluginConfig> config)
        : log_(log), config_(std::move(config)) {
        thread_ = std::thread([this] { run(); });
    }
    ~Core() {
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    Core(const Core &) = delete;
    Core &operator=(const Core &) = delete;

    void log(int level, const std::string &msg) const {
        if (log_) log_(level, msg.c_str());
    }

private:
    // The plugin's own thread: the home of the informers and the claim writer.
    // Until those exist it only waits to be told to stop.
    void run() {
        log(K8SDRA_LOG_VERBOSE, "core thread started");
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_; });
        log(K8SDRA_LOG_VERBOSE, "core thread stopped");
    }

    k8sdra_log_fn log_;
    std::optional<k8sdra::PluginConfig> config_;  // none: Kubernetes integration off
    std::mutex mu_;
    std::condition_variable cv_;
    bool stopping_ = false;
    std::thread thread_;
};

std::mutex g_mu;
std::unique_ptr<Core> g_core;

void set_error(char *err, size_t errlen, const std::string &msg) {
    if (err && errlen > 0) std::snprintf(err, errlen, "%s", msg.c_str());
}

}  // namespace

extern "C" int k8sdra_start(const struct k8sdra_start_args *args, char *err,
                            size_t errlen) {
    set_error(err, errlen, "");
    try {
        std::lock_guard lock(g_mu);
        if (g_core) {
            set_error(err, errlen, "core already started");
            return K8SDRA_ESTATE;
        }
        const k8sdra_log_fn log = args ? args->log : nullptr;
        std::optional<k8sdra::PluginConfig> config;
        std::string mode = "Kubernetes integration off (no configuration)";
        if (args && args->conf_path) {
            const std::string path = args->conf_path;
            if (std::filesystem::exists(path)) {
                auto loaded = k8sdra::load_plugin_config(path);
                if (!loaded.config) {
                    set_error(err, errlen, loaded.error);
                    return K8SDRA_EINVAL;
                }
                config = std::move(loaded.config);
                mode = "configuration " + path;
            } else {
                mode = "no " + path + ": Kubernetes integration is OFF, every node is scheduled as by select/cons_tres";
            }
        }
        g_core = std::make_unique<Core>(log, std::move(config));
        g_core->log(K8SDRA_LOG_INFO, std::string("core ") + k8sdra_version() + " started; " + mode);
        return K8SDRA_OK;
    } catch (const std::exception &e) {
        set_error(err, errlen, std::string("core start failed: ") + e.what());
    } catch (...) {
        set_error(err, errlen, "core start failed: unknown error");
    }
    return K8SDRA_EINTERNAL;
}

extern "C" void k8sdra_stop(void) {
    try {
        std::unique_ptr<Core> core;
        {
            std::lock_guard lock(g_mu);
            core = std::move(g_core);
        }
        core.reset();  // joins the thread outside g_mu
    } catch (...) {
        // Nothing sensible to do at shutdown; never let it reach C.
    }
}

extern "C" int k8sdra_running(void) {
    try {
        std::lock_guard lock(g_mu);
        return g_core ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

extern "C" const char *k8sdra_version(void) { return PACKAGE_VERSION; }
