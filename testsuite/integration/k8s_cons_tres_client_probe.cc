// SPDX-License-Identifier: GPL-2.0-or-later
// Drives the k8s_client library from the command line for the pytest
// scenarios against the test API server. Prints one JSON object per line.
//
//   k8s_cons_tres_client_probe watch --kubeconfig F [--drivers a,b] [options]
//     prints {"event":"snapshot",...} on every published snapshot; reads
//     commands on stdin: "dump" (all slices and claims), "stats", "quit".
//   k8s_cons_tres_client_probe write --kubeconfig F --count N [--job J] [--node N]
//       [--ns NS] [--delete] [--grouped] [--foreign-labels]
//     applies N claims (then deletes them with --delete) and prints results.
#include "k8s_sync/claim_writer.h"
#include "k8s_sync/inventory_watcher.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;

namespace {

std::mutex gOut;

// Emits one JSON line built by fn (thread-safe).
template <class F>
void emit(const char *event, F &&fn) {
    rapidjson::StringBuffer buf;
    json::Writer w(buf);
    w.StartObject();
    json::kv(w, "event", event);
    fn(w);
    w.EndObject();
    std::lock_guard<std::mutex> lk(gOut);
    std::fwrite(buf.GetString(), 1, buf.GetSize(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

struct Args {
    std::map<std::string, std::string> kv;
    std::string get(const std::string &k, const std::string &d = "") const {
        auto it = kv.find(k);
        return it == kv.end() ? d : it->second;
    }
    long num(const std::string &k, long d) const {
        auto v = get(k);
        return v.empty() ? d : std::stol(v);
    }
    bool flag(const std::string &k) const { return kv.count(k) > 0; }
};

Args parse(int argc, char **argv) {
    Args a;
    for (int i = 2; i < argc; ++i) {
        std::string k = argv[i];
        if (k.rfind("--", 0) != 0)
            throw std::runtime_error("unexpected argument " + k);
        k = k.substr(2);
        bool isFlag = k == "delete" || k == "grouped" || k == "foreign-labels" || k == "remove-only";
        a.kv[k] = isFlag ? "1" : (i + 1 < argc ? argv[++i] : "");
    }
    return a;
}

std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string x; std::getline(ss, x, ',');)
        if (!x.empty())
            out.push_back(x);
    return out;
}

Logger makeLogger() {
    return Logger(
        [](LogLevel lvl, const std::string &msg) {
            emit("log", [&](json::Writer &w) {
                w.Key("level");
                w.Int(int(lvl));
                json::kv(w, "msg", msg);
            });
        },
        "k8s: ");
}

ClientOptions clientOptions(const Args &a) {
    ClientOptions o;
    o.connectTimeout = std::chrono::milliseconds(a.num("connect-timeout-ms", 5000));
    o.requestTimeout = std::chrono::milliseconds(a.num("request-timeout-ms", 30000));
    o.streamIdleTimeout = std::chrono::seconds(a.num("idle-timeout-s", 90));
    return o;
}

Backoff::Params backoffParams(const Args &a) {
    Backoff::Params p;
    p.initial = std::chrono::milliseconds(a.num("backoff-initial-ms", 800));
    p.cap = std::chrono::milliseconds(a.num("backoff-cap-ms", 30000));
    return p;
}

std::shared_ptr<const Config> loadConfig(const Args &a) {
    return std::make_shared<Config>(loadKubeconfig(a.get("kubeconfig"), a.get("context")));
}

void printSnapshot(const Snapshot &s) {
    size_t devices = s.deviceCount(), allocated = 0;
    s.forEachClaim([&](const ClaimHolding &c) { allocated += c.allocated; });
    emit("snapshot", [&](json::Writer &w) {
        w.Key("version");
        w.Uint64(s.version);
        w.Key("synced");
        w.Bool(s.synced());
        w.Key("slices");
        w.Uint64(s.sliceCount());
        w.Key("devices");
        w.Uint64(devices);
        w.Key("claims");
        w.Uint64(s.claims.size());
        w.Key("allocated");
        w.Uint64(allocated);
    });
}

void printStats(const InventoryWatcher &iw) {
    for (const auto &inf : iw.informers()) {
        const InformerStats &st = inf->stats();
        emit("stats", [&](json::Writer &w) {
            json::kv(w, "informer", inf->name());
            w.Key("lists");
            w.Uint64(st.lists);
            w.Key("pages");
            w.Uint64(st.pages);
            w.Key("watches");
            w.Uint64(st.watches);
            w.Key("events");
            w.Uint64(st.events);
            w.Key("bookmarks");
            w.Uint64(st.bookmarks);
            w.Key("expired");
            w.Uint64(st.expired);
            w.Key("failures");
            w.Uint64(st.failures);
            json::kv(w, "lastError", inf->lastError());
        });
    }
}

void dump(const Snapshot &s) {
    s.forEachSlice([&](const CompactSlice &sl) {
        emit("slice", [&](json::Writer &w) {
            json::kv(w, "name", sl.name);
            json::kv(w, "driver", sl.driver);
            json::kv(w, "node", sl.nodeName);
            json::kv(w, "resourceVersion", sl.resourceVersion);
            w.Key("devices");
            w.Uint64(sl.devices.size());
        });
    });
    s.forEachClaim([&](const ClaimHolding &c) {
        emit("claim", [&](json::Writer &w) {
            json::kv(w, "ns", c.ns);
            json::kv(w, "name", c.name);
            w.Key("allocated");
            w.Bool(c.allocated);
            json::kv(w, "node", c.nodeName);
            w.Key("results");
            w.Uint64(c.results.size());
        });
    });
    emit("end", [](json::Writer &) {});
}

int runWatch(const Args &a) {
    WatcherOptions o;
    o.drivers = split(a.get("drivers", "dra.cpu,gpu.nvidia.com"));
    o.client = clientOptions(a);
    o.pageSize = int(a.num("page-size", 500));
    o.watchTimeout = std::chrono::seconds(a.num("watch-timeout-s", 300));
    o.backoff = backoffParams(a);
    InventoryWatcher iw(loadConfig(a), o, makeLogger());
    iw.store().onPublish([](const std::shared_ptr<const Snapshot> &s) { printSnapshot(*s); });
    iw.start();
    for (std::string line; std::getline(std::cin, line);) {
        if (line == "dump")
            dump(*iw.snapshot());
        else if (line == "stats")
            printStats(iw);
        else if (line == "quit")
            break;
    }
    auto t0 = std::chrono::steady_clock::now();
    iw.stop();
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0);
    printStats(iw);
    emit("stopped", [&](json::Writer &w) {
        w.Key("stopMs");
        w.Int64(ms.count());
    });
    return 0;
}

ClaimIntent makeIntent(const Args &a, uint64_t job) {
    std::string node = a.get("node", "node1");
    ClaimIntent in;
    in.ns = a.get("ns", "default");
    in.name = claimName(a.get("cluster", "probe"), job, node);
    in.labels = claimLabels(a.get("cluster", "probe"), job, node);
    if (a.flag("foreign-labels"))
        in.labels[kLabelCluster] = "someone-else";
    in.nodeName = node;
    if (a.flag("grouped")) {
        in.results = {{"cpu", "dra.cpu", node, "cpudevmachine",
                       "0b5e8c1e-2f0a-4c5d-9a43-6f1e2d3c4b5a", {{"dra.cpu/cpu", "4"}}}};
        in.opaqueCpuset = "2-5";
    } else if (long n = a.num("results", 0); n > 0) {
        for (long i = 0; i < n; ++i) {
            char dev[32];
            std::snprintf(dev, sizeof dev, "cpudev%03ld", i);
            in.results.push_back({"cpu", "dra.cpu", node, dev, "", {}});
        }
    } else {
        in.results = {{"cpu", "dra.cpu", node, "cpudev000", "", {}},
                      {"cpu", "dra.cpu", node, "cpudev001", "", {}},
                      {"gpu", "gpu.nvidia.com", node, "gpu-0", "", {}}};
    }
    return in;
}

int runWrite(const Args &a) {
    WriterOptions o;
    o.client = clientOptions(a);
    o.backoff = backoffParams(a);
    o.maxAttempts = int(a.num("max-attempts", 10));
    o.capacity = size_t(a.num("capacity", 4096));
    ClaimWriter writer(loadConfig(a), o, makeLogger());
    std::mutex mu;
    std::condition_variable cv;
    size_t done = 0;
    writer.onResult([&](const ClaimOpResult &r) {
        emit("result", [&](json::Writer &w) {
            json::kv(w, "kind", r.kind == ClaimOpResult::Kind::Apply ? "apply" : "remove");
            json::kv(w, "name", r.name);
            w.Key("ok");
            w.Bool(r.ok);
            w.Key("attempts");
            w.Int(r.attempts);
            w.Key("latencyUs");
            w.Int64(r.latency.count());
            json::kv(w, "error", r.error);
        });
        std::lock_guard<std::mutex> lk(mu);
        ++done;
        cv.notify_all();
    });
    writer.start();
    long count = a.num("count", 1);
    uint64_t job = uint64_t(a.num("job", 1000));
    size_t expected = 0;
    // --remove-only [--uid U]: delete without writing first, exactly the
    // object with that UID when one is given.
    for (long i = 0; i < count && !a.flag("remove-only"); ++i)
        expected += writer.apply(makeIntent(a, job + uint64_t(i))) != 0;
    if (a.flag("remove-only")) {
        for (long i = 0; i < count; ++i) {
            ClaimIntent in = makeIntent(a, job + uint64_t(i));
            expected += writer.remove(in.ns, in.name, a.get("uid", "")) != 0;
        }
    } else if (a.flag("delete")) {
        {
            std::unique_lock<std::mutex> lk(mu);
            cv.wait(lk, [&] { return done >= expected; });
        }
        for (long i = 0; i < count; ++i) {
            ClaimIntent in = makeIntent(a, job + uint64_t(i));
            expected += writer.remove(in.ns, in.name) != 0;
        }
    }
    {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return done >= expected; });
    }
    WriterStats st = writer.stats();
    writer.stop();
    emit("writer", [&](json::Writer &w) {
        w.Key("submitted");
        w.Uint64(st.submitted);
        w.Key("succeeded");
        w.Uint64(st.succeeded);
        w.Key("failed");
        w.Uint64(st.failed);
        w.Key("refused");
        w.Uint64(st.refused);
        w.Key("retries");
        w.Uint64(st.retries);
        w.Key("conflicts");
        w.Uint64(st.conflicts);
        w.Key("depth");
        w.Uint64(st.depth);
    });
    return st.failed == 0 ? 0 : 3;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s watch|write --kubeconfig FILE [options]\n", argv[0]);
        return 2;
    }
    try {
        Args a = parse(argc, argv);
        std::string cmd = argv[1];
        if (cmd == "watch")
            return runWatch(a);
        if (cmd == "write")
            return runWrite(a);
        std::fprintf(stderr, "unknown command %s\n", cmd.c_str());
        return 2;
    } catch (const std::exception &e) {
        emit("error", [&](json::Writer &w) { json::kv(w, "msg", e.what()); });
        return 1;
    }
}
