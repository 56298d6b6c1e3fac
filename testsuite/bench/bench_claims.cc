// SPDX-License-Identifier: GPL-2.0-or-later
// Claim write benchmark of the k8s_client ClaimWriter (not a test).
//
//   bench_claims --kubeconfig F [--rate 200] [--count 2000] [--ns default]
//
// Offers `rate` claims per second. Each claim is created, its status written
// (one apply = POST + PUT status), then deleted. Reports client-side latency
// (queued -> done) p50/p99 for apply and delete, and the sustained rate of
// completed claims (apply and delete both done).
#include "k8s_sync/claim_writer.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <thread>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
    std::string kubeconfig, ns = "default";
    double rate = 200;
    long count = 2000;
};

Args parse(int argc, char **argv) {
    Args a;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string k = argv[i], v = argv[i + 1];
        if (k == "--kubeconfig") a.kubeconfig = v;
        else if (k == "--rate") a.rate = std::stod(v);
        else if (k == "--count") a.count = std::stol(v);
        else if (k == "--ns") a.ns = v;
        else throw std::runtime_error("unknown option " + k);
    }
    if (a.kubeconfig.empty())
        throw std::runtime_error("--kubeconfig is required");
    return a;
}

double pct(std::vector<double> v, double p) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(p / 100.0 * double(v.size())))];
}

ClaimIntent intent(const std::string &ns, uint64_t job) {
    std::string node = "node" + std::to_string(job % 64);
    ClaimIntent in;
    in.ns = ns;
    in.name = claimName("bench", job, node);
    in.labels = claimLabels("bench", job, node);
    in.nodeName = node;
    in.results = {{"cpu", "dra.cpu", node, "cpudev000", "", {}},
                  {"cpu", "dra.cpu", node, "cpudev001", "", {}},
                  {"gpu", "gpu.nvidia.com", node, "gpu-0", "", {}}};
    return in;
}

}  // namespace

int main(int argc, char **argv) {
    try {
        Args a = parse(argc, argv);
        auto cfg = std::make_shared<Config>(loadKubeconfig(a.kubeconfig));
        WriterOptions o;
        o.capacity = size_t(a.count) * 2;
        ClaimWriter w(cfg, o, Logger([](LogLevel l, const std::string &m) {
                          if (l == LogLevel::Error)
                              std::fprintf(stderr, "%s\n", m.c_str());
                      }, "bench: "));
        std::mutex mu;
        std::condition_variable cv;
        std::vector<double> applyMs, removeMs;
        long removed = 0, failed = 0, appliedOk = 0;
        std::vector<std::pair<std::string, std::string>> toRemove;
        w.onResult([&](const ClaimOpResult &r) {
            std::lock_guard<std::mutex> lk(mu);
            double ms = double(r.latency.count()) / 1000.0;
            if (!r.ok)
                ++failed;
            if (r.kind == ClaimOpResult::Kind::Apply) {
                applyMs.push_back(ms);
                if (r.ok) {
                    ++appliedOk;
                    toRemove.emplace_back(r.ns, r.name);  // deleted by the main loop
                }
            } else {
                removeMs.push_back(ms);
                ++removed;
            }
            cv.notify_all();
        });
        w.start();
        auto t0 = Clock::now();
        auto period = std::chrono::duration<double>(1.0 / a.rate);
        long offered = 0;
        while (true) {
            // Offer new claims on schedule, and deletions as applies finish.
            auto due = t0 + std::chrono::duration_cast<Clock::duration>(period * double(offered));
            std::vector<std::pair<std::string, std::string>> dels;
            {
                std::unique_lock<std::mutex> lk(mu);
                auto finished = [&] {
                    return offered >= a.count && long(applyMs.size()) >= a.count &&
                           toRemove.empty() && long(removeMs.size()) >= appliedOk;
                };
                if (finished())
                    break;
                cv.wait_until(lk, offered < a.count ? due : Clock::now() + std::chrono::seconds(1),
                              [&] { return !toRemove.empty() || finished(); });
                dels.swap(toRemove);
            }
            for (auto &[ns, name] : dels)
                if (!w.remove(ns, name))
                    std::fprintf(stderr, "queue full\n");
            if (offered < a.count && Clock::now() >= due) {
                if (!w.apply(intent(a.ns, uint64_t(offered) + 1)))
                    std::fprintf(stderr, "queue full\n");
                ++offered;
            }
        }
        double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        WriterStats st = w.stats();
        w.stop();
        std::printf("{\"offeredRate\":%.0f,\"claims\":%ld,\"seconds\":%.2f,"
                    "\"sustainedClaimsPerSec\":%.1f,\"applyP50ms\":%.2f,\"applyP99ms\":%.2f,"
                    "\"deleteP50ms\":%.2f,\"deleteP99ms\":%.2f,\"failed\":%ld,\"retries\":%lu}\n",
                    a.rate, a.count, secs, double(removed) / secs, pct(applyMs, 50),
                    pct(applyMs, 99), pct(removeMs, 50), pct(removeMs, 99), failed,
                    (unsigned long)st.retries);
        return failed ? 1 : 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_claims: %s\n", e.what());
        return 1;
    }
}
