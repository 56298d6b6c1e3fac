// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/job_claims.h"

#include "core/cpu_mask.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>

namespace k8s_cons_tres::k8s {
namespace {

uint64_t fnv1a(const std::string &s, uint64_t h) {
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

std::string id_list(const std::vector<int32_t> &ids) {
    std::string out;
    for (int32_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
    return out;
}

struct NodeClaim {
    std::vector<AllocationResult> cpu_results, gpu_results;
    std::vector<int32_t> cpu_ids;
    std::vector<std::string> gpu_uuids;
    std::string cpuset;  // grouped mode only
    bool grouped = false;
};

bool node_claim(const JobAlloc &job, const JobNodeAlloc &n, const NodeEntry &entry,
                const PluginConfig &cfg, NodeClaim *out, std::string *error) {
    const CpuTopology &cpu = *entry.topology.cpu;
    Words mine(cpu.words, 0);
    for (uint32_t core : n.cores) {
        if (core >= cpu.cores.size()) {
            *error = "job " + std::to_string(job.job_id) + ": node " + n.node + " has no Slurm core " +
                     std::to_string(core) + " (it has " + std::to_string(cpu.cores.size()) + ")";
            return false;
        }
        const CoreInfo &ci = cpu.cores[core];
        for (uint32_t t = 0; t < ci.nthreads; ++t) {
            const uint32_t idx = ci.first_cpu + t;
            bit_set(mine, idx);
            out->cpu_ids.push_back(cpu.cpus[idx].cpu_id);
            if (!cpu.grouped)
                out->cpu_results.push_back({"cpu", cfg.cpu_driver, n.node, cpu.cpus[idx].device, "", {}});
        }
    }
    out->grouped = cpu.grouped;
    if (cpu.grouped && !out->cpu_ids.empty()) {
        // One request per group device, asking for exactly the CPUs Slurm
        // uses there, so spec (capacity request) and status (consumedCapacity
        // of a share) say the same. The driver honours the cpuset only in
        // machine grouping; in numa/socket grouping it pins counts per group.
        for (const CpuGroup &g : cpu.groups) {
            const uint32_t count = popcount_and(g.mask.data(), mine.data(), cpu.words);
            if (!count) continue;
            AllocationResult r{"cpu-" + g.device, cfg.cpu_driver, n.node, g.device, "", {}};
            r.shareID = stable_uuid(std::to_string(job.job_id) + "/" + n.node + "/" + g.device);
            r.consumedCapacity[cfg.cpu_driver + "/cpu"] = std::to_string(count);
            out->cpu_results.push_back(std::move(r));
        }
        out->cpuset = format_cpuset(out->cpu_ids);
    }
    for (uint32_t g : n.gres) {
        if (g >= entry.topology.gpus.size()) {
            *error = "job " + std::to_string(job.job_id) + ": node " + n.node + " has no GPU " + std::to_string(g) +
                     " (it has " + std::to_string(entry.topology.gpus.size()) + ")";
            return false;
        }
        const GpuInfo &gi = entry.topology.gpus[g];
        AllocationResult r{"gpu", gi.driver.str(), n.node, gi.device, "", {}};
        if (gi.shared) {  // a device others may share: say that the job takes all of it
            r.shareID = stable_uuid(std::to_string(job.job_id) + "/" + n.node + "/" + gi.device);
            r.consumedCapacity = gi.capacity;
        }
        out->gpu_results.push_back(std::move(r));
        if (!gi.uuid.empty()) out->gpu_uuids.push_back(gi.uuid);
    }
    return true;
}

// Individual mode: one request for all CPU results of the part.
ClaimRequestSpec cpu_request(const NodeClaim &nc, size_t count, const PluginConfig &cfg) {
    ClaimRequestSpec r{"cpu", cfg.cpu_device_class, static_cast<int64_t>(count), {}, {}};
    r.celSelectors.push_back("device.attributes['" + cfg.cpu_driver + "'].cpuID in [" + id_list(nc.cpu_ids) + "]");
    return r;
}

// Grouped mode: the request of one group share, capacity as consumed.
ClaimRequestSpec group_request(const AllocationResult &share, const PluginConfig &cfg) {
    ClaimRequestSpec r{share.request, cfg.cpu_device_class, 1, {}, share.consumedCapacity};
    return r;
}

ClaimRequestSpec gpu_request(const NodeClaim &nc, size_t count, const PluginConfig &cfg) {
    ClaimRequestSpec r{"gpu", cfg.gpu_device_class, static_cast<int64_t>(count), {}, {}};
    if (!nc.gpu_uuids.empty() && !nc.gpu_results.empty()) {
        std::string list;
        for (const auto &u : nc.gpu_uuids) list += (list.empty() ? "'" : ", '") + u + "'";
        r.celSelectors.push_back("device.attributes['" + nc.gpu_results.front().driver + "'].uuid in [" + list + "]");
    }
    return r;
}

// Results of one node in parts of at most kMaxResultsPerClaim.
void split(const JobAlloc &job, const std::string &node, const NodeClaim &nc, const PluginConfig &cfg,
           const std::string &cluster, std::vector<ClaimIntent> *out) {
    std::vector<AllocationResult> all = nc.cpu_results;
    all.insert(all.end(), nc.gpu_results.begin(), nc.gpu_results.end());
    for (size_t first = 0, part = 0; first < all.size(); first += kMaxResultsPerClaim, ++part) {
        ClaimIntent in;
        in.ns = cfg.claim_namespace;
        in.name = claimName(cluster, job.job_id, node, static_cast<unsigned>(part));
        in.labels = claimLabels(cluster, job.job_id, node);
        if (!job.user.empty()) in.labels[kLabelUser] = labelValue(job.user);
        else in.userUid = job.uid;
        in.nodeName = node;
        const size_t last = std::min(all.size(), first + kMaxResultsPerClaim);
        in.results.assign(all.begin() + first, all.begin() + last);
        const size_t ncpu = std::count_if(in.results.begin(), in.results.end(),
                                          [&](const AllocationResult &r) { return r.driver == cfg.cpu_driver; });
        const size_t ngpu = in.results.size() - ncpu;
        if (ncpu && !nc.grouped) in.requests.push_back(cpu_request(nc, ncpu, cfg));
        for (size_t i = 0; nc.grouped && i < ncpu; ++i) in.requests.push_back(group_request(in.results[i], cfg));
        if (ngpu) in.requests.push_back(gpu_request(nc, ngpu, cfg));
        if (ncpu && nc.grouped) in.opaqueCpuset = nc.cpuset;
        out->push_back(std::move(in));
    }
}

// numa/socket grouping: the driver picks the CPUs of a share itself, so
// Slurm's exact CPUs are not what a pod on the node is kept from (machine
// grouping honours the cpuset). Said once per node and process.
void note_grouped(const std::string &node, const CpuTopology &cpu, const Logger &log) {
    if (cpu.cpuset_honoured()) return;
    static std::mutex mu;
    static std::set<std::string> told;
    {
        std::lock_guard lock(mu);
        if (!told.insert(node).second) return;
    }
    const std::string first = cpu.groups.empty() ? "" : cpu.groups.front().device;
    log.info("node " + node + ": dra.cpu publishes grouped devices (" + first + ", ...): Slurm's claims there reserve " +
             "CPU counts per group, not individual CPUs; run dra.cpu in individual mode for exact CPU isolation");
}

}  // namespace

bool bridgeWritesClaims(const JobAlloc &job, const PluginConfig &config) {
    if (!config.bridge_job_claims || !job.external || job.admin_comment.empty()) return false;
    try {
        rapidjson::Document doc;
        json::parse(doc, job.admin_comment);
        const rapidjson::Value *pods = doc.IsObject() ? json::member(doc, "pods") : nullptr;
        if (!pods || !pods->IsArray() || pods->Empty()) return false;
        for (const auto &p : pods->GetArray())
            if (!p.IsString() || p.GetStringLength() == 0) return false;
        return true;
    } catch (const json::Error &) {
        return false;  // not slurm-bridge's: the plugin writes the claims
    }
}

std::string stable_uuid(const std::string &text) {
    const uint64_t a = fnv1a(text, 0xcbf29ce484222325ULL);
    const uint64_t b = fnv1a(text, a ^ 0x9e3779b97f4a7c15ULL);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08x-%04x-5%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                  static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                  static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3fff)),
                  static_cast<unsigned long long>(b & 0xffffffffffffULL));
    return buf;
}

