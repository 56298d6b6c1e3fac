// SPDX-License-Identifier: GPL-2.0-or-later
// Who holds each device of a node: free, a Kubernetes claim, or a Slurm job.
// Free sets are kept as words, so counting them costs O(words).
#pragma once

#include "core/cpu_mask.h"
#include "core/topology.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace k8s_cons_tres {

struct Holder {
    enum class Kind : uint8_t { Claim, Job };
    Kind kind = Kind::Claim;
    std::string claim;  // "namespace/name" for claims and bridged jobs
    uint32_t job = 0;   // job id for jobs
    // A job's devices as slurm-bridge's claim for its pod holds them (not
    // our own claim): Slurm's only while the job runs (Engine::covered).
    bool bridged = false;

    static Holder of_claim(const std::string &ns, const std::string &name) {
        return {Kind::Claim, ns + "/" + name, 0, false};
    }
    static Holder of_job(uint32_t id) { return {Kind::Job, {}, id, false}; }
    static Holder of_bridged(uint32_t id, const std::string &ns, const std::string &name) {
        return {Kind::Job, ns + "/" + name, id, true};
    }
    std::string str() const;
    bool operator==(const Holder &) const = default;
};

struct Holding {
    Holder who;
    Words cpus;        // CPU indices
    uint64_t gpus = 0; // GRES indices
};

class NodeLedger {
public:
    NodeLedger() = default;
    NodeLedger(size_t ncpus, size_t ngpus);
    // Also keeps per-NUMA free counts (numa_counts) up to date; topo must
    // outlive the ledger (the node's shared topology does).
    NodeLedger(const CpuTopology *topo, size_t ngpus);

    const Words &free_cpus() const { return free_cpus_; }
    uint64_t free_gpus() const { return free_gpus_; }
    uint32_t free_cpu_count() const;
    uint32_t free_gpu_count() const;
    // Cores whose every thread is free.
    uint32_t free_core_count(const CpuTopology &t) const;

    // Records a holding. Fails, changing nothing, when a device is unknown or
    // already held; err then names the device index and its holder.
    bool hold(const Holder &who, const Words &cpus, uint64_t gpus, std::string *err);
    // Records a holding even where devices are held already: what several
    // claims hold (admin access, shared devices, a late write) stays out
    // until the last of them goes. Unknown devices are ignored.
    void hold_shared(const Holder &who, const Words &cpus, uint64_t gpus);
    // Frees what `who` holds and no other holder does; false when it held
    // nothing.
    bool release(const Holder &who);

    const std::vector<Holding> &holdings() const { return holdings_; }
    // Holdings of Slurm jobs (the others are claims'), without reading them.
    size_t job_holdings() const { return job_holdings_; }
    // A process-wide number naming this ledger's state: a new one at
    // construction and after every change, never reused; copies keep it.
    // With the topology fixed for a ledger's life (NodeEntry), equal stamps
    // mean equal free sets on equal nodes: RankIndex keeps scores by it.
    uint64_t stamp() const { return stamp_; }
    // Per-NUMA free counts (one per topology NUMA node), or nullptr unless
    // built with a topology.
    const NumaCounts *numa_counts() const;
    // Union of the CPUs held by holders of one kind.
    Words held_cpus(Holder::Kind kind) const;
    uint64_t held_gpus(Holder::Kind kind) const;
    // The claims ("namespace/name" of Kind::Claim holders) that hold a
    // device `who` holds too, in holding order, each once.
    std::vector<std::string> claims_sharing(const Holder &who) const;

private:
    void refresh_counts();
    void add(const Holder &who, Words cpus, uint64_t gpus);

    const CpuTopology *topo_ = nullptr;
    // Up to 8 NUMA nodes the counts live inline: ranking reads them for
    // every node, and a separate allocation would cost a cache miss each.
    std::array<NumaCounts, 8> inline_counts_{};
    std::vector<NumaCounts> numa_counts_;  // more than 8 NUMA nodes
    size_t ncpus_ = 0;
    size_t ngpus_ = 0;
    Words free_cpus_;
    uint64_t free_gpus_ = 0;
    std::vector<Holding> holdings_;
    size_t job_holdings_ = 0;
    uint64_t stamp_ = next_stamp();

    static uint64_t next_stamp();
};

}  // namespace k8s_cons_tres
