// SPDX-License-Identifier: GPL-2.0-or-later
// Benchmark (not a test): placement and exact ranking on 128-CPU nodes (2
// sockets, 8 NUMA nodes, SMT, 8 GPUs) that are half full with random
// holdings, against a naive first-fit baseline measured in the same run.
//
//   bench_placement [--json] [--nodes N] [--pairs P] [--changes K] [--seed S]
//                   [cluster|worst|all]        (default: all)
//   bench_placement N [seed]; bench_placement worst [pairs] [seed]  (as before)
//
// cluster: per request shape, A/B pairs interleaved (A B A B ...), each
//   sample the mean of a batch of calls; median [min-max] over the pairs:
//   * place: one node's placement, engine vs first-fit;
//   * rank: all N nodes ranked exactly through a RankIndex after K random
//     nodes changed (pods leaving and arriving, not timed) vs first-fit's
//     ranking of the same views; also with no change and with 1% changed,
//     the first ranking of a new index (cold) and the full scan
//     (rank_nodes, every node searched); the index's answer is checked
//     against the full scan's;
//   * steer: Engine::choose() on every node, as job_test asks with no cap on
//     the candidates, with its kept choices (warm) and from scratch (cold).
// worst: one node of 24 or 32 NUMA nodes (one L3 each) and a job of half
//   its cores, where the exact search would enumerate millions of NUMA sets:
//   engine (budgeted search) and first-fit timed A B A B on the same node.
#include "core/engine.h"
#include "testsuite/support/hwloc_fixture.h"
#include "core/inventory.h"
#include "testsuite/support/ranking.h"
#include "testsuite/support/rank_index.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace k8s_cons_tres;
using Clock = std::chrono::steady_clock;

namespace {

const char *kTopology = "pack:2 numa:4 l3:1 core:8 pu:2";

struct Args {
    bool json = false;
    size_t nodes = 15000;
    size_t pairs = 7;
    size_t changes = 15;  // nodes changed before each timed ranking
    unsigned seed = 1;
    bool cluster = true, worst = true;
};

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

// A pod of n random free CPUs (and maybe a free GPU) on e.
void hold_pod(NodeEntry &e, std::mt19937 &rng, size_t n, bool gpu, int id) {
    const CpuTopology &t = *e.topology.cpu;
    std::vector<uint32_t> free;
    for (uint32_t c = 0; c < t.cpus.size(); ++c)
        if (bit_test(e.ledger.free_cpus(), c))
            free.push_back(c);
    std::shuffle(free.begin(), free.end(), rng);
    Words w(t.words, 0);
    for (size_t i = 0; i < n && i < free.size(); ++i)
        bit_set(w, free[i]);
    std::vector<uint32_t> gpus;
    for (uint32_t i = 0; gpu && i < 64; ++i)
        if ((e.ledger.free_gpus() >> i) & 1U)
            gpus.push_back(i);
    const uint64_t g = gpus.empty() ? 0 : uint64_t{1} << gpus[rng() % gpus.size()];
    std::string err;
    e.ledger.hold(Holder::of_claim("bench", "pod" + std::to_string(id)), w, g, &err);
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

// Pod churn on one node: a random pod leaves, another as large arrives.
void churn(NodeEntry &e, std::mt19937 &rng, int &next_id) {
    const auto &h = e.ledger.holdings();
    if (h.empty())
        return;
    const Holding gone = h[rng() % h.size()];
    e.ledger.release(gone.who);
    hold_pod(e, rng, popcount(gone.cpus.data(), gone.cpus.size()), gone.gpus != 0, next_id++);
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

struct Stat {
    double med = 0, lo = 0, hi = 0;
};

Stat stat_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v.front(), v.back()};
}

// Samples of A and B taken A B A B ...; ratio is A/B per pair.
struct Pairs {
    std::vector<double> a, b, ratio;
    void add(double x, double y) {
        a.push_back(x);
        b.push_back(y);
        ratio.push_back(x / y);
    }
};

std::string fmt(const Stat &s, const char *unit, int prec = 2) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.*f%s [%.*f-%.*f]", prec, s.med, unit, prec, s.lo, prec,
                  s.hi);
    return buf;
}

std::string fmt_ratio(const Stat &s) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2fx [%.2f-%.2f]", s.med, s.lo, s.hi);
    return buf;
}

