// SPDX-License-Identifier: GPL-2.0-or-later
// The whole Kubernetes -> engine path as slurmctld runs it (a benchmark,
// not a test): the core started with a k8s_cons_tres.conf pointing at a test
// API server, time until the engine answers for every node, peak RSS, and
// how long a burst of pod-claim changes takes to reach the engine.
//
//   bench_feed --kubeconfig F --nodes N [--changes 20] [--state-dir D]
//
// Run the server with --synthetic-nodes N (see k8s_sync/README.md).
#include "core/engine.h"
#include "core/k8s_cons_tres.h"
#include "core/k8s_cons_tres_ctld.h"
#include "k8s_sync/engine_feed.h"

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>
#include <algorithm>

namespace {

using Clock = std::chrono::steady_clock;

// From the core's verbose log: when the last informer finished its first
// list, and how long the first inventory took to build.
std::atomic<Clock::rep> g_listed{0};
std::atomic<long> g_first_build_ms{-1};

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

long peak_rss_mib() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

size_t usable_nodes() {
    auto engine = k8s_cons_tres::running_engine();
    auto inv = engine ? engine->current() : nullptr;
    size_t n = 0;
    if (inv)
        for (const auto &e : inv->nodes()) n += e.usable();
    return n;
}

}  // namespace

int main(int argc, char **argv) {
    std::string kubeconfig, state_dir;
    size_t nodes = 0, changes = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string k = argv[i], v = argv[i + 1];
        if (k == "--kubeconfig") kubeconfig = v;
        else if (k == "--nodes") nodes = std::strtoul(v.c_str(), nullptr, 10);
        else if (k == "--changes") changes = std::strtoul(v.c_str(), nullptr, 10);
        else if (k == "--state-dir") state_dir = v;
    }
    if (kubeconfig.empty() || !nodes) {
        std::fprintf(stderr, "usage: bench_feed --kubeconfig F --nodes N [--changes C] [--state-dir D]\n");
        return 2;
    }
    setvbuf(stdout, nullptr, _IOLBF, 0);
    const std::string kubectl = "kubectl --kubeconfig " + kubeconfig + " -n default ";
    // claims left by an earlier run would make the new ones double bookings
    if (std::system((kubectl + "delete resourceclaims --all >/dev/null").c_str()) != 0) return 1;
    const std::string conf = "/tmp/bench_feed.conf";
    std::ofstream(conf) << "Kubeconfig=" << kubeconfig << "\nDebugLevel=verbose\nStaleAfter=600\n";
    auto log = [](int level, const char *msg) {
        if (level == K8S_CONS_TRES_LOG_ERROR) std::fprintf(stderr, "%s\n", msg);
        if (g_first_build_ms.load() >= 0) return;
        if (std::strstr(msg, "listed at resourceVersion")) g_listed = Clock::now().time_since_epoch().count();
        if (const char *p = std::strstr(msg, " rebuilt in ")) g_first_build_ms = std::strtol(p + 12, nullptr, 10);
    };
    k8s_cons_tres_start_args args{conf.c_str(), log, "bench", state_dir.empty() ? nullptr : state_dir.c_str(), 0};
    char err[512];
    const auto start = Clock::now();
    if (k8s_cons_tres_start(&args, err, sizeof err) != K8S_CONS_TRES_OK) {
        std::fprintf(stderr, "start failed: %s\n", err);
        return 1;
    }
    for (auto last = Clock::now(); usable_nodes() < nodes; std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
        if (seconds_since(last) > 10) {
            std::fprintf(stderr, "... %zu of %zu nodes usable after %.0f s\n", usable_nodes(), nodes, seconds_since(start));
            last = Clock::now();
        }
    }
    const double ingest = seconds_since(start);
    const long rss = peak_rss_mib();
    std::printf("| first complete view of %zu nodes | %.2f s |\n| peak RSS | %ld MiB |\n", nodes, ingest, rss);
    if (g_listed.load() && g_first_build_ms.load() >= 0)
        std::printf("| of which: informers listed | %.2f s |\n| of which: first inventory built | %.2f s |\n",
                    std::chrono::duration<double>(Clock::time_point(Clock::duration(g_listed.load())) - start).count(),
                    g_first_build_ms.load() / 1000.0);

    // Pods take a GPU on one node at a time: from the moment the API server
    // has the allocation to the moment the engine's view has moved.
    std::vector<double> lags;
    for (size_t i = 0; i < changes; ++i) {
        const std::string name = "bench-" + std::to_string(i);
        char node[32];
        std::snprintf(node, sizeof node, "node%05zu", (i * 7919) % nodes);
        std::string create = kubectl + "create -f - >/dev/null <<'EOF'\n"
            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
            "\"metadata\":{\"name\":\"" + name + "\"},"
            "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}]}}}\nEOF";
        std::string allocate = kubectl + "patch resourceclaim " + name +
            " --subresource=status --type=merge -p '{\"status\":{\"allocation\":{\"devices\":{\"results\":"
            "[{\"request\":\"gpu\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"" + node +
            "\",\"device\":\"gpu-0\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":"
            "[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"" + node + "\"]}]}]}}}}' >/dev/null";
        if (std::system(create.c_str()) != 0) return 1;
        const uint64_t gen = k8s_cons_tres_view_generation();
        if (std::system(allocate.c_str()) != 0) return 1;
        const auto t = Clock::now();
        while (k8s_cons_tres_view_generation() == gen && seconds_since(t) < 120)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        lags.push_back(seconds_since(t));
    }
    std::sort(lags.begin(), lags.end());
    std::printf("| a pod's GPU claim seen by the engine (median of %zu; includes the 200 ms coalescing) | %.3f s |\n",
                lags.size(), lags[lags.size() / 2]);
    const auto stop = Clock::now();
    k8s_cons_tres_stop();
    std::printf("| stop | %.2f s |\n| peak RSS at the end | %ld MiB |\n", seconds_since(stop), peak_rss_mib());
    return std::system((kubectl + "delete resourceclaims --all >/dev/null").c_str()) == 0 ? 0 : 1;
}
