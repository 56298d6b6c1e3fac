// SPDX-License-Identifier: GPL-2.0-or-later
// Benchmark (not a test): placement on 128-CPU nodes (2 sockets, 8 NUMA
// nodes, SMT, 8 GPUs) that are half full with random holdings, against a
// naive first-fit baseline measured in the same run.
//   usage: bench_placement [nodes=15000] [seed=1]
//          bench_placement worst [pairs=7] [seed=1]
// "worst": one node of 24 or 32 NUMA nodes (one L3 each) and a job of half
// its cores, where the exact search would enumerate millions of NUMA sets:
// engine (budgeted search) and first-fit timed A B A B on the same node.
#include "core/hwloc_fixture.h"
#include "core/inventory.h"
#include "core/placement.h"

#include <malloc.h>

#include <algorithm>
#include <cstring>
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

NodeTopology synthetic_node(const char *desc, unsigned gpus) {
    FixtureOptions o;
    o.gpus = gpus;
    FixtureResult f = fixture_from_synthetic(desc, o);
    if (!f.ok) {
        std::fprintf(stderr, "fixture %s: %s\n", desc, f.error.c_str());
        std::exit(1);
    }
    return Inventory::build(f.slices, {}).nodes().at(0).topology;
}

// Every `in` CPUs of `of` held by one pod, at random.
void hold_random(NodeEntry &e, std::mt19937 &rng, unsigned in, unsigned of) {
    const CpuTopology &t = *e.topology.cpu;
    Words w(t.words, 0);
    for (uint32_t c = 0; c < t.cpus.size(); ++c)
        if (rng() % of < in)
            bit_set(w, c);
    std::string err;
    e.ledger.hold(Holder::of_claim("bench", "pod"), w, 0, &err);
}

// C(n, k) as a double (only printed).
double choose(unsigned n, unsigned k) {
    double r = 1;
    for (unsigned i = 1; i <= k; ++i)
        r = r * (n - k + i) / i;
    return r;
}

struct Stat {
    double med, lo, hi;
};

Stat stat_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v.front(), v.back()};
}

