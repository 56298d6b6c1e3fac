// SPDX-License-Identifier: GPL-2.0-or-later
// k8s_cons_tres_ctld.h: the scheduling path's questions, answered from the running
// engine's current snapshot. Nothing throws past these functions.
#include "core/engine.h"
#include "core/k8s_cons_tres_ctld.h"

#include <cstdio>
#include <mutex>
#include <string>

namespace {

void set_text(char *buf, size_t len, const std::string &text) {
    if (buf && len > 0) std::snprintf(buf, len, "%s", text.c_str());
}

// One setting of the running engine's k8s_cons_tres.conf; `fallback` with
// no engine (or on any error).
template <class F, class T>
T setting(F field, T fallback) {
    try {
        auto engine = k8s_cons_tres::running_engine();
        const auto *c = engine ? engine->config() : nullptr;
        return c ? static_cast<T>(field(*c)) : fallback;
    } catch (...) {
        return fallback;
    }
}

// Tells the running engine (none: nothing to tell); no exception leaves.
template <class F>
int tell_engine(F tell) {
    try {
        if (auto engine = k8s_cons_tres::running_engine()) tell(*engine);
        return K8S_CONS_TRES_OK;
    } catch (...) {
        return K8S_CONS_TRES_EINTERNAL;
    }
}

template <class T>
bool copy_out(const std::vector<T> &from, T *to, size_t cap, size_t *n) {
    if (n) *n = from.size();
    if (from.size() > cap) return false;
    for (size_t i = 0; i < from.size(); ++i) to[i] = from[i];
    return true;
}

k8s_cons_tres::JobAlloc job_alloc(uint32_t job_id, uint32_t uid, const char *user, const char *external_comment,
                          const struct k8s_cons_tres_job_node *nodes, size_t nnodes) {
    k8s_cons_tres::JobAlloc job;
    job.job_id = job_id;
    job.user = user ? user : "";
    job.uid = uid;
    job.external = external_comment != nullptr;
    job.admin_comment = external_comment ? external_comment : "";
    for (size_t i = 0; nodes && i < nnodes; ++i) {
        k8s_cons_tres::JobNodeAlloc n;
        n.node = nodes[i].node ? nodes[i].node : "";
        n.cores.assign(nodes[i].cores, nodes[i].cores + nodes[i].ncores);
        n.gres.assign(nodes[i].gres, nodes[i].gres + nodes[i].ngres);
        n.mem_mb = nodes[i].mem_mb;
        job.nodes.push_back(std::move(n));
    }
    return job;
}

// The list being built between k8s_cons_tres_jobs_known_begin() and _end().
std::mutex known_mu;
std::vector<k8s_cons_tres::JobAlloc> known_jobs;

}  // namespace

extern "C" uint64_t k8s_cons_tres_view_generation(void) {
    try {
        auto engine = k8s_cons_tres::running_engine();
        return engine ? engine->generation() : 0;
    } catch (...) {
        return 0;
    }
}

extern "C" uint64_t k8s_cons_tres_view_node_stamp(const char *node) {
    try {
        auto engine = k8s_cons_tres::running_engine();
        return engine && node ? engine->node_stamp(node) : 0;
    } catch (...) {
        return UINT64_MAX;  // unknown: rebuild it
    }
}

extern "C" uint64_t k8s_cons_tres_view_full_stamp(void) {
    try {
        auto engine = k8s_cons_tres::running_engine();
        return engine ? engine->full_stamp() : 0;
    } catch (...) {
        return UINT64_MAX;
    }
}

extern "C" const char *k8s_cons_tres_view_kubernetes_nodes(void) {
    try {
        // The string lives in the engine's config; the engine lives until
        // k8s_cons_tres_stop(), which slurmctld calls only from fini().
        auto engine = k8s_cons_tres::running_engine();
        return engine && engine->config() ? engine->config()->kubernetes_nodes.c_str() : "";
    } catch (...) {
        return "";
    }
}

extern "C" uint32_t k8s_cons_tres_view_drain_after(void) {
    try {
        auto engine = k8s_cons_tres::running_engine();
        return engine && engine->config()
                   ? static_cast<uint32_t>(engine->config()->stale_after.count())
                   : 60;
    } catch (...) {
        return 60;
    }
}