std::vector<ClaimIntent> job_claims(const JobAlloc &job, const Inventory &inventory,
                                    const PluginConfig &config, const std::string &cluster,
                                    std::string *error, const Logger *log,
                                    std::vector<std::string> *failed) {
    std::vector<ClaimIntent> out;
    for (const JobNodeAlloc &n : job.nodes) {
        const NodeEntry *entry = inventory.node(n.node);
        if (!entry || !entry->usable()) continue;
        NodeClaim nc;
        std::string why;
        if (!node_claim(job, n, *entry, config, &nc, &why)) {
            // this node alone: the job's claims on its other nodes stand
            *error += (error->empty() ? "" : "; ") + why;
            if (failed) failed->push_back(n.node);
            continue;
        }
        if (log && nc.grouped && !nc.cpu_ids.empty()) note_grouped(n.node, *entry->topology.cpu, *log);
        split(job, n.node, nc, config, cluster, &out);
    }
    return out;
}

std::vector<HolderIntent> job_holders(const JobAlloc &job, const std::vector<ClaimIntent> &claims,
                                      const Inventory &inventory, const PluginConfig &config,
                                      const std::string &cluster) {
    std::vector<HolderIntent> out;
    for (const JobNodeAlloc &n : job.nodes) {
        HolderIntent h;
        std::string held;  // what the claims hold, in their order
        for (const auto &c : claims) {
            if (c.nodeName != n.node) continue;
            h.claims.push_back(c.name);
            held += c.name + "|" + c.opaqueCpuset + "|";
            for (const auto &r : c.results) held += r.driver + "/" + r.device + ",";
        }
        const NodeEntry *entry = inventory.node(n.node);
        if (h.claims.empty() || !entry) continue;  // no claim there: nothing to hold
        const CpuTopology &cpu = *entry->topology.cpu;
        for (uint32_t core : n.cores)
            if (core < cpu.cores.size()) h.cpus += cpu.cores[core].nthreads;
        h.ns = config.claim_namespace;
        h.name = holderPodName(cluster, job.job_id, n.node);
        h.node = n.node;
        h.labels = claimLabels(cluster, job.job_id, n.node);
        if (!job.user.empty()) h.labels[kLabelUser] = labelValue(job.user);
        else h.userUid = job.uid;
        h.memMb = n.mem_mb;
        h.image = config.holder_image;
        h.claimsDigest = stable_uuid(held);
        h.priorityClass = config.holder_priority_class;
        out.push_back(std::move(h));
    }
    return out;
}

}  // namespace k8s_cons_tres::k8s
