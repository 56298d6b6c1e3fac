// SPDX-License-Identifier: GPL-2.0-or-later
// Ingest benchmark of the k8s_client informers (not a test).
//
//   bench_ingest --kubeconfig F [--mode client|server] [--drivers a,b]
//                [--page-size N] [--events N]
//
// --mode server: only fetches every list page (no parsing), to measure what
//   the API server and the transfer cost on their own.
// --mode client: starts the InventoryWatcher and reports the time to the
//   first complete (synced) snapshot, the client's CPU time, its peak RSS,
//   and then the cost of applying one watch event (decode + copy-on-write
//   update + snapshot publication), measured in-process without the server.
#include "k8s_sync/claim_json.h"
#include "k8s_sync/inventory_handlers.h"
#include "k8s_sync/inventory_watcher.h"
#include "k8s_sync/slice_json.h"

#include <sys/resource.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <sstream>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
    std::string kubeconfig, mode = "client", drivers = "dra.cpu,gpu.nvidia.com";
    int pageSize = 500;
    int events = 2000;
};

Args parse(int argc, char **argv) {
    Args a;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string k = argv[i], v = argv[i + 1];
        if (k == "--kubeconfig") a.kubeconfig = v;
        else if (k == "--mode") a.mode = v;
        else if (k == "--drivers") a.drivers = v;
        else if (k == "--page-size") a.pageSize = std::stoi(v);
        else if (k == "--events") a.events = std::stoi(v);
        else throw std::runtime_error("unknown option " + k);
    }
    if (a.kubeconfig.empty())
        throw std::runtime_error("--kubeconfig is required");
    return a;
}

std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string x; std::getline(ss, x, ',');)
        out.push_back(x);
    return out;
}

long statusKiB(const char *field) {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind(field, 0) == 0)
            return std::stol(line.substr(std::string(field).size()));
    return -1;
}

double cpuSeconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto sec = [](timeval t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
    return sec(ru.ru_utime) + sec(ru.ru_stime);
}

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Fetches every page of every informer's list, without decoding.
int runServer(const Args &a, std::shared_ptr<const Config> cfg) {
    Client c(cfg, std::make_shared<TokenSource>(*cfg), ClientOptions{},
             std::make_shared<Stopper>());
    std::vector<std::string> paths;
    for (const auto &d : split(a.drivers))
        paths.push_back("/apis/resource.k8s.io/v1/resourceslices?fieldSelector=" +
                        urlEncode("spec.driver=" + d));
    paths.push_back("/apis/resource.k8s.io/v1/resourceclaims?x=1");
    size_t bytes = 0, pages = 0;
    auto t0 = Clock::now();
    for (const auto &p : paths) {
        std::string cont;
        do {
            std::string q = p + "&limit=" + std::to_string(a.pageSize);
            if (!cont.empty())
                q += "&continue=" + urlEncode(cont);
            HttpResponse r = c.get(q);
            if (!r.ok())
                throw std::runtime_error(c.describe(r, "LIST"));
            bytes += r.body.size();
            ++pages;
            // Only the continue token is looked at: the last bytes of metadata.
            auto pos = r.body.find("\"continue\":\"");
            cont.clear();
            if (pos != std::string::npos && pos < 4096) {
                auto end = r.body.find('"', pos + 12);
                cont = r.body.substr(pos + 12, end - pos - 12);
            }
        } while (!cont.empty());
    }
    std::printf("{\"mode\":\"server\",\"seconds\":%.3f,\"bytes\":%zu,\"pages\":%zu,"
                "\"MBps\":%.1f}\n",
                since(t0), bytes, pages, double(bytes) / 1e6 / since(t0));
    return 0;
}

struct EventCost {
    double median, best;  // microseconds per event over 5 rounds
};

// Times MODIFIED events through the production event path, in 5 rounds so
// that noise from other work on the machine shows as spread, not as cost.
template <class Handler>
EventCost perEventMicros(Handler &h, std::vector<std::string> events) {
    constexpr size_t kRounds = 5;
    size_t per = events.size() / kRounds;
    std::vector<double> rounds;
    for (size_t r = 0; r < kRounds; ++r) {
        auto t0 = Clock::now();
        for (size_t i = r * per; i < (r + 1) * per; ++i) {
            applyWatchEvent(h, events[i]);
            h.commit();
        }
        rounds.push_back(since(t0) * 1e6 / double(per));
    }
    std::sort(rounds.begin(), rounds.end());
    return {rounds[kRounds / 2], rounds[0]};
}

