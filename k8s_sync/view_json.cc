// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/view_json.h"

#include "k8s_client/json.h"

#include <rapidjson/prettywriter.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace k8s_cons_tres::k8s {
namespace {

std::string cpu_ranges(const CpuTopology &t, const Words &mask) {
    std::vector<int32_t> ids;
    for_each_bit(mask.data(), mask.size(), [&](size_t i) { ids.push_back(t.cpus[i].cpu_id); });
    return format_cpuset(std::move(ids));
}

std::string gpu_list(uint64_t mask) {
    std::string out;
    for (uint32_t g = 0; g < 64; ++g)
        if (mask & (uint64_t{1} << g)) out += (out.empty() ? "" : ",") + std::to_string(g);
    return out;
}

template <class W>
void write_node(W &w, const NodeEntry &n) {
    w.StartObject();
    w.Key("node");
    w.String(n.name.c_str());
    w.Key("usable");
    w.Bool(n.usable());
    if (!n.overlaps.empty()) {  // pods' claims on Slurm jobs' devices
        w.Key("overlaps");
        w.StartArray();
        for (const std::string &o : n.overlaps) w.String(o.c_str());
        w.EndArray();
    }
    if (!n.usable()) {
        w.Key("reason");
        w.String(n.invalid.c_str());
        w.EndObject();
        return;
    }
    const CpuTopology &t = *n.topology.cpu;
    w.Key("cpus");
    w.Uint(static_cast<unsigned>(t.cpus.size()));
    w.Key("gpus");
    w.Uint(static_cast<unsigned>(n.topology.gpus.size()));
    w.Key("free_cpus");
    w.String(cpu_ranges(t, n.ledger.free_cpus()).c_str());
    w.Key("free_cores");
    w.Uint(n.ledger.free_core_count(t));
    w.Key("free_gpus");
    w.String(gpu_list(n.ledger.free_gpus()).c_str());
    w.Key("held");
    w.StartArray();
    for (const Holding &h : n.ledger.holdings()) {
        w.StartObject();
        if (h.who.kind == Holder::Kind::Claim) {
            w.Key("kubernetes_claim");
            w.String(h.who.claim.c_str());
        } else {
            w.Key("slurm_job");
            w.Uint(h.who.job);
            if (h.who.bridged) {  // slurm-bridge's claim for the job's pod
                w.Key("bridge_claim");
                w.String(h.who.claim.c_str());
            }
        }
        w.Key("cpus");
        w.String(cpu_ranges(t, h.cpus).c_str());
        w.Key("gpus");
        w.String(gpu_list(h.gpus).c_str());
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
}

}  // namespace

std::string inventory_view_json(const Inventory &inventory, uint64_t version) {
    rapidjson::StringBuffer buf;
    rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
    w.StartObject();
    w.Key("inventoryVersion");
    w.Uint64(version);
    w.Key("nodes");
    w.StartArray();
    for (const NodeEntry &n : inventory.nodes()) write_node(w, n);
    w.EndArray();
    w.EndObject();
    return std::string(buf.GetString(), buf.GetSize());
}

bool write_file_atomically(const std::string &path, const std::string &text, std::string *error) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::trunc);
        f << text;
        if (!f.flush()) {
            *error = "cannot write " + tmp + ": " + std::strerror(errno);
            return false;
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        *error = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
        return false;
    }
    return true;
}

}  // namespace k8s_cons_tres::k8s
