// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/ledger.h"

#include <algorithm>
#include <atomic>
#include <bit>

namespace k8s_cons_tres {

std::string Holder::str() const {
    if (kind == Kind::Claim) return "claim " + claim;
    return "job " + std::to_string(job) + (bridged ? " (slurm-bridge claim " + claim + ")" : "");
}

uint64_t NodeLedger::next_stamp() {
    static std::atomic<uint64_t> last{0};
    return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

NodeLedger::NodeLedger(size_t ncpus, size_t ngpus)
    : ncpus_(ncpus), ngpus_(std::min<size_t>(ngpus, 64)), free_cpus_(words_for(ncpus), 0) {
    for (size_t i = 0; i < ncpus; ++i)
        bit_set(free_cpus_, i);
    free_gpus_ = ngpus_ == 64 ? ~uint64_t{0} : (uint64_t{1} << ngpus_) - 1;
}

NodeLedger::NodeLedger(const CpuTopology *topo, size_t ngpus)
    : NodeLedger(topo ? topo->cpus.size() : 0, ngpus) {
    topo_ = topo;
    refresh_counts();
}

void NodeLedger::refresh_counts() {
    if (!topo_ || topo_->numas.size() > 64)
        return;
    const size_t nn = topo_->numas.size();
    inline_counts_.fill({});
    numa_counts_.assign(nn > inline_counts_.size() ? nn : 0, {});
    NumaCounts *counts = nn > inline_counts_.size() ? numa_counts_.data() : inline_counts_.data();
    for (const CoreInfo &k : topo_->cores) {
        uint32_t free = 0;
        for (uint32_t j = 0; j < k.nthreads; ++j)
            free += bit_test(free_cpus_, k.first_cpu + j);
        NumaCounts &n = counts[k.numa];
        n.free_cpus = static_cast<uint16_t>(n.free_cpus + free);
        n.whole_cores = static_cast<uint16_t>(n.whole_cores + (free == k.nthreads));
        n.any_cores = static_cast<uint16_t>(n.any_cores + (free > 0));
    }
}

const NumaCounts *NodeLedger::numa_counts() const {
    if (!topo_ || topo_->numas.size() > 64)
        return nullptr;
    return numa_counts_.empty() ? inline_counts_.data() : numa_counts_.data();
}

uint32_t NodeLedger::free_cpu_count() const {
    return popcount(free_cpus_.data(), free_cpus_.size());
}

uint32_t NodeLedger::free_gpu_count() const {
    return static_cast<uint32_t>(std::popcount(free_gpus_));
}

uint32_t NodeLedger::free_core_count(const CpuTopology &t) const {
    if (t.uniform_threads) {
        uint32_t n = 0;
        for (size_t i = 0; i < free_cpus_.size(); ++i) {
            uint64_t x = free_cpus_[i];
            for (uint32_t s = 1; s < t.uniform_threads; s *= 2)
                x &= x >> s;  // cores never straddle words: sizes divide 64
            n += static_cast<uint32_t>(std::popcount(x & t.core_leads[i]));
        }
        return n;
    }
    uint32_t n = 0;
    for (const CoreInfo &k : t.cores) {
        bool all = true;
        for (uint32_t j = 0; j < k.nthreads; ++j)
            all = all && bit_test(free_cpus_, k.first_cpu + j);
        n += all;
    }
    return n;
}

bool NodeLedger::hold(const Holder &who, const Words &cpus, uint64_t gpus,
                      std::string *err) {
    const uint64_t all_gpus = ngpus_ == 64 ? ~uint64_t{0} : (uint64_t{1} << ngpus_) - 1;
    if (gpus & ~all_gpus) {
        *err = "GPU index " + std::to_string(std::countr_zero(gpus & ~all_gpus)) +
               " does not exist";
        return false;
    }
    for (size_t i = 0; i < cpus.size(); ++i) {
        const uint64_t extra = i < free_cpus_.size() ? cpus[i] & ~free_cpus_[i] : cpus[i];
        if (!extra)
            continue;
        const size_t cpu = i * 64 + static_cast<size_t>(std::countr_zero(extra));
        std::string owner = "nobody (no such CPU)";
        for (const Holding &h : holdings_)
            if (cpu < ncpus_ && bit_test(h.cpus, cpu))
                owner = h.who.str();
        *err = "CPU index " + std::to_string(cpu) + " is held by " + owner;
        return false;
    }
    if (gpus & ~free_gpus_) {
        const auto g = static_cast<size_t>(std::countr_zero(gpus & ~free_gpus_));
        std::string owner;
        for (const Holding &h : holdings_)
            if ((h.gpus >> g) & 1U)
                owner = h.who.str();
        *err = "GPU index " + std::to_string(g) + " is held by " + owner;
        return false;
    }
    add(who, cpus, gpus);
    return true;
}

void NodeLedger::hold_shared(const Holder &who, const Words &cpus, uint64_t gpus) {
    Words known(free_cpus_.size(), 0);
    for (size_t i = 0; i < ncpus_; ++i)
        if (i / 64 < cpus.size() && bit_test(cpus, i))
            bit_set(known, i);
    const uint64_t all_gpus = ngpus_ == 64 ? ~uint64_t{0} : (uint64_t{1} << ngpus_) - 1;
    add(who, std::move(known), gpus & all_gpus);
}

void NodeLedger::add(const Holder &who, Words cpus, uint64_t gpus) {
    cpus.resize(free_cpus_.size(), 0);
    for (size_t i = 0; i < cpus.size(); ++i)
        free_cpus_[i] &= ~cpus[i];
    free_gpus_ &= ~gpus;
    refresh_counts();
    stamp_ = next_stamp();
    for (Holding &h : holdings_) {
        if (h.who == who) {  // a holder may grow (several claims results)
            for (size_t i = 0; i < cpus.size(); ++i)
                h.cpus[i] |= cpus[i];
            h.gpus |= gpus;
            return;
        }
    }
    holdings_.push_back({who, std::move(cpus), gpus});
    job_holdings_ += who.kind == Holder::Kind::Job;
}

bool NodeLedger::release(const Holder &who) {
    auto it = std::find_if(holdings_.begin(), holdings_.end(),
                           [&](const Holding &h) { return h.who == who; });
    if (it == holdings_.end())
        return false;
    Words freed = it->cpus;
    uint64_t freed_gpus = it->gpus;
    job_holdings_ -= it->who.kind == Holder::Kind::Job;
    holdings_.erase(it);
    for (const Holding &h : holdings_) {  // still held by another: stays out
        for (size_t i = 0; i < freed.size(); ++i)
            freed[i] &= ~h.cpus[i];
        freed_gpus &= ~h.gpus;
    }
    for (size_t i = 0; i < free_cpus_.size(); ++i)
        free_cpus_[i] |= freed[i];
    free_gpus_ |= freed_gpus;
    refresh_counts();
    stamp_ = next_stamp();
    return true;
}

Words NodeLedger::held_cpus(Holder::Kind kind) const {
    Words out(free_cpus_.size(), 0);
    for (const Holding &h : holdings_)
        if (h.who.kind == kind)
            for (size_t i = 0; i < out.size(); ++i)
                out[i] |= h.cpus[i];
    return out;
}

std::vector<std::string> NodeLedger::claims_sharing(const Holder &who) const {
    Words cpus(free_cpus_.size(), 0);
    uint64_t gpus = 0;
    for (const Holding &h : holdings_)
        if (h.who == who) {
            for (size_t i = 0; i < cpus.size(); ++i) cpus[i] |= h.cpus[i];
            gpus |= h.gpus;
        }
    std::vector<std::string> out;
    for (const Holding &h : holdings_)
        if (h.who.kind == Holder::Kind::Claim &&
            ((h.gpus & gpus) || popcount_and(h.cpus.data(), cpus.data(), cpus.size())) &&
            std::find(out.begin(), out.end(), h.who.claim) == out.end())
            out.push_back(h.who.claim);
    return out;
}

uint64_t NodeLedger::held_gpus(Holder::Kind kind) const {
    uint64_t g = 0;
    for (const Holding &h : holdings_)
        if (h.who.kind == kind)
            g |= h.gpus;
    return g;
}

}  // namespace k8s_cons_tres
