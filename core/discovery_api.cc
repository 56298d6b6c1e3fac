// SPDX-License-Identifier: GPL-2.0-or-later
// k8s_cons_tres_ctld.h's node discovery calls. Nothing throws past these functions.
#include "core/engine.h"
#include "core/external_nodes.h"
#include "core/k8s_cons_tres_ctld.h"

#include <cstdio>

namespace {

void set_text(char *buf, size_t len, const std::string &text) {
    if (buf && len > 0) std::snprintf(buf, len, "%s", text.c_str());
}

k8s_cons_tres_ext_action to_c(int kind, const std::string &node, const std::string &text) {
    k8s_cons_tres_ext_action a{};
    a.kind = kind;
    set_text(a.node, sizeof a.node, node);
    set_text(a.text, sizeof a.text, text);
    return a;
}

}  // namespace

extern "C" int k8s_cons_tres_node_discovery(void) {
    try {
        auto engine = k8s_cons_tres::running_engine();
        return engine && engine->config() && engine->config()->node_discovery ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

extern "C" uint64_t k8s_cons_tres_discovery_version(void) {
    try {
        auto engine = k8s_cons_tres::running_engine();
        return engine ? engine->discovery_version() : 0;
    } catch (...) {
        return 0;
    }
}

extern "C" int k8s_cons_tres_node_is_discovered(int external, const char *features) {
    try {
        k8s_cons_tres::SlurmNodeState n;
        n.external = external != 0;
        n.features = features ? features : "";
        return k8s_cons_tres::is_discovered(n) ? 1 : 0;
    } catch (...) {
        return 1;  // in doubt it is Kubernetes': kept out rather than plain
    }
}

extern "C" int k8s_cons_tres_external_plan(const struct k8s_cons_tres_slurm_node_state *have, size_t nhave,
                                    int with_gres_conf, struct k8s_cons_tres_ext_action *out, size_t cap,
                                    size_t *nout, char *why, size_t whylen) {
    if (nout) *nout = 0;
    set_text(why, whylen, "");
    try {
        auto engine = k8s_cons_tres::running_engine();
        if (!engine || !out || !nout) return K8S_CONS_TRES_EINVAL;
        std::vector<k8s_cons_tres::SlurmNodeState> nodes;
        nodes.reserve(nhave);
        for (size_t i = 0; have && i < nhave; ++i) {
            const auto &h = have[i];
            if (!h.name) continue;
            k8s_cons_tres::SlurmNodeState n;
            n.name = h.name;
            n.cpus = h.cpus;
            n.sockets = h.sockets;
            n.cores_per_socket = h.cores_per_socket;
            n.threads_per_core = h.threads_per_core;
            n.real_memory = h.real_memory;
            n.gres = h.gres ? h.gres : "";
            n.features = h.features ? h.features : "";
            n.external = h.external != 0;
            n.drained = h.drained != 0;
            n.drained_by_us = h.drained_by_us != 0;
            n.idle = h.idle != 0;
            nodes.push_back(std::move(n));
        }
        std::vector<std::string> notes;
        std::string reason;
        const auto plan = engine->external_plan(nodes, cap, with_gres_conf != 0, &notes, &reason);
        set_text(why, whylen, reason);
        size_t n = 0;
        for (const auto &note : notes) {
            if (n == cap) break;
            out[n++] = to_c(K8S_CONS_TRES_EXT_NOTE, note.substr(0, note.find(':')), note);
        }
        for (const auto &a : plan) {
            if (n == cap) break;
            out[n++] = to_c(static_cast<int>(a.kind), a.node, a.text);
        }
        *nout = n;
        return K8S_CONS_TRES_OK;
    } catch (...) {
        set_text(why, whylen, "internal error in node discovery");
        return K8S_CONS_TRES_EINTERNAL;
    }
}
