// SPDX-License-Identifier: GPL-2.0-or-later
// Benchmark (not a test): placement on 128-CPU nodes (2 sockets, 8 NUMA
// nodes, SMT, 8 GPUs) that are half full with random holdings, against a
// naive first-fit baseline measured in the same run.
//   usage: bench_placement [nodes=15000] [seed=1]
#include "core/hwloc_fixture.h"
#include "core/inventory.h"
#include "core/placement.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace k8sdra;
using Clock = std::chrono::steady_clock;

namespace {

const char *kTopology = "pack:2 numa:4 l3:1 core:8 pu:2";

// First fit: the lowest free CPUs (whole cores if asked) and GPUs.
Placement first_fit(const NodeView &v, const Request &r) {
    Placement p;
    const uint32_t want = cpus_wanted(r);
    const CpuTopology &t = *v.cpu;
    for (const CoreInfo &c : t.cores) {
        if (p.cpus.size() >= want)
            break;
        bool all = true;
        for (uint32_t i = 0; i < c.nthreads; ++i)
            all = all && bit_test(v.free_cpus, c.first_cpu + i);
        if (r.whole_cores && !all)
            continue;
        uint32_t used = 0;
        for (uint32_t i = 0; i < c.nthreads && p.cpus.size() < want; ++i) {
            if (bit_test(v.free_cpus, c.first_cpu + i) &&
                (!r.threads_per_core || used < r.threads_per_core)) {
                p.cpus.push_back(c.first_cpu + i);
                ++used;
            }
        }
    }
    for (size_t g = 0; g < v.ngpus && p.gpus.size() < r.gpus; ++g)
        if ((v.free_gpus >> g) & 1U)
            p.gpus.push_back(static_cast<uint32_t>(g));
    p.fits = p.cpus.size() >= want && p.gpus.size() == r.gpus;
    return p;
}

// First-fit ranking: input order, fitting nodes first (counts only).
std::vector<RankEntry> first_fit_rank(const std::vector<NodeView> &nodes, const Request &r) {
    std::vector<RankEntry> out(nodes.size());
    const uint32_t want = cpus_wanted(r);
    for (size_t i = 0; i < nodes.size(); ++i) {
        const NodeView &v = nodes[i];
        const uint32_t cpus = popcount(v.free_cpus, v.cpu->words);
        const auto gpus = static_cast<uint32_t>(__builtin_popcountll(v.free_gpus));
        out[i] = {i, cpus >= want && gpus >= r.gpus, {}};
    }
    std::stable_partition(out.begin(), out.end(), [](const RankEntry &e) { return e.fits; });
    return out;
}

// Half of the CPUs and GPUs held by random "pods" of 1..8 CPUs.
void fill_half(NodeEntry &e, std::mt19937 &rng) {
    const CpuTopology &t = *e.topology.cpu;
    std::vector<uint32_t> cpus(t.cpus.size());
    for (uint32_t i = 0; i < cpus.size(); ++i)
        cpus[i] = i;
    std::shuffle(cpus.begin(), cpus.end(), rng);
    size_t next = 0;
    int pod = 0;
    std::string err;
    while (next < cpus.size() / 2) {
        Words w(t.words, 0);
        const size_t n = std::min<size_t>(1 + rng() % 8, cpus.size() / 2 - next);
        for (size_t i = 0; i < n; ++i)
            bit_set(w, cpus[next++]);
        uint64_t g = 0;
        if (pod < 4)
            g = uint64_t{1} << ((rng() % 2) + 2 * pod);  // one GPU of each pair
        e.ledger.hold(Holder::of_claim("bench", "pod" + std::to_string(pod++)), w, g, &err);
    }
}

double now_us() {
    return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
}

template <class F>
double time_per_call_us(size_t calls, F &&f) {
    const double t0 = now_us();
    for (size_t i = 0; i < calls; ++i)
        f(i);
    return (now_us() - t0) / static_cast<double>(calls);
}

size_t heap_used() {
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

volatile size_t sink;  // keeps results alive

}  // namespace

int main(int argc, char **argv) {
    const size_t nnodes = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 15000;
    const unsigned seed = argc > 2 ? static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10)) : 1;
    FixtureOptions o;
    o.gpus = 8;
    FixtureResult f = fixture_from_synthetic(kTopology, o);
    if (!f.ok) {
        std::fprintf(stderr, "fixture: %s\n", f.error.c_str());
        return 1;
    }
    Inventory proto = Inventory::build(f.slices, {});
    const NodeTopology base = proto.nodes().at(0).topology;

    const size_t heap0 = heap_used();
    Inventory inv;
    std::mt19937 rng(seed);
    for (size_t i = 0; i < nnodes; ++i) {
        NodeTopology t = base;
        t.node = "node" + std::to_string(i);
        for (GpuInfo &g : t.gpus)
            g.uuid = "GPU-" + t.node + "-" + g.device;
        fill_half(inv.add_node(std::move(t)), rng);
    }
    const double bytes_per_node =
        static_cast<double>(heap_used() - heap0) / static_cast<double>(nnodes);

    std::vector<NodeView> views;
    for (const NodeEntry &e : inv.nodes())
        views.push_back(e.view());

    struct Shape {
        const char *name;
        Request req;
    };
    const Shape shapes[] = {
        {"8 CPUs", {8, false, 0, 0, 0}},
        {"8 whole cores (16 CPUs)", {16, true, 0, 0, 0}},
        {"2 GPUs + 8 CPUs/GPU", {0, false, 0, 2, 8}},
        {"1 thread/core x 12", {12, false, 1, 0, 0}},
    };
    std::printf("nodes: %zu x (128 CPUs: 2 sockets, 8 NUMA, SMT2; 8 GPUs), half held; "
                "distinct CPU topologies: %zu\n",
                nnodes, inv.distinct_topologies());
    std::printf("memory: %.0f bytes per node (heap, incl. ledger and GPU records)\n\n",
                bytes_per_node);
    std::printf("| request | place: engine | place: first-fit | ratio | rank %zu: exact | "
                "rank: coarse | rank: first-fit | exact/ff | coarse/ff | fitting nodes |\n",
                nnodes);
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (const Shape &s : shapes) {
        const size_t calls = std::max<size_t>(views.size(), 20000);
        const double pe = time_per_call_us(calls, [&](size_t i) {
            sink = place(views[i % views.size()], s.req).cpus.size();
        });
        const double pf = time_per_call_us(calls, [&](size_t i) {
            sink = first_fit(views[i % views.size()], s.req).cpus.size();
        });
        size_t fit = 0;
        const double re = time_per_call_us(5, [&](size_t) {
            auto r = rank_nodes(views, s.req);
            fit = static_cast<size_t>(std::count_if(r.begin(), r.end(),
                                                    [](const RankEntry &e) { return e.fits; }));
        });
        const double rc = time_per_call_us(5, [&](size_t) {
            sink = rank_nodes_coarse(views, s.req).size();
        });
        const double rf = time_per_call_us(5, [&](size_t) {
            sink = first_fit_rank(views, s.req).size();
        });
        std::printf("| %s | %.2f us | %.2f us | %.1fx | %.2f ms | %.2f ms | %.2f ms | %.1fx | "
                    "%.1fx | %zu |\n",
                    s.name, pe, pf, pe / pf, re / 1000, rc / 1000, rf / 1000, re / rf, rc / rf,
                    fit);
    }
    return 0;
}