extern "C" int k8s_cons_tres_view_node(const char *node, const struct k8s_cons_tres_slurm_node *slurm,
                                int is_k8s, int *state, uint32_t *cores, size_t core_cap,
                                size_t *ncores, uint32_t *gres, size_t gres_cap, size_t *ngres,
                                char *reason, size_t reasonlen) {
    set_text(reason, reasonlen, "");
    if (state) *state = K8S_CONS_TRES_VIEW_NOT_K8S;
    if (ncores) *ncores = 0;
    if (ngres) *ngres = 0;
    try {
        if (!node || !state) return K8S_CONS_TRES_EINVAL;
        auto engine = k8s_cons_tres::running_engine();
        if (!engine) return K8S_CONS_TRES_OK;
        k8s_cons_tres::SlurmNodeDef def;
        if (slurm)
            def = {slurm->sockets, slurm->cores_per_socket, slurm->threads_per_core, slurm->gpus};
        auto ex = engine->exclusion(node, slurm ? &def : nullptr, is_k8s != 0);
        *state = static_cast<int>(ex.state);
        set_text(reason, reasonlen, ex.reason);
        // Both copies run (each sets its count) even when the first overflows.
        const bool cores_fit = copy_out(ex.cores, cores, core_cap, ncores);
        const bool gres_fit = copy_out(ex.gres, gres, gres_cap, ngres);
        const bool fit = cores_fit && gres_fit;
        return fit ? K8S_CONS_TRES_OK : K8S_CONS_TRES_EINVAL;
    } catch (const std::exception &e) {
        set_text(reason, reasonlen, std::string("internal error: ") + e.what());
    } catch (...) {
        set_text(reason, reasonlen, "internal error");
    }
    // Fail closed: an error about a node makes it unusable, never free.
    *state = K8S_CONS_TRES_VIEW_UNAVAILABLE;
    return K8S_CONS_TRES_EINTERNAL;
}

extern "C" int k8s_cons_tres_job_started(uint32_t job_id, uint32_t uid, const char *user, const char *external_comment,
                                  const struct k8s_cons_tres_job_node *nodes, size_t nnodes,
                                  char *err, size_t errlen) {
    set_text(err, errlen, "");
    try {
        if (auto engine = k8s_cons_tres::running_engine())
            engine->job_started(job_alloc(job_id, uid, user, external_comment, nodes, nnodes));
        return K8S_CONS_TRES_OK;
    } catch (const std::exception &e) {
        set_text(err, errlen, std::string("cannot queue the claims: ") + e.what());
    } catch (...) {
        set_text(err, errlen, "cannot queue the claims");
    }
    return K8S_CONS_TRES_EINTERNAL;
}

extern "C" int k8s_cons_tres_job_ended(uint32_t job_id) {
    return tell_engine([&](k8s_cons_tres::Engine &e) { e.job_ended(job_id); });
}

extern "C" int k8s_cons_tres_job_finishing(uint32_t job_id) {
    return tell_engine([&](k8s_cons_tres::Engine &e) { e.job_finishing(job_id); });
}

extern "C" void k8s_cons_tres_job_released(uint32_t job_id, const char *node) {
    tell_engine([&](k8s_cons_tres::Engine &e) { e.job_released(job_id, node ? node : ""); });
}

extern "C" int k8s_cons_tres_job_gate(uint32_t job_id, struct k8s_cons_tres_gate *out) {
    if (!out) return K8S_CONS_TRES_EINVAL;
    *out = {};
    try {
        auto engine = k8s_cons_tres::running_engine();
        if (!engine) return K8S_CONS_TRES_OK;
        const auto g = engine->gate(job_id);
        out->kind = static_cast<int>(g.kind);  // the enums list the same kinds in the same order
        out->ready = g.ready;
        out->total = g.total;
        set_text(out->why, sizeof out->why, g.why);
        return K8S_CONS_TRES_OK;
    } catch (const std::exception &e) {
        set_text(out->why, sizeof out->why, std::string("internal error: ") + e.what());
    } catch (...) {
        set_text(out->why, sizeof out->why, "internal error");
    }
    out->kind = K8S_CONS_TRES_GATE_WAIT;  // fail closed: in doubt, the job does not start yet
    return K8S_CONS_TRES_EINTERNAL;
}

extern "C" int k8s_cons_tres_gate_mode(void) {
    return setting([](const k8s_cons_tres::PluginConfig &c) { return c.launch_gate; }, 0);
}

extern "C" uint32_t k8s_cons_tres_gate_requeues(void) {
    return setting([](const k8s_cons_tres::PluginConfig &c) { return c.launch_gate_requeues; },
                   k8s_cons_tres::PluginConfig{}.launch_gate_requeues);
}

extern "C" uint32_t k8s_cons_tres_gate_timeout(void) {
    return setting([](const k8s_cons_tres::PluginConfig &c) { return c.launch_gate_timeout.count(); },
                   static_cast<uint32_t>(k8s_cons_tres::PluginConfig{}.launch_gate_timeout.count()));
}