std::string modified(const std::string &object) {
    return "{\"type\":\"MODIFIED\",\"object\":" + object + "}";
}

void eventCosts(const Args &a, const Snapshot &snap) {
    for (const auto &driver : split(a.drivers)) {
        auto it = snap.slicesByDriver.find(driver);
        if (it == snap.slicesByDriver.end() || it->second.size() == 0)
            continue;
        SnapshotStore store({driver});
        SliceHandler h(store, driver, Logger());
        // Seed the handler with the full inventory through its list path.
        h.beginList();
        std::vector<ResourceSlice> sample;
        it->second.forEach([&](const std::string &, const CompactSlice &c) {
            ResourceSlice s = c.expand();
            rapidjson::Document d;
            std::string text = encodeResourceSlice(s);
            json::parseInsitu(d, text);
            h.listItem(d);
            if (sample.size() < 64)
                sample.push_back(std::move(s));
        });
        h.endList();
        std::vector<std::string> events;
        for (int i = 0; i < a.events; ++i) {
            ResourceSlice s = sample[size_t(i) % sample.size()];
            s.resourceVersion = std::to_string(1000000 + i);
            events.push_back(modified(encodeResourceSlice(s)));
        }
        EventCost c = perEventMicros(h, std::move(events));
        std::printf("{\"event\":\"slice MODIFIED\",\"driver\":\"%s\",\"slices\":%zu,"
                    "\"devicesPerSlice\":%zu,\"microsPerEventMedian\":%.1f,"
                    "\"microsPerEventBest\":%.1f}\n",
                    driver.c_str(), h.working().size(), sample[0].devices.size(), c.median,
                    c.best);
    }
    SnapshotStore store({});
    ClaimHandler h(store, Logger());
    h.beginList();
    h.endList();
    std::vector<std::string> events;
    for (int i = 0; i < a.events; ++i) {
        ClaimIntent in;
        in.name = claimName("bench", uint64_t(i), "node00001");
        in.labels = claimLabels("bench", uint64_t(i), "node00001");
        in.nodeName = "node00001";
        in.results = {{"cpu", "dra.cpu", "node00001", "cpudev000", "", {}},
                      {"gpu", "gpu.nvidia.com", "node00001", "gpu-0", "", {}}};
        events.push_back(modified(encodeClaimStatus(in, std::to_string(i + 1))));
    }
    EventCost c = perEventMicros(h, std::move(events));
    std::printf("{\"event\":\"claim MODIFIED\",\"microsPerEventMedian\":%.1f,"
                "\"microsPerEventBest\":%.1f}\n",
                c.median, c.best);
}

int runClient(const Args &a, std::shared_ptr<const Config> cfg) {
    WatcherOptions o;
    o.drivers = split(a.drivers);
    o.pageSize = a.pageSize;
    std::mutex mu;
    std::condition_variable cv;
    bool synced = false;
    double cpu0 = cpuSeconds();
    auto t0 = Clock::now();
    InventoryWatcher iw(cfg, o, Logger([](LogLevel l, const std::string &m) {
                            if (l == LogLevel::Error)
                                std::fprintf(stderr, "%s\n", m.c_str());
                        }, "bench: "));
    iw.store().onPublish([&](const std::shared_ptr<const Snapshot> &s) {
        if (s->synced()) {
            std::lock_guard<std::mutex> lk(mu);
            synced = true;
            cv.notify_all();
        }
    });
    iw.start();
    {
        std::unique_lock<std::mutex> lk(mu);
        if (!cv.wait_for(lk, std::chrono::minutes(5), [&] { return synced; }))
            throw std::runtime_error("no synced snapshot within 5 minutes");
    }
    double seconds = since(t0);
    double cpu = cpuSeconds() - cpu0;
    auto snap = iw.snapshot();
    long hwm = statusKiB("VmHWM:");
    std::printf("{\"mode\":\"client\",\"secondsToSyncedSnapshot\":%.3f,\"clientCpuSeconds\":%.3f,"
                "\"peakRssMiB\":%.1f,\"slices\":%zu,\"devices\":%zu,\"claims\":%zu}\n",
                seconds, cpu, double(hwm) / 1024.0, snap->sliceCount(), snap->deviceCount(),
                snap->claims.size());
    std::fflush(stdout);
    iw.stop();
    eventCosts(a, *snap);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    try {
        Args a = parse(argc, argv);
        auto cfg = std::make_shared<Config>(loadKubeconfig(a.kubeconfig));
        return a.mode == "server" ? runServer(a, cfg) : runClient(a, cfg);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_ingest: %s\n", e.what());
        return 1;
    }
}
