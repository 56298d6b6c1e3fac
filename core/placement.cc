// SPDX-License-Identifier: GPL-2.0-or-later
// The search is exact for the objective in placement.h. It walks NUMA sets
// by size (the first size with a feasible set is optimal for rule 1, and
// every feasible choice inside such a set touches all of it), then L3 sets
// inside those by size, and scores the remaining rules per (NUMA set, L3
// set) from per-domain capacity counts. Only the winner is materialised.
// Each enumeration level is paid from a budget before it runs; when the
// budget cannot pay for one, greedy() decides instead (see placement.h).
#include "core/placement.h"

#include <algorithm>
#include <array>
#include <bit>

namespace k8s_cons_tres {
namespace {

constexpr uint32_t kMaxCap = 8;  // threads per core, checked by the builder
using Hist = std::array<uint16_t, kMaxCap + 1>;

// n (<= 8) bits of a word array starting at bit pos.
uint32_t bits_at(const uint64_t *w, uint32_t pos, uint32_t n) {
    const uint32_t word = pos / 64, off = pos % 64;
    uint64_t x = w[word] >> off;
    if (off + n > 64)
        x |= w[word + 1] << (64 - off);
    return static_cast<uint32_t>(x & ((uint64_t{1} << n) - 1));
}

// Next subset of n items with the same number of bits (Gosper); 0 at the end.
uint64_t next_subset(uint64_t x, unsigned n) {
    const uint64_t c = x & (~x + 1);
    const uint64_t r = x + c;
    if (r == 0)
        return 0;  // overflowed past bit 63
    const uint64_t next = (((r ^ x) >> 2) >> std::countr_zero(c)) | r;  // c: a power of 2
    if (n < 64 && (next >> n) != 0)
        return 0;
    return next;
}

uint64_t first_subset(unsigned k) { return k == 64 ? ~uint64_t{0} : (uint64_t{1} << k) - 1; }

// C(n, k), saturating at UINT64_MAX (any such count exceeds every budget).
uint64_t binomial(unsigned n, unsigned k) {
    if (k > n)
        return 0;
    k = std::min(k, n - k);
    uint64_t r = 1;
    for (unsigned i = 1; i <= k; ++i) {
        const uint64_t f = n - k + i;
        if (r > UINT64_MAX / f)
            return UINT64_MAX;
        r = r * f / i;  // exact: r * f == C(n - k + i, i) * i
    }
    return r;
}

// Candidate sets the exact search may still enumerate in this call.
struct Budget {
    uint64_t limit = 0, used = 0;
    bool exhausted = false;
    // Pays for n candidates; false (and exhausted) when they do not fit.
    bool pay(uint64_t n) {
        if (n > limit - used) {
            exhausted = true;
            return false;
        }
        used += n;
        return true;
    }
};

// Per-request capacities of every domain of one node.
struct Domains {
    std::vector<uint32_t> cell_cap, cell_free;
    std::vector<Hist> cell_hist;
    std::vector<uint32_t> numa_cap, numa_free, numa_gpus;
    std::vector<uint64_t> numa_cells;  // bit c: cell c lies in that NUMA node
    uint32_t total_cap = 0, unknown_gpus = 0, total_gpus = 0;
};

uint32_t thread_limit(const Request &req) {
    return req.threads_per_core ? std::min(req.threads_per_core, kMaxCap) : kMaxCap;
}

// CPUs core k can give this request: free threads up to the limit, or, for
// whole cores, the limit when every thread is free.
uint32_t core_cap(const NodeView &v, const Request &req, uint32_t k) {
    const CoreInfo &c = v.cpu->cores[k];
    const auto free = static_cast<uint32_t>(
        std::popcount(bits_at(v.free_cpus, c.first_cpu, c.nthreads)));
    if (req.whole_cores)
        return free == c.nthreads ? std::min(thread_limit(req), c.nthreads) : 0;
    return std::min(thread_limit(req), free);
}

// Cell capacities with word operations when every core has 1 or 2 threads
// (cores then sit at even bits and never straddle a word).
void measure_cells_fast(const NodeView &v, const Request &req, Domains &d) {
    const CpuTopology &t = *v.cpu;
    const uint32_t limit = thread_limit(req);
    for (size_t c = 0; c < t.cells.size(); ++c) {
        const uint64_t *m = t.cells[c].mask.data();
        uint32_t free = 0, both = 0, any = 0;
        for (size_t i = 0; i < t.words; ++i) {
            const uint64_t w = v.free_cpus[i] & m[i];
            free += static_cast<uint32_t>(std::popcount(w));
            if (t.uniform_threads == 2) {
                both += static_cast<uint32_t>(std::popcount(w & (w >> 1) & t.core_leads[i]));
                any += static_cast<uint32_t>(std::popcount((w | (w >> 1)) & t.core_leads[i]));
            }
        }
        Hist &h = d.cell_hist[c];
        if (t.uniform_threads == 1) {
            h[1] = static_cast<uint16_t>(free);  // one thread: whole core == free CPU
        } else if (req.whole_cores) {
            h[std::min(limit, 2U)] = static_cast<uint16_t>(both);
        } else if (limit >= 2) {
            h[2] = static_cast<uint16_t>(both);
            h[1] = static_cast<uint16_t>(any - both);
        } else {
            h[1] = static_cast<uint16_t>(any);
        }
        d.cell_free[c] = free;
        d.cell_cap[c] = h[1] + 2U * h[2];
    }
}

void measure_cells_slow(const NodeView &v, const Request &req, Domains &d) {
    const CpuTopology &t = *v.cpu;
    for (uint32_t k = 0; k < t.cores.size(); ++k) {
        const CoreInfo &c = t.cores[k];
        const uint32_t cap = core_cap(v, req, k);
        d.cell_cap[c.cell] += cap;
        d.cell_free[c.cell] += static_cast<uint32_t>(
            std::popcount(bits_at(v.free_cpus, c.first_cpu, c.nthreads)));
        d.cell_hist[c.cell][cap]++;
    }
}

void measure(const NodeView &v, const Request &req, Domains &d) {
    const CpuTopology *t = v.cpu;
    const size_t ncells = t ? t->cells.size() : 0;
    const size_t nnuma = t ? t->numas.size() : 0;
    d.cell_cap.assign(ncells, 0);
    d.cell_free.assign(ncells, 0);
    d.cell_hist.assign(ncells, Hist{});
    d.numa_cap.assign(nnuma, 0);
    d.numa_free.assign(nnuma, 0);
    d.numa_gpus.assign(nnuma, 0);
    d.numa_cells.assign(nnuma, 0);
    d.total_cap = d.unknown_gpus = d.total_gpus = 0;
    if (t && (t->uniform_threads == 1 || t->uniform_threads == 2))
        measure_cells_fast(v, req, d);
    else if (t)
        measure_cells_slow(v, req, d);
    for (size_t c = 0; c < ncells; ++c) {
        const uint32_t n = t->cells[c].numa;
        d.numa_cap[n] += d.cell_cap[c];
        d.numa_free[n] += d.cell_free[c];
        d.numa_cells[n] |= uint64_t{1} << c;
        d.total_cap += d.cell_cap[c];
    }
    for (size_t g = 0; g < v.ngpus && g < 64; ++g) {
        if (!((v.free_gpus >> g) & 1U))
            continue;
        d.total_gpus++;
        if (v.gpus[g].numa == kUnknown)
            d.unknown_gpus++;
        else
            d.numa_gpus[static_cast<size_t>(v.gpus[g].numa)]++;
    }
}

template <class F>
uint32_t sum_over(uint64_t mask, F &&f) {
    uint32_t s = 0;
    while (mask) {
        s += f(static_cast<size_t>(std::countr_zero(mask)));
        mask &= mask - 1;
    }
    return s;
}

// Fewest cores whose capacities reach `need` (largest capacities first).
uint32_t min_cores(const Hist &h, uint32_t need) {
    uint32_t cores = 0;
    for (uint32_t cap = kMaxCap; cap > 0 && need > 0; --cap) {
        const uint32_t take = std::min<uint32_t>(h[cap], (need + cap - 1) / cap);
        cores += take;
        need = take * cap >= need ? 0 : need - take * cap;
    }
    return cores;
}

struct Context {
    const NodeView &v;
    const Request &req;
    const Domains &d;
    uint32_t want = 0;
};

uint32_t gpu_distance(const Context &x, size_t g, uint64_t numa_c, uint64_t sock_c) {
    const GpuInfo &gpu = x.v.gpus[g];
    if (gpu.numa != kUnknown && ((numa_c >> gpu.numa) & 1U))
        return 0;
    if (!gpu.pcie_root.empty()) {
        for (uint64_t m = numa_c; m; m &= m - 1) {
            const auto &roots = x.v.cpu->numas[static_cast<size_t>(std::countr_zero(m))].pcie_roots;
            if (std::find(roots.begin(), roots.end(), gpu.pcie_root) != roots.end())
                return 1;
        }
    }
    if (gpu.socket != kUnknown && ((sock_c >> gpu.socket) & 1U))
        return 2;
    return 3;
}

bool gpu_allowed(const Context &x, size_t g, uint64_t numa_m) {
    if (!((x.v.free_gpus >> g) & 1U))
        return false;
    const int32_t n = x.v.gpus[g].numa;
    return n == kUnknown || ((numa_m >> n) & 1U);
}

uint64_t numas_of_cells(const Context &x, uint64_t cells) {
    uint64_t m = 0;
    for (; cells; cells &= cells - 1)
        m |= uint64_t{1} << x.v.cpu->cells[static_cast<size_t>(std::countr_zero(cells))].numa;
    return m;
}

uint64_t sockets_of_numas(const Context &x, uint64_t numas) {
    uint64_t s = 0;
    for (; numas; numas &= numas - 1)
        s |= uint64_t{1} << x.v.cpu->numas[static_cast<size_t>(std::countr_zero(numas))].socket;
    return s;
}

// Sum of the `want` smallest GPU distances among the allowed GPUs.
uint32_t gpu_cost(const Context &x, uint64_t numa_m, uint64_t cells) {
    if (x.req.gpus == 0)
        return 0;
    const uint64_t numa_c = x.v.cpu ? numas_of_cells(x, cells) : 0;
    const uint64_t sock_c = x.v.cpu ? sockets_of_numas(x, numa_c) : 0;
    std::array<uint32_t, 4> hist{};
    for (size_t g = 0; g < x.v.ngpus && g < 64; ++g)
        if (gpu_allowed(x, g, numa_m))
            hist[gpu_distance(x, g, numa_c, sock_c)]++;
    uint32_t left = x.req.gpus, cost = 0;
    for (uint32_t dist = 0; dist < 4 && left; ++dist) {
        const uint32_t take = std::min(left, hist[dist]);
        cost += take * dist;
        left -= take;
    }
    return cost;
}

bool numa_set_fits(const Context &x, uint64_t m) {
    const uint32_t cap = sum_over(m, [&](size_t n) { return x.d.numa_cap[n]; });
    const uint32_t gpus = sum_over(m, [&](size_t n) { return x.d.numa_gpus[n]; });
    return cap >= x.want && gpus + x.d.unknown_gpus >= x.req.gpus;
}

// The cells of a NUMA set that have capacity (at most 64: checked by the builder).
struct CellList {
    std::array<uint32_t, 64> cell;
    unsigned n = 0;
};

CellList usable_cells(const Context &x, uint64_t m) {
    CellList out;
    for (uint64_t mm = m; mm; mm &= mm - 1) {
        for (uint64_t c = x.d.numa_cells[static_cast<size_t>(std::countr_zero(mm))]; c; c &= c - 1) {
            const auto ci = static_cast<uint32_t>(std::countr_zero(c));
            if (x.d.cell_cap[ci] > 0)
                out.cell[out.n++] = ci;
        }
    }
    return out;
}

// Fewest cells of the list whose capacities reach the request.
uint32_t min_cells(const Context &x, const CellList &cells) {
    if (x.want == 0)
        return 0;
    std::array<uint32_t, 64> caps;
    for (unsigned i = 0; i < cells.n; ++i)
        caps[i] = x.d.cell_cap[cells.cell[i]];
    std::sort(caps.begin(), caps.begin() + cells.n, std::greater<>());
    uint32_t sum = 0;
    for (unsigned i = 0; i < cells.n; ++i) {
        sum += caps[i];
        if (sum >= x.want)
            return i + 1;
    }
    return UINT32_MAX;
}

struct Choice {
    bool found = false;
    Score score;
    uint64_t numa = 0;
    uint64_t cells = 0;
};

// True when the first `n` rules of s are already worse than those of best:
// the remaining rules cannot make up for it, so scoring can stop.
bool worse_prefix(const Choice &best, const Score &s, int n) {
    if (!best.found)
        return false;
    const uint32_t a[] = {s.numa_nodes, s.l3_groups, s.sockets, s.cores, s.gpu_distance,
                          s.free_in_numa};
    const uint32_t b[] = {best.score.numa_nodes, best.score.l3_groups, best.score.sockets,
                          best.score.cores, best.score.gpu_distance, best.score.free_in_numa};
    for (int i = 0; i < n; ++i)
        if (a[i] != b[i])
            return a[i] > b[i];
    return false;
}

// Scores (m, cells) rule by rule and keeps it when it beats best.
void consider(const Context &x, Choice &best, uint64_t m, uint64_t cells, uint32_t k1,
              uint32_t k2, uint32_t sockets, uint32_t free_m) {
    Score s;
    s.numa_nodes = k1;
    s.l3_groups = k2;
    s.sockets = sockets;
    if (worse_prefix(best, s, 3))
        return;
    Hist h{};
    for (uint64_t c = cells; c; c &= c - 1) {
        const Hist &ch = x.d.cell_hist[static_cast<size_t>(std::countr_zero(c))];
        for (uint32_t i = 0; i <= kMaxCap; ++i)
            h[i] = static_cast<uint16_t>(h[i] + ch[i]);
    }
    s.cores = min_cores(h, x.want);
    if (worse_prefix(best, s, 4))
        return;
    s.gpu_distance = gpu_cost(x, m, cells);
    s.free_in_numa = free_m;
    if (worse_prefix(best, s, 6))
        return;
    s.free_in_l3 = sum_over(cells, [&](size_t c) { return x.d.cell_free[c]; });
    if (!best.found || s < best.score)
        best = {true, s, m, cells};
}

// Rules 2..6 for the NUMA sets that won rule 1; nothing when the budget
// cannot pay for the L3 sets to enumerate.
Choice best_in(const Context &x, const std::vector<uint64_t> &sets, uint32_t k1, Budget &budget) {
    Choice best;
    // Per set: (fewest cells that hold the request, usable cells).
    thread_local std::vector<std::pair<uint32_t, unsigned>> mins;
    mins.clear();
    uint32_t k2 = UINT32_MAX;
    for (uint64_t m : sets) {
        const CellList list = usable_cells(x, m);
        mins.emplace_back(min_cells(x, list), list.n);
        k2 = std::min(k2, mins.back().first);
    }
    uint64_t cost = 0;
    for (const auto &[k, n] : mins)
        if (k == k2)
            cost = k2 == 0 ? cost + 1 : std::min(UINT64_MAX - cost, binomial(n, k2)) + cost;
    if (!budget.pay(cost))
        return best;
    for (size_t i = 0; i < sets.size(); ++i) {
        const uint64_t m = sets[i];
        if (mins[i].first != k2)
            continue;
        const auto sockets = static_cast<uint32_t>(
            std::popcount(x.v.cpu ? sockets_of_numas(x, m) : 0));
        const uint32_t free_m = sum_over(m, [&](size_t n) { return x.d.numa_free[n]; });
        if (k2 == 0) {
            consider(x, best, m, 0, k1, 0, sockets, free_m);
            continue;
        }
        const CellList list = usable_cells(x, m);
        for (uint64_t sub = first_subset(k2); sub; sub = next_subset(sub, list.n)) {
            uint64_t mask = 0;
            uint32_t cap = 0;
            for (uint64_t b = sub; b; b &= b - 1) {
                const uint32_t c = list.cell[static_cast<size_t>(std::countr_zero(b))];
                mask |= uint64_t{1} << c;
                cap += x.d.cell_cap[c];
            }
            if (cap >= x.want)
                consider(x, best, m, mask, k1, k2, sockets, free_m);
        }
    }
    return best;
}

Choice search(const Context &x, Budget &budget) {
    const auto n = static_cast<unsigned>(x.v.cpu ? x.v.cpu->numas.size() : 0);
    // Largest capacities and GPU counts first: no k-set can beat the top k,
    // so sizes whose top k fall short are skipped without enumeration.
    std::array<uint32_t, 64> caps{}, gpus{};
    for (unsigned i = 0; i < n; ++i) {
        caps[i] = x.d.numa_cap[i];
        gpus[i] = x.d.numa_gpus[i];
    }
    std::sort(caps.begin(), caps.begin() + n, std::greater<>());
    std::sort(gpus.begin(), gpus.begin() + n, std::greater<>());
    uint32_t top_cap = 0, top_gpus = x.d.unknown_gpus;
    thread_local std::vector<uint64_t> feasible;
    for (unsigned k = 0; k <= n; ++k) {
        if (k > 0) {
            top_cap += caps[k - 1];
            top_gpus += gpus[k - 1];
        }
        if (top_cap < x.want || top_gpus < x.req.gpus)
            continue;
        if (!budget.pay(k == 0 ? 1 : binomial(n, k)))
            return {};
        feasible.clear();
        if (k == 0) {
            if (numa_set_fits(x, 0))
                feasible.push_back(0);
        } else {
            for (uint64_t m = first_subset(k); m; m = next_subset(m, n))
                if (numa_set_fits(x, m))
                    feasible.push_back(m);
        }
        if (!feasible.empty())
            return best_in(x, feasible, k, budget);
    }
    return {};
}

// The fallback when the exact search is over budget (bound in placement.h).
// Each sequence adds NUMA nodes until the request fits: while GPUs are
// short those with the most GPUs, then those with the most capacity
// (fullest first on ties); nodes of the preferred sockets before the rest.
// The sequence from the empty set with no preference is largest first,
// which reaches the fewest NUMA nodes for CPUs alone; the one from each
// NUMA node keeps to its socket where it can.
Choice greedy(const Context &x, uint32_t &scored) {
    const auto n = static_cast<unsigned>(x.v.cpu ? x.v.cpu->numas.size() : 0);
    std::array<uint8_t, 64> by_cap{}, by_gpus{};
    for (unsigned i = 0; i < n; ++i)
        by_cap[i] = by_gpus[i] = static_cast<uint8_t>(i);
    const auto more_cap = [&](uint8_t a, uint8_t b) {
        if (x.d.numa_cap[a] != x.d.numa_cap[b])
            return x.d.numa_cap[a] > x.d.numa_cap[b];
        if (x.d.numa_free[a] != x.d.numa_free[b])
            return x.d.numa_free[a] < x.d.numa_free[b];
        return a < b;
    };
    std::sort(by_cap.begin(), by_cap.begin() + n, more_cap);
    std::sort(by_gpus.begin(), by_gpus.begin() + n, [&](uint8_t a, uint8_t b) {
        if (x.d.numa_gpus[a] != x.d.numa_gpus[b])
            return x.d.numa_gpus[a] > x.d.numa_gpus[b];
        return more_cap(a, b);
    });
    unsigned with_gpus = 0;  // by_gpus prefix of NUMA nodes with free GPUs
    while (with_gpus < n && x.d.numa_gpus[by_gpus[with_gpus]] > 0)
        ++with_gpus;

    Choice best;
    const auto run = [&](uint64_t m, uint64_t preferred_sockets) {
        uint32_t cap = sum_over(m, [&](size_t i) { return x.d.numa_cap[i]; });
        uint32_t gpus = x.d.unknown_gpus + sum_over(m, [&](size_t i) { return x.d.numa_gpus[i]; });
        // Cursors: (GPU order, capacity order) x (preferred sockets, any).
        unsigned at[2][2] = {{0, 0}, {0, 0}};
        const auto next = [&](const std::array<uint8_t, 64> &order, unsigned len,
                              unsigned *cur) -> int {
            for (int pass = 0; pass < 2; ++pass) {
                for (unsigned &i = cur[pass]; i < len; ++i) {
                    const uint8_t j = order[i];
                    if (((m >> j) & 1U) ||
                        (pass == 0 && !((preferred_sockets >> x.v.cpu->numas[j].socket) & 1U)))
                        continue;
                    return j;
                }
            }
            return -1;
        };
        while (cap < x.want || gpus < x.req.gpus) {
            int j = gpus < x.req.gpus ? next(by_gpus, with_gpus, at[0]) : -1;
            if (j < 0)
                j = next(by_cap, n, at[1]);
            if (j < 0)
                return;  // cannot happen: the whole node fits (shortage() passed)
            m |= uint64_t{1} << j;
            cap += x.d.numa_cap[static_cast<size_t>(j)];
            gpus += x.d.numa_gpus[static_cast<size_t>(j)];
        }
        // Drop NUMA nodes not needed, smallest first: no NUMA node can then
        // be left out, so every choice inside m touches all of it (rule 1
        // counts m, as in the exact search).
        for (unsigned i = n; i-- > 0;) {
            const uint8_t j = by_cap[i];
            if (!((m >> j) & 1U))
                continue;
            if (cap - x.d.numa_cap[j] >= x.want && gpus - x.d.numa_gpus[j] >= x.req.gpus) {
                m &= ~(uint64_t{1} << j);
                cap -= x.d.numa_cap[j];
                gpus -= x.d.numa_gpus[j];
            }
        }
        // L3 groups largest first (fullest on ties): the fewest inside m,
        // so every choice inside them touches all of them.
        CellList list = usable_cells(x, m);
        std::sort(list.cell.begin(), list.cell.begin() + list.n, [&](uint32_t a, uint32_t b) {
            if (x.d.cell_cap[a] != x.d.cell_cap[b])
                return x.d.cell_cap[a] > x.d.cell_cap[b];
            if (x.d.cell_free[a] != x.d.cell_free[b])
                return x.d.cell_free[a] < x.d.cell_free[b];
            return a < b;
        });
        uint64_t cells = 0;
        uint32_t got = 0, k2 = 0;
        for (unsigned i = 0; i < list.n && got < x.want; ++i, ++k2) {
            cells |= uint64_t{1} << list.cell[i];
            got += x.d.cell_cap[list.cell[i]];
        }
        const auto sockets = static_cast<uint32_t>(
            std::popcount(x.v.cpu ? sockets_of_numas(x, m) : 0));
        const uint32_t free_m = sum_over(m, [&](size_t i) { return x.d.numa_free[i]; });
        ++scored;
        consider(x, best, m, cells, static_cast<uint32_t>(std::popcount(m)), k2, sockets,
                 free_m);
    };
    run(0, 0);
    for (unsigned s = 0; s < n; ++s)
        run(uint64_t{1} << s, uint64_t{1} << x.v.cpu->numas[s].socket);
    return best;
}

void materialise(const Context &x, const Choice &c, Placement &p) {
    std::vector<std::pair<uint32_t, uint32_t>> cores;  // (capacity, core)
    for (uint64_t cm = c.cells; cm; cm &= cm - 1)
        for (uint32_t k : x.v.cpu->cells[static_cast<size_t>(std::countr_zero(cm))].cores)
            if (const uint32_t cap = core_cap(x.v, x.req, k); cap > 0)
                cores.emplace_back(cap, k);
    std::sort(cores.begin(), cores.end(), [](const auto &a, const auto &b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    uint32_t need = x.want;
    for (const auto &[cap, k] : cores) {
        if (need == 0)
            break;
        const CoreInfo &core = x.v.cpu->cores[k];
        const uint32_t take = std::min(need, cap);
        uint32_t taken = 0;
        for (uint32_t t = 0; t < core.nthreads; ++t) {
            const uint32_t cpu = core.first_cpu + t;
            if (x.req.whole_cores || (bit_test(x.v.free_cpus, cpu) && taken < take)) {
                p.cpus.push_back(cpu);
                taken++;
            }
        }
        need -= take;
    }
    std::sort(p.cpus.begin(), p.cpus.end());
    if (x.req.gpus == 0)
        return;
    const uint64_t numa_c = x.v.cpu ? numas_of_cells(x, c.cells) : 0;
    const uint64_t sock_c = x.v.cpu ? sockets_of_numas(x, numa_c) : 0;
    std::vector<std::pair<uint32_t, uint32_t>> gpus;  // (distance, index)
    for (size_t g = 0; g < x.v.ngpus && g < 64; ++g)
        if (gpu_allowed(x, g, c.numa))
            gpus.emplace_back(gpu_distance(x, g, numa_c, sock_c), static_cast<uint32_t>(g));
    std::sort(gpus.begin(), gpus.end());
    for (size_t i = 0; i < x.req.gpus && i < gpus.size(); ++i)
        p.gpus.push_back(gpus[i].second);
    std::sort(p.gpus.begin(), p.gpus.end());
}

std::string shortage(const Request &req, uint32_t want, const Domains &d) {
    if (d.total_cap < want) {
        std::string unit = req.whole_cores ? " in whole free cores" : "";
        if (req.threads_per_core)
            unit += " at " + std::to_string(req.threads_per_core) + " thread(s) per core";
        return "does not fit: needs " + std::to_string(want) + " CPUs" + unit + ", " +
               std::to_string(d.total_cap) + " available";
    }
    if (d.total_gpus < req.gpus)
        return "does not fit: needs " + std::to_string(req.gpus) + " GPUs, " +
               std::to_string(d.total_gpus) + " free";
    return {};
}

thread_local Domains scratch;

// Shared by place() and rank_nodes(): fills p.fits/reason/score/stats.
Choice evaluate(const NodeView &v, const Request &req, Placement &p,
                const SearchOptions &opts = {}) {
    measure(v, req, scratch);
    const Context x{v, req, scratch, cpus_wanted(req)};
    p.reason = shortage(req, x.want, scratch);
    if (!p.reason.empty())
        return {};
    Budget budget{opts.budget};
    Choice c = search(x, budget);
    p.stats.candidates = budget.used;
    if (budget.exhausted) {
        p.stats.exact = false;
        c = greedy(x, p.stats.greedy_sets);
    }
    if (!c.found) {
        p.reason = "does not fit: no NUMA set offers the CPUs and GPUs together";
        return c;
    }
    p.fits = true;
    p.score = c.score;
    return c;
}

}  // namespace

uint32_t cpus_wanted(const Request &r) { return std::max(r.cpus, r.gpus * r.cpus_per_gpu); }

Placement place(const NodeView &node, const Request &req, const SearchOptions &opts) {
    Placement p;
    const Choice c = evaluate(node, req, p, opts);
    if (p.fits)
        materialise(Context{node, req, scratch, cpus_wanted(req)}, c, p);
    return p;
}

NodeScore score_node(const NodeView &node, const Request &req, const SearchOptions &opts) {
    Placement p;
    evaluate(node, req, p, opts);
    return {p.fits, p.score};
}

}  // namespace k8s_cons_tres