extern "C" void k8s_cons_tres_jobs_known_begin(void) {
    try {
        std::lock_guard lock(known_mu);
        known_jobs.clear();
    } catch (...) {
    }
}

extern "C" int k8s_cons_tres_jobs_known_add(uint32_t job_id, uint32_t uid, const char *user, const char *external_comment,
                                     const struct k8s_cons_tres_job_node *nodes, size_t nnodes) {
    try {
        std::lock_guard lock(known_mu);
        known_jobs.push_back(job_alloc(job_id, uid, user, external_comment, nodes, nnodes));
        return K8S_CONS_TRES_OK;
    } catch (...) {
        return K8S_CONS_TRES_EINTERNAL;
    }
}

extern "C" void k8s_cons_tres_jobs_known_end(void) {
    try {
        std::vector<k8s_cons_tres::JobAlloc> jobs;
        {
            std::lock_guard lock(known_mu);
            jobs.swap(known_jobs);
        }
        if (auto engine = k8s_cons_tres::running_engine()) engine->jobs_known(std::move(jobs));
    } catch (...) {
    }
}

extern "C" void k8s_cons_tres_node_registered(const char *node, uint32_t settle_seconds) {
    if (!node) return;
    tell_engine([&](k8s_cons_tres::Engine &e) { e.node_registered(node, std::chrono::seconds(settle_seconds)); });
}

extern "C" int k8s_cons_tres_choose(const char *node, uint32_t cpus, uint32_t threads_per_core,
                             uint32_t gpus, const uint32_t *busy_cores, size_t nbusy,
                             uint64_t busy_gres, struct k8s_cons_tres_choice *out) {
    if (!out) return K8S_CONS_TRES_EINVAL;
    out->fits = 0;
    out->ncores = out->ngres = 0;
    set_text(out->reason, sizeof out->reason, "");
    try {
        auto engine = k8s_cons_tres::running_engine();
        if (!node || !engine) return K8S_CONS_TRES_EINVAL;
        k8s_cons_tres::Request req;
        req.cpus = cpus;
        req.whole_cores = true;
        req.threads_per_core = threads_per_core;
        req.gpus = gpus;
        std::vector<uint32_t> busy(busy_cores, busy_cores + (busy_cores ? nbusy : 0));
        const auto c = engine->choose(node, req, busy, busy_gres);
        set_text(out->reason, sizeof out->reason, c.reason);
        out->score = {c.score.numa_nodes, c.score.l3_groups, c.score.sockets, c.score.cores,
                      c.score.gpu_distance, c.score.free_in_numa, c.score.free_in_l3};
        const bool cores_fit = copy_out(c.cores, out->cores, out->core_cap, &out->ncores);
        const bool gres_fit = copy_out(c.gres, out->gres, out->gres_cap, &out->ngres);
        const bool fit = cores_fit && gres_fit;
        out->fits = c.fits && fit;
        return fit ? K8S_CONS_TRES_OK : K8S_CONS_TRES_EINVAL;
    } catch (const std::exception &e) {
        set_text(out->reason, sizeof out->reason, std::string("internal error: ") + e.what());
    } catch (...) {
        set_text(out->reason, sizeof out->reason, "internal error");
    }
    return K8S_CONS_TRES_EINTERNAL;
}

extern "C" void k8s_cons_tres_set_gate_notify(void (*notify)(void)) { k8s_cons_tres::set_gate_notify(notify); }

extern "C" void k8s_cons_tres_standby(void) {
    try {
        if (auto engine = k8s_cons_tres::running_engine()) engine->standby();
    } catch (...) {
        // never past the C ABI
    }
}

static_assert(static_cast<int>(k8s_cons_tres::GateState::Kind::None) == K8S_CONS_TRES_GATE_NONE &&
              static_cast<int>(k8s_cons_tres::GateState::Kind::Wait) == K8S_CONS_TRES_GATE_WAIT &&
              static_cast<int>(k8s_cons_tres::GateState::Kind::Open) == K8S_CONS_TRES_GATE_OPEN &&
              static_cast<int>(k8s_cons_tres::GateState::Kind::Overlap) == K8S_CONS_TRES_GATE_OVERLAP);
static_assert(static_cast<int>(k8s_cons_tres::PluginConfig::LaunchGate::Off) == 0 &&
              static_cast<int>(k8s_cons_tres::PluginConfig::LaunchGate::Claims) == 1 &&
              static_cast<int>(k8s_cons_tres::PluginConfig::LaunchGate::Prepared) == 2);