// "name":median,"name_min":..,"name_max":..
std::string json_stat(const char *name, const Stat &s) {
    char buf[192];
    std::snprintf(buf, sizeof buf, "\"%s\":%.4f,\"%s_min\":%.4f,\"%s_max\":%.4f", name, s.med,
                  name, s.lo, name, s.hi);
    return buf;
}

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

bool same_ranking(const std::vector<RankEntry> &a, const std::vector<RankEntry> &b) {
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].node != b[i].node || a[i].fits != b[i].fits || a[i].score != b[i].score)
            return false;
    return true;
}

struct Shape {
    const char *name;
    Request req;
};

struct ShapeResult {
    const char *name;
    Stat place, place_ff, place_ratio;
    Stat exact, ff, ratio;               // exact after `changes` changed nodes
    Stat exact0, ratio0, exact1, ratio1; // no change; 1% changed
    Stat cold, full, coarse;
    Stat steer_warm, steer_cold, steer_ff;
    double index_bytes_per_node = 0;
    size_t fitting = 0, searched = 0;
    bool identical = false;
};

int cluster(const Args &a) {
    const NodeTopology base = synthetic_node(kTopology, 8);
    const size_t heap0 = heap_used();
    Inventory inv;
    std::mt19937 rng(a.seed);
    for (size_t i = 0; i < a.nodes; ++i) {
        NodeTopology t = base;
        t.node = "node" + std::to_string(i);
        for (GpuInfo &g : t.gpus)
            g.uuid = "GPU-" + t.node + "-" + g.device;
        fill_half(inv.add_node(std::move(t)), rng);
    }
    const double bytes_per_node =
        static_cast<double>(heap_used() - heap0) / static_cast<double>(a.nodes);
    std::vector<NodeView> views;
    std::vector<NodeEntry *> entries;
    std::vector<std::string> names;
    for (const NodeEntry &e : inv.nodes()) {
        views.push_back(e.view());
        entries.push_back(inv.node(e.name));
        names.push_back(e.name);
    }
    int pod_id = 1000;
    const auto change = [&](size_t k) {  // k random nodes churn; their views follow
        for (size_t j = 0; j < k; ++j) {
            const size_t i = rng() % entries.size();
            churn(*entries[i], rng, pod_id);
            views[i] = entries[i]->view();
        }
    };

    const Shape shapes[] = {
        {"8 CPUs", {8, false, 0, 0, 0}},
        {"8 whole cores (16 CPUs)", {16, true, 0, 0, 0}},
        {"2 GPUs + 8 CPUs/GPU", {0, false, 0, 2, 8}},
        {"1 thread/core x 12", {12, false, 1, 0, 0}},
    };
    const size_t pct1 = std::max<size_t>(1, a.nodes / 100);
    constexpr size_t kBatch = 5;  // rankings per sample
    std::vector<ShapeResult> results;
    for (const Shape &s : shapes) {
        ShapeResult r;
        r.name = s.name;
        // place: one pass over all nodes per sample (at least 20,000 calls)
        const size_t calls = std::max<size_t>(views.size(), 20000);
        Pairs pl;
        for (size_t p = 0; p < a.pairs; ++p) {
            const double pe = time_per_call_us(calls, [&](size_t i) {
                sink = place(views[i % views.size()], s.req).cpus.size();
            });
            const double pf = time_per_call_us(calls, [&](size_t i) {
                sink = first_fit(views[i % views.size()], s.req).cpus.size();
            });
            pl.add(pe, pf);
        }
        r.place = stat_of(pl.a);
        r.place_ff = stat_of(pl.b);
        r.place_ratio = stat_of(pl.ratio);

        // rank: a warm index, K changed nodes before each timed ranking
        RankIndex index;
        {
            const double t0 = now_us();
            sink = index.rank(views, s.req).size();
            r.cold.med = (now_us() - t0) / 1000;
        }
        const auto exact_after = [&](size_t k) {
            double us = 0;
            for (size_t b = 0; b < kBatch; ++b) {
                change(k);
                const double t0 = now_us();
                sink = index.rank(views, s.req).size();
                us += now_us() - t0;
            }
            return us / kBatch / 1000;
        };
        const auto ff_ms = [&] {
            return time_per_call_us(kBatch, [&](size_t) {
                       sink = first_fit_rank(views, s.req).size();
                   }) / 1000;
        };
        Pairs rk, rk0, rk1;
        std::vector<double> cold, full, coarse;
        for (size_t p = 0; p < a.pairs; ++p) {
            rk.add(exact_after(a.changes), ff_ms());
            rk0.add(exact_after(0), ff_ms());
            rk1.add(exact_after(pct1), ff_ms());
            {  // cold: a new index, every node searched (equal ones once)
                RankIndex fresh;
                const double t0 = now_us();
                sink = fresh.rank(views, s.req).size();
                cold.push_back((now_us() - t0) / 1000);
                r.searched = fresh.last_call().searched;
                r.index_bytes_per_node =
                    static_cast<double>(fresh.heap_bytes()) / static_cast<double>(a.nodes);
            }
            full.push_back(time_per_call_us(1, [&](size_t) {
                               sink = rank_nodes(views, s.req).size();
                           }) / 1000);
            coarse.push_back(time_per_call_us(kBatch, [&](size_t) {
                                 sink = rank_nodes_coarse(views, s.req).size();
                             }) / 1000);
        }
        r.exact = stat_of(rk.a);
        r.ff = stat_of(rk.b);
        r.ratio = stat_of(rk.ratio);
        r.exact0 = stat_of(rk0.a);
        r.ratio0 = stat_of(rk0.ratio);
        r.exact1 = stat_of(rk1.a);
        r.ratio1 = stat_of(rk1.ratio);
        r.cold = stat_of(cold);
        r.full = stat_of(full);
        r.coarse = stat_of(coarse);
        change(a.changes);
        const auto got = index.rank(views, s.req);
        const auto want = rank_nodes(views, s.req);
        r.identical = same_ranking(got, want);
        r.fitting = static_cast<size_t>(
            std::count_if(want.begin(), want.end(), [](const RankEntry &e) { return e.fits; }));
        results.push_back(r);
    }

    // steer: Engine::choose() on every node, as job_test asks
    PluginConfig config;
    config.in_cluster = true;
    config.stale_after = std::chrono::hours(1);
    auto shared = std::make_shared<const Inventory>(std::move(inv));
    for (size_t si = 0; si < std::size(shapes); ++si) {
        const Request &req = shapes[si].req;
        Engine warm(config);
        warm.publish(shared);
        const auto pass = [&](const Engine &e) {
            return time_per_call_us(names.size(), [&](size_t i) {
                       sink = e.choose(names[i], req, {}, 0).cores.size();
                   }) * static_cast<double>(names.size()) / 1000;
        };
        pass(warm);  // fills its kept choices
        Pairs st;
        std::vector<double> cold;
        for (size_t p = 0; p < a.pairs; ++p) {
            const double w = pass(warm);
            const double f = time_per_call_us(views.size(), [&](size_t i) {
                                 sink = first_fit(views[i], req).cpus.size();
                             }) * static_cast<double>(views.size()) / 1000;
            st.add(w, f);
            if (p < 3) {  // cold passes are slow: three are enough
                Engine fresh(config);
                fresh.publish(shared);
                cold.push_back(pass(fresh));
            }
        }
        results[si].steer_warm = stat_of(st.a);
        results[si].steer_ff = stat_of(st.b);
        results[si].steer_cold = stat_of(cold);
    }

    if (a.json) {
        std::printf("\"cluster\":{\"nodes\":%zu,\"pairs\":%zu,\"seed\":%u,\"changes\":%zu,"
                    "\"changes_1pct\":%zu,\"bytes_per_node\":%.0f,\"shapes\":[",
                    a.nodes, a.pairs, a.seed, a.changes, pct1, bytes_per_node);
        for (size_t i = 0; i < results.size(); ++i) {
            const ShapeResult &r = results[i];
            std::printf("%s{\"request\":\"%s\",%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,"
                        "\"bytes_per_node\":%.0f,\"index_bytes_per_node\":%.0f,"
                        "\"fitting_nodes\":%zu,\"cold_searches\":%zu,"
                        "\"identical_to_full_scan\":%s}",
                        i ? "," : "", r.name, json_stat("exact_ms", r.exact).c_str(),
                        json_stat("first_fit_ms", r.ff).c_str(),
                        json_stat("exact_over_first_fit", r.ratio).c_str(),
                        json_stat("exact_unchanged_ms", r.exact0).c_str(),
                        json_stat("exact_unchanged_over_first_fit", r.ratio0).c_str(),
                        json_stat("exact_1pct_changed_ms", r.exact1).c_str(),
                        json_stat("exact_1pct_changed_over_first_fit", r.ratio1).c_str(),
                        json_stat("exact_cold_ms", r.cold).c_str(),
                        json_stat("full_scan_ms", r.full).c_str(),
                        json_stat("coarse_ms", r.coarse).c_str(),
                        json_stat("place_us", r.place).c_str(),
                        json_stat("place_first_fit_us", r.place_ff).c_str(),
                        json_stat("place_over_first_fit", r.place_ratio).c_str(),
                        json_stat("steer_warm_ms", r.steer_warm).c_str(),
                        json_stat("steer_cold_ms", r.steer_cold).c_str(),
                        json_stat("steer_first_fit_ms", r.steer_ff).c_str(), bytes_per_node,
                        r.index_bytes_per_node, r.fitting, r.searched,
                        r.identical ? "true" : "false");
        }
        std::printf("]}");
        return 0;
    }
    std::printf("nodes: %zu x (128 CPUs: 2 sockets, 8 NUMA, SMT2; 8 GPUs), half held; "
                "%zu A/B pairs, median [min-max]\n",
                a.nodes, a.pairs);
    std::printf("memory: %.0f bytes per node (heap, incl. ledger and GPU records); rank index: "
                "%.0f bytes per node and request shape\n\n",
                bytes_per_node, results.empty() ? 0.0 : results[0].index_bytes_per_node);
    std::printf("Rank all %zu nodes exactly (RankIndex), %zu nodes changed before each "
                "ranking, against first-fit's ranking:\n\n",
                a.nodes, a.changes);
    std::printf("| request | exact | first-fit | exact/ff | no change: exact/ff | "
                "%zu changed: exact | exact/ff | cold | full scan | coarse | same as full scan "
                "|\n|---|---|---|---|---|---|---|---|---|---|---|\n",
                pct1);
    for (const ShapeResult &r : results)
        std::printf("| %s | %s | %s | %s | %s | %s | %s | %.1f ms | %.1f ms | %.2f ms | %s |\n",
                    r.name, fmt(r.exact, " ms", 3).c_str(), fmt(r.ff, " ms", 3).c_str(),
                    fmt_ratio(r.ratio).c_str(), fmt_ratio(r.ratio0).c_str(),
                    fmt(r.exact1, " ms", 3).c_str(), fmt_ratio(r.ratio1).c_str(), r.cold.med,
                    r.full.med, r.coarse.med, r.identical ? "yes" : "NO");
    std::printf("\nOne node's placement, and Engine::choose() on every node (one job_test "
                "with no cap on candidates):\n\n");
    std::printf("| request | place: engine | place: first-fit | ratio | choose all: kept | "
                "choose all: cold | first-fit all |\n|---|---|---|---|---|---|---|\n");
    for (const ShapeResult &r : results)
        std::printf("| %s | %s | %s | %s | %s | %.1f ms | %.2f ms |\n", r.name,
                    fmt(r.place, " us").c_str(), fmt(r.place_ff, " us").c_str(),
                    fmt_ratio(r.place_ratio).c_str(), fmt(r.steer_warm, " ms").c_str(),
                    r.steer_cold.med, r.steer_ff.med);
    return 0;
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

// Worst-case nodes: A = engine (default budget), B = first-fit, interleaved.
int worst(const Args &a) {
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
    if (a.json) {
        std::printf("\"worst\":{\"budget\":%llu,\"pairs\":%zu,\"cases\":[",
                    static_cast<unsigned long long>(kSearchBudget), a.pairs);
    } else {
        std::printf("budget: %llu candidate sets per node and call (kSearchBudget); %zu A/B "
                    "pairs, each the mean of a batch of calls; median [min-max]\n\n",
                    static_cast<unsigned long long>(kSearchBudget), a.pairs);
        std::printf("| node and request | engine, per node | first-fit | engine/ff | exact "
                    "would need | evaluated | fallback | NUMA/L3/sockets |\n"
                    "|---|---|---|---|---|---|---|---|\n");
    }
    std::mt19937 rng(a.seed);
    bool first = true;
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
            if (!a.json)
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
        Pairs s;
        for (size_t i = 0; i < a.pairs; ++i) {
            const double x = time_per_call_us(calls_a, engine);
            s.add(x, time_per_call_us(calls_b, ff));
        }
        const Stat sa = stat_of(s.a), sb = stat_of(s.b), sr = stat_of(s.ratio);
        char need[64];
        if (p.stats.exact)
            std::snprintf(need, sizeof need, "%llu",
                          static_cast<unsigned long long>(p.stats.candidates));
        else
            std::snprintf(need, sizeof need, ">= %.3g", unbounded);
        if (a.json) {
            std::printf("%s{\"node\":\"%s\",%s,%s,%s,\"exact_would_need\":\"%s\","
                        "\"candidates\":%llu,\"greedy_sets\":%u,\"fallback\":%s,"
                        "\"numa_nodes\":%u,\"l3_groups\":%u,\"sockets\":%u}",
                        first ? "" : ",", c.name, json_stat("engine_us", sa).c_str(),
                        json_stat("first_fit_us", sb).c_str(),
                        json_stat("engine_over_first_fit", sr).c_str(), need,
                        static_cast<unsigned long long>(p.stats.candidates), p.stats.greedy_sets,
                        p.stats.exact ? "false" : "true", p.score.numa_nodes, p.score.l3_groups,
                        p.score.sockets);
        } else {
            std::printf("| %s | %.2f us [%.2f-%.2f] | %.2f us [%.2f-%.2f] | %.0fx [%.0f-%.0f] | "
                        "%s | %llu + %u greedy | %s | %u/%u/%u |\n",
                        c.name, sa.med, sa.lo, sa.hi, sb.med, sb.lo, sb.hi, sr.med, sr.lo,
                        sr.hi, need, static_cast<unsigned long long>(p.stats.candidates),
                        p.stats.greedy_sets, p.stats.exact ? "no" : "yes", p.score.numa_nodes,
                        p.score.l3_groups, p.score.sockets);
        }
        first = false;
    }
    if (a.json)
        std::printf("]}");
    return 0;
}