// Worst-case nodes: A = engine (default budget), B = first-fit, interleaved.
int worst(size_t pairs, unsigned seed) {
    struct Case {
        const char *name;
        const char *topo;
        unsigned hold_in4;  // quarters of the CPUs held at random
        uint32_t cpus;      // 0: half the node's CPUs
        bool whole;
        uint32_t gpus, cpus_per_gpu;
        uint64_t budget = kSearchBudget;  // UINT64_MAX: the search as it was, unbounded
    };
    const char *n16 = "pack:2 numa:8 l3:1 core:4 pu:2", *n24 = "pack:2 numa:12 l3:1 core:4 pu:2",
               *n32 = "pack:2 numa:16 l3:1 core:4 pu:2";
    const Case cases[] = {
        {"8 NUMA (bench node), 8 CPUs, half held", kTopology, 2, 8, false, 0, 0},
        {"16 NUMA, all free, half the cores (64 CPUs)", n16, 0, 0, false, 0, 0},
        {"16 NUMA, same, no budget", n16, 0, 0, false, 0, 0, UINT64_MAX},
        {"24 NUMA, all free, 24 CPUs (exact, near the budget)", n24, 0, 24, false, 0, 0},
        {"24 NUMA, all free, half the cores (96 CPUs)", n24, 0, 0, false, 0, 0},
        {"24 NUMA, same, no budget", n24, 0, 0, false, 0, 0, UINT64_MAX},
        {"24 NUMA, 1/4 held, half the cores (96 CPUs)", n24, 1, 0, false, 0, 0},
        {"24 NUMA, all free, 48 whole cores", n24, 0, 96, true, 0, 0},
        {"24 NUMA, all free, 4 GPUs x 24 CPUs", n24, 0, 0, false, 4, 24},
        {"32 NUMA, all free, half the cores (128 CPUs)", n32, 0, 0, false, 0, 0},
        {"32 NUMA, 1/4 held, half the cores (128 CPUs)", n32, 1, 0, false, 0, 0},
        {"32 NUMA, all free, 64 whole cores", n32, 0, 128, true, 0, 0},
        {"32 NUMA, all free, 4 GPUs x 32 CPUs", n32, 0, 0, false, 4, 32},
    };
    std::printf("budget: %llu candidate sets per node and call (kSearchBudget); %zu A/B pairs, "
                "each the mean of a batch of calls; median [min-max]\n\n",
                static_cast<unsigned long long>(kSearchBudget), pairs);
    std::printf("| node and request | engine | first-fit | engine/ff | exact would need | "
                "evaluated | fallback | NUMA/L3/sockets |\n|---|---|---|---|---|---|---|---|\n");
    std::mt19937 rng(seed);
    for (const Case &c : cases) {
        Inventory inv;
        NodeEntry &e = inv.add_node(synthetic_node(c.topo, c.gpus ? 8 : 0));
        if (c.hold_in4)
            hold_random(e, rng, c.hold_in4, 4);
        const NodeView v = e.view();
        const auto ncpus = static_cast<uint32_t>(v.cpu->cpus.size());
        const Request r{c.cpus || c.gpus ? c.cpus : ncpus / 2, c.whole, 0, c.gpus,
                        c.cpus_per_gpu};
        const SearchOptions opts{c.budget};
        const Placement p = place(v, r, opts);
        if (!p.fits) {
            std::printf("| %s | does not fit: %s |\n", c.name, p.reason.c_str());
            continue;
        }
        // NUMA sets the unbounded search enumerates at the winning size.
        const double unbounded = choose(static_cast<unsigned>(v.cpu->numas.size()),
                                        p.stats.exact ? 0 : p.score.numa_nodes);
        const auto engine = [&](size_t) { sink = place(v, r, opts).cpus.size(); };
        const auto ff = [&](size_t) { sink = first_fit(v, r).cpus.size(); };
        // Each sample is a batch of about 2 ms of calls (at least one), so the
        // clock's resolution stays small against it; one batch each to warm up.
        const auto batch = [](double us) {
            return std::max<size_t>(1, static_cast<size_t>(2000 / std::max(us, 0.001)));
        };
        const size_t calls_a = batch(time_per_call_us(1, engine));
        const size_t calls_b = batch(time_per_call_us(100, ff));
        time_per_call_us(calls_a, engine);
        time_per_call_us(calls_b, ff);
        std::vector<double> a, b, ratio;
        for (size_t i = 0; i < pairs; ++i) {
            a.push_back(time_per_call_us(calls_a, engine));
            b.push_back(time_per_call_us(calls_b, ff));
            ratio.push_back(a.back() / b.back());
        }
        const Stat sa = stat_of(a), sb = stat_of(b), sr = stat_of(ratio);
        char need[64];
        if (p.stats.exact)
            std::snprintf(need, sizeof need, "%llu",
                          static_cast<unsigned long long>(p.stats.candidates));
        else
            std::snprintf(need, sizeof need, ">= %.3g", unbounded);
        std::printf("| %s | %.2f us [%.2f-%.2f] | %.2f us [%.2f-%.2f] | %.0fx [%.0f-%.0f] | %s | "
                    "%llu + %u greedy | %s | %u/%u/%u |\n",
                    c.name, sa.med, sa.lo, sa.hi, sb.med, sb.lo, sb.hi, sr.med, sr.lo, sr.hi,
                    need, static_cast<unsigned long long>(p.stats.candidates),
                    p.stats.greedy_sets, p.stats.exact ? "no" : "yes", p.score.numa_nodes,
                    p.score.l3_groups, p.score.sockets);
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc > 1 && std::strcmp(argv[1], "worst") == 0)
        return worst(argc > 2 ? std::max<size_t>(3, std::strtoul(argv[2], nullptr, 10)) : 7,
                     argc > 3 ? static_cast<unsigned>(std::strtoul(argv[3], nullptr, 10)) : 1);
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