bool parse(int argc, char **argv, Args &a) {
    std::vector<std::string> pos;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        const auto num = [&](size_t &out) {
            if (i + 1 >= argc)
                return false;
            out = std::strtoul(argv[++i], nullptr, 10);
            return true;
        };
        size_t v = 0;
        if (k == "--json")
            a.json = true;
        else if (k == "--nodes" && num(v))
            a.nodes = v;
        else if (k == "--pairs" && num(v))
            a.pairs = v;
        else if (k == "--changes" && num(v))
            a.changes = v;
        else if (k == "--seed" && num(v))
            a.seed = static_cast<unsigned>(v);
        else if (k.rfind("--", 0) == 0)
            return false;
        else
            pos.push_back(k);
    }
    if (!pos.empty() && pos[0] == "worst") {  // worst [pairs] [seed]
        a.cluster = false;
        if (pos.size() > 1)
            a.pairs = std::strtoul(pos[1].c_str(), nullptr, 10);
        if (pos.size() > 2)
            a.seed = static_cast<unsigned>(std::strtoul(pos[2].c_str(), nullptr, 10));
    } else if (!pos.empty() && pos[0] == "cluster") {
        a.worst = false;
    } else if (!pos.empty() && pos[0] != "all") {  // N [seed]
        a.worst = false;
        a.nodes = std::strtoul(pos[0].c_str(), nullptr, 10);
        if (pos.size() > 1)
            a.seed = static_cast<unsigned>(std::strtoul(pos[1].c_str(), nullptr, 10));
    }
    a.pairs = std::max<size_t>(3, a.pairs);
    return a.nodes > 0;
}

}  // namespace

int main(int argc, char **argv) {
    Args a;
    if (!parse(argc, argv, a)) {
        std::fprintf(stderr, "usage: bench_placement [--json] [--nodes N] [--pairs P] "
                             "[--changes K] [--seed S] [cluster|worst|all]\n");
        return 2;
    }
    if (a.json)
        std::printf("{");
    if (a.cluster && cluster(a) != 0)
        return 1;
    if (a.json && a.cluster && a.worst)
        std::printf(",");
    else if (a.cluster && a.worst)
        std::printf("\n");
    if (a.worst && worst(a) != 0)
        return 1;
    if (a.json)
        std::printf("}\n");
    return 0;
}
