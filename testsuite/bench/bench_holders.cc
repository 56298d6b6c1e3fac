// SPDX-License-Identifier: GPL-2.0-or-later
// Claim and holder pod writes at a job rate, as slurmctld drives them (not a
// test): ClaimSync is told job_started / job_ended with JobAllocs on the
// Kubernetes nodes of the server's inventory, and two watches (claims and
// pods of the claim namespace) time what the server then shows.
//
//   bench_holders --kubeconfig F [--rate 200] [--jobs 2000] [--hold 1]
//                 [--pairs 3] [--cores 2] [--gpus 1] [--mem 4096]
//                 [--ns slurm] [--drain 120] [--server-pid PID]
//                 [--inflight 32[,1...]]
//
// (testsuite/bench/run holders starts the server and runs it.)
//
// The server must run with --node-agents (its stand-in kubelet starts a
// holder pod once its claims are reserved for it), hold the claim namespace
// and the holder pods' PriorityClass, and publish slices for the nodes
// (--synthetic-nodes N). Runs alternate HolderPods=yes and HolderPods=no
// (claims only), `pairs` times (A B A B ...), and within a pair each
// --inflight value (MaxInflightWrites) in turn, each run on a ClaimSync of
// its own with a cluster label of its own. Each job takes `cores` cores and
// `gpus` GPUs of one node and ends `hold` seconds after it started; a slot
// freed by a job's end goes to the back of the free list, so it is reused
// only after every other free slot.
//
// Per job, from job_started (or job_ended) on the driving thread to the
// watch event that shows it:
//   claimsWritten  every claim of the job allocated (status.allocation set)
//   claimsReserved every claim reserved for a pod (HolderPods=yes)
//   podRunning     the job's holder pods Running (HolderPods=yes)
//   podGone        job end -> its holder pods deleted (HolderPods=yes)
//   claimsGone     job end -> its claims deleted
// One JSON line per run: p50/p99/max (ms) and counts of each; with
// --server-pid also the server's CPU time per job. Objects never written
// (the job ended before the write was sent, which then coalesced with the
// removal) are counted apart, not timed.
#include "core/inventory.h"
#include "k8s_sync/claim_sync.h"
#include "k8s_sync/engine_feed.h"
#include "k8s_sync/job_claims.h"
#include "k8s_client/json_stream.h"
#include "k8s_sync/slice_json.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iterator>
#include <sstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
    std::string kubeconfig, ns = "slurm";
    double rate = 200, hold = 1, drain = 120;
    long jobs = 2000;
    int pairs = 3;
    uint32_t cores = 2, gpus = 1;
    uint64_t mem = 4096;
    long serverPid = 0;  // to report the server's CPU time per job
    std::vector<int> inflight{32};  // MaxInflightWrites of the runs, in turn
};

Args parse(int argc, char **argv) {
    Args a;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string k = argv[i], v = argv[i + 1];
        if (k == "--kubeconfig") a.kubeconfig = v;
        else if (k == "--rate") a.rate = std::stod(v);
        else if (k == "--jobs") a.jobs = std::stol(v);
        else if (k == "--hold") a.hold = std::stod(v);
        else if (k == "--pairs") a.pairs = std::stoi(v);
        else if (k == "--cores") a.cores = uint32_t(std::stoul(v));
        else if (k == "--gpus") a.gpus = uint32_t(std::stoul(v));
        else if (k == "--mem") a.mem = std::stoull(v);
        else if (k == "--ns") a.ns = v;
        else if (k == "--drain") a.drain = std::stod(v);
        else if (k == "--server-pid") a.serverPid = std::stol(v);
        else if (k == "--inflight") {
            a.inflight.clear();
            std::istringstream in(v);
            for (std::string n; std::getline(in, n, ',');) a.inflight.push_back(std::stoi(n));
        }
        else throw std::runtime_error("unknown option " + k);
    }
    if (a.kubeconfig.empty()) throw std::runtime_error("--kubeconfig is required");
    if (a.rate <= 0 || a.jobs <= 0 || a.pairs <= 0 || a.cores == 0)
        throw std::runtime_error("--rate, --jobs, --pairs and --cores must be positive");
    return a;
}

// CPU seconds (user + system) of a process so far; 0 when unknown.
double cpuSeconds(long pid) {
    if (pid <= 0) {
        rusage ru{};
        getrusage(RUSAGE_SELF, &ru);
        return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    }
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto paren = text.rfind(')');
    if (paren == std::string::npos) return 0;
    std::istringstream in(text.substr(paren + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && in >> field; ++i) {  // fields 14 and 15: utime, stime
        if (i == 14) utime = std::stoull(field);
        if (i == 15) stime = std::stoull(field);
    }
    return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}

double loadAverage() {
    double l = 0;
    std::ifstream("/proc/loadavg") >> l;
    return l;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// What one job is waiting for, and when each thing was seen.
struct JobRec {
    Clock::time_point start, end;
    bool ended = false;
    size_t claims = 0, pods = 0;  // expected
    std::set<std::string> claimsSeen, allocated, reserved, running, claimsGone, podsSeen, podsGone;
    std::optional<Clock::time_point> tAllocated, tReserved, tRunning, tPodsGone, tClaimsGone;
};

// Every job of every run, by the names of its objects.
class Recorder {
public:
    void expect(uint64_t key, const std::vector<ClaimIntent> &claims, const std::vector<HolderIntent> &pods) {
        std::lock_guard lk(mu_);
        JobRec &r = jobs_[key];
        r.claims = claims.size();
        r.pods = pods.size();
        for (const auto &c : claims) claimOf_[c.name] = key;
        for (const auto &p : pods) podOf_[p.name] = key;
    }
    void started(uint64_t key, Clock::time_point t) {
        std::lock_guard lk(mu_);
        jobs_[key].start = t;
    }
    void ended(uint64_t key, Clock::time_point t) {
        std::lock_guard lk(mu_);
        JobRec &r = jobs_[key];
        r.end = t;
        r.ended = true;
        settle(r, t);
    }

    // Watch events (t = arrival).
    void claim(const std::string &type, const std::string &name, bool allocated, bool reserved, Clock::time_point t) {
        std::lock_guard lk(mu_);
        auto it = claimOf_.find(name);
        if (it == claimOf_.end()) return;
        JobRec &r = jobs_[it->second];
        r.claimsSeen.insert(name);
        if (type == "DELETED") {
            r.claimsGone.insert(name);
        } else {
            if (allocated) r.allocated.insert(name);
            if (reserved) r.reserved.insert(name);
        }
        settle(r, t);
    }
    void pod(const std::string &type, const std::string &name, bool running, Clock::time_point t) {
        std::lock_guard lk(mu_);
        auto it = podOf_.find(name);
        if (it == podOf_.end()) return;
        JobRec &r = jobs_[it->second];
        r.podsSeen.insert(name);
        if (type == "DELETED") r.podsGone.insert(name);
        else if (running) r.running.insert(name);
        settle(r, t);
    }

    // Jobs in [from, to) all ended and gone from the server. An object never
    // written (the job ended before its write was sent: the removal replaced
    // it in the writer's queue) is never seen, so with the writer idle
    // everything seen being gone is enough.
    static bool gone(const JobRec &r, bool writerIdle) {
        if (!r.ended || r.claimsGone.size() < r.claimsSeen.size() || r.podsGone.size() < r.podsSeen.size())
            return false;
        return writerIdle || (r.claimsSeen.size() >= r.claims && r.podsSeen.size() >= r.pods);
    }
    bool drained(uint64_t from, uint64_t to, bool writerIdle) {
        std::lock_guard lk(mu_);
        for (auto it = jobs_.lower_bound(from); it != jobs_.end() && it->first < to; ++it)
            if (!gone(it->second, writerIdle)) return false;
        return true;
    }
    template <class F>
    void forEach(uint64_t from, uint64_t to, F f) {
        std::lock_guard lk(mu_);
        for (auto it = jobs_.lower_bound(from); it != jobs_.end() && it->first < to; ++it) f(it->second);
    }

private:
    static void settle(JobRec &r, Clock::time_point t) {
        auto mark = [&](std::optional<Clock::time_point> &at, size_t have, size_t want) {
            if (!at && want && have >= want) at = t;
        };
        mark(r.tAllocated, r.allocated.size(), r.claims);
        mark(r.tReserved, r.reserved.size(), r.pods ? r.claims : 0);
        mark(r.tRunning, r.running.size(), r.pods);
        if (r.ended) {
            mark(r.tClaimsGone, r.claimsGone.size(), r.claims);
            mark(r.tPodsGone, r.podsGone.size(), r.pods);
        }
    }

    std::mutex mu_;
    std::map<uint64_t, JobRec> jobs_;
    std::map<std::string, uint64_t> claimOf_, podOf_;
};

// A watch of one collection in the claim namespace, resumed from its last
// resourceVersion whenever the stream ends, until stopped.
class Watch {
public:
    using EventFn = std::function<void(const std::string &type, const rapidjson::Value &obj, Clock::time_point)>;
    Watch(std::shared_ptr<const Config> cfg, std::string path, EventFn fn)
        : cfg_(std::move(cfg)), path_(std::move(path)), fn_(std::move(fn)) {
        thread_ = std::thread([this] { run(); });
    }
    ~Watch() {
        stop_->stop();
        thread_.join();
    }
    void waitOpen() {
        std::unique_lock lk(mu_);
        if (!cv_.wait_for(lk, std::chrono::seconds(30), [&] { return open_; }))
            throw std::runtime_error("watch of " + path_ + " did not open");
    }
    uint64_t events() const { return events_.load(); }

private:
    void run() {
        ClientOptions o;
        Client c(cfg_, std::make_shared<TokenSource>(*cfg_), o, stop_);
        std::string rv;
        {
            HttpResponse r = c.get(path_ + "?limit=1");
            rapidjson::Document d;
            if (r.ok()) {
                json::parse(d, r.body);
                if (const auto *m = json::member(d, "metadata")) rv = json::getString(*m, "resourceVersion");
            } else {
                std::fprintf(stderr, "bench_holders: list %s: HTTP %ld\n", path_.c_str(), r.status);
            }
        }
        while (!stop_->stopped()) {
            JsonStreamSplitter split;
            std::string obj;
            HttpResponse r = c.stream(
                path_ + "?watch=1&allowWatchBookmarks=true" + (rv.empty() ? "" : "&resourceVersion=" + rv),
                [&](const char *data, size_t len) {
                    const auto t = Clock::now();
                    split.feed(data, len);
                    while (split.next(obj)) {
                        rapidjson::Document d;
                        json::parse(d, obj);
                        const std::string type = json::getString(d, "type");
                        const rapidjson::Value *o = json::member(d, "object");
                        if (!o || !o->IsObject()) continue;
                        if (const auto *m = json::member(*o, "metadata"))
                            rv = json::getString(*m, "resourceVersion", rv);
                        if (type == "ERROR") {
                            rv.clear();
                            return false;
                        }
                        if (type == "BOOKMARK") continue;
                        ++events_;
                        fn_(type, *o, t);
                    }
                    return !stop_->stopped();
                },
                [&](long status) {
                    if (status / 100 != 2) return;
                    std::lock_guard lk(mu_);
                    open_ = true;
                    cv_.notify_all();
                });
            if (!r.ok() && !stop_->stopped() && !r.aborted) stop_->waitFor(std::chrono::milliseconds(200));
        }
    }

    std::shared_ptr<const Config> cfg_;
    std::string path_;
    EventFn fn_;
    std::shared_ptr<Stopper> stop_ = std::make_shared<Stopper>();
    std::mutex mu_;
    std::condition_variable cv_;
    bool open_ = false;
    std::atomic<uint64_t> events_{0};
    std::thread thread_;
};

std::shared_ptr<const Inventory> loadInventory(const std::shared_ptr<const Config> &cfg) {
    Client c(cfg, std::make_shared<TokenSource>(*cfg), ClientOptions{}, std::make_shared<Stopper>());
    HttpResponse r = c.get("/apis/resource.k8s.io/v1/resourceslices");
    if (!r.ok()) throw std::runtime_error(c.describe(r, "list resourceslices"));
    rapidjson::Document d;
    json::parse(d, r.body);
    std::vector<ResourceSlice> slices;
    for (const auto &item : json::member(d, "items")->GetArray()) slices.push_back(decodeResourceSlice(item));
    return std::make_shared<const Inventory>(Inventory::build(slices, {}));
}

// A slot: `cores` cores and `gpus` GPUs of one node.
struct Slot {
    std::string node;
    std::vector<uint32_t> cores, gres;
};

std::deque<Slot> makeSlots(const Inventory &inv, const Args &a) {
    std::vector<std::vector<Slot>> perNode;
    for (const auto &n : inv.nodes()) {
        if (!n.usable()) continue;
        const uint32_t ncores = uint32_t(n.topology.cpu->cores.size());
        const uint32_t ngpus = uint32_t(n.topology.gpus.size());
        uint32_t k = ncores / a.cores;
        if (a.gpus) k = std::min(k, ngpus / a.gpus);
        std::vector<Slot> s;
        for (uint32_t i = 0; i < k; ++i) {
            Slot sl{n.name, {}, {}};
            for (uint32_t c = 0; c < a.cores; ++c) sl.cores.push_back(i * a.cores + c);
            for (uint32_t g = 0; g < a.gpus; ++g) sl.gres.push_back(i * a.gpus + g);
            s.push_back(std::move(sl));
        }
        perNode.push_back(std::move(s));
    }
    std::deque<Slot> out;  // node by node, round robin
    for (size_t i = 0;; ++i) {
        bool any = false;
        for (auto &s : perNode)
            if (i < s.size()) {
                out.push_back(s[i]);
                any = true;
            }
        if (!any) break;
    }
    return out;
}

struct Dist {
    std::vector<double> v;
    void add(double x) { v.push_back(x); }
    std::string json() {
        std::sort(v.begin(), v.end());
        auto at = [&](double p) {
            return v.empty() ? 0.0 : v[std::min(v.size() - 1, size_t(p / 100.0 * double(v.size())))];
        };
        char buf[160];
        std::snprintf(buf, sizeof buf, "{\"n\":%zu,\"p50\":%.2f,\"p99\":%.2f,\"max\":%.2f}", v.size(), at(50),
                      at(99), v.empty() ? 0.0 : v.back());
        return buf;
    }
};

std::atomic<long> g_errors{0};

// One run: `a.jobs` jobs at `a.rate`, HolderPods as `pods`.
void runOnce(const Args &a, bool pods, int inflight, int pair, const std::shared_ptr<const Config> &api,
             const std::shared_ptr<const Inventory> &inv, Recorder &rec, uint64_t base) {
    PluginConfig pc;
    pc.claim_namespace = a.ns;
    pc.cluster_label = std::string(pods ? "hp" : "hc") + std::to_string(pair) + "i" + std::to_string(inflight);
    pc.holder_pods = pods;
    pc.max_inflight_writes = inflight;
    auto sync = std::make_unique<ClaimSync>(
        pc, api, writer_options(pc), Logger([](LogLevel l, const std::string &m) {
            if (l == LogLevel::Error) {
                ++g_errors;
                std::fprintf(stderr, "%s\n", m.c_str());
            }
        }, "bench: "));
    sync->jobs_known({}, inv);
    sync->set_leader(true);

    std::deque<Slot> free = makeSlots(*inv, a);
    const size_t slots = free.size();
    struct Live {
        Clock::time_point end;
        uint32_t id;
        Slot slot;
    };
    std::deque<Live> live;  // ends in start order (same hold for all)
    const auto period = std::chrono::duration<double>(1.0 / a.rate);
    const auto hold = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.hold));
    long offered = 0, stalls = 0, stalledAt = -1;
    size_t maxLive = 0, maxDepth = 0;
    Clock::time_point firstStart, lastStart, nextSample;
    const double load = loadAverage();
    const double serverCpu0 = a.serverPid ? cpuSeconds(a.serverPid) : 0, ownCpu0 = cpuSeconds(0);
    const auto t0 = Clock::now();
    while (offered < a.jobs || !live.empty()) {
        auto now = Clock::now();
        while (!live.empty() && live.front().end <= now) {
            Live l = std::move(live.front());
            live.pop_front();
            const auto t = Clock::now();
            sync->job_ended(l.id);
            rec.ended(base + l.id, t);
            free.push_back(std::move(l.slot));
        }
        const auto due = t0 + std::chrono::duration_cast<Clock::duration>(period * double(offered));
        if (offered < a.jobs && now >= due) {
            if (free.empty()) {
                if (stalledAt != offered) ++stalls;  // no slot: wait for the next end
                stalledAt = offered;
            } else {
                Slot s = std::move(free.front());
                free.pop_front();
                const uint32_t id = uint32_t(offered + 1);
                JobAlloc job{id, "bench", {JobNodeAlloc{s.node, s.cores, s.gres, a.mem}}};
                std::string err;
                auto claims = job_claims(job, *inv, pc, pc.cluster_label, &err);
                if (!err.empty()) throw std::runtime_error("job " + std::to_string(id) + ": " + err);
                std::vector<HolderIntent> holders;
                if (pods) holders = job_holders(job, claims, *inv, pc, pc.cluster_label);
                rec.expect(base + id, claims, holders);
                const auto t = Clock::now();
                rec.started(base + id, t);
                sync->job_started(job, inv);
                if (!offered) firstStart = t;
                lastStart = t;
                live.push_back({t + hold, id, std::move(s)});
                maxLive = std::max(maxLive, live.size());
                ++offered;
                continue;  // catch up at once when late
            }
        }
        if (now >= nextSample) {
            maxDepth = std::max(maxDepth, sync->stats().depth);
            nextSample = now + std::chrono::milliseconds(50);
        }
        auto wake = Clock::time_point::max();
        if (!live.empty()) wake = live.front().end;
        if (offered < a.jobs && !free.empty()) wake = std::min(wake, due);
        wake = std::min(wake, nextSample);
        std::this_thread::sleep_until(wake);
    }
    const auto offerSecs = std::chrono::duration<double>(lastStart - firstStart).count();
    const auto drainStart = Clock::now();
    while (!rec.drained(base + 1, base + uint64_t(a.jobs) + 1, sync->stats().depth == 0) &&
           Clock::now() - drainStart < std::chrono::duration<double>(a.drain)) {
        maxDepth = std::max(maxDepth, sync->stats().depth);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const double drainSecs = std::chrono::duration<double>(Clock::now() - drainStart).count();
    const double serverCpuMs = a.serverPid ? (cpuSeconds(a.serverPid) - serverCpu0) * 1000.0 / double(a.jobs) : 0;
    const double ownCpuMs = (cpuSeconds(0) - ownCpu0) * 1000.0 / double(a.jobs);
    const WriterStats st = sync->stats();
    sync.reset();

    Dist written, reserved, running, podGone, claimsGone;
    long notAllocated = 0, notRunning = 0, runningAfterEnd = 0, notGone = 0, neverCreated = 0;
    rec.forEach(base + 1, base + uint64_t(a.jobs) + 1, [&](const JobRec &r) {
        if (r.tAllocated) written.add(ms(*r.tAllocated - r.start));
        else ++notAllocated;
        if (r.pods) {
            if (r.tReserved) reserved.add(ms(*r.tReserved - r.start));
            if (r.tRunning) {
                running.add(ms(*r.tRunning - r.start));
                if (*r.tRunning > r.end) ++runningAfterEnd;
            } else {
                ++notRunning;
            }
            if (r.podsSeen.empty()) ++neverCreated;  // ended before its pod was written
            if (r.tPodsGone) podGone.add(ms(*r.tPodsGone - r.end));
        }
        if (r.tClaimsGone) claimsGone.add(ms(*r.tClaimsGone - r.end));
        if (!Recorder::gone(r, true)) ++notGone;
    });
    std::printf("{\"mode\":\"%s\",\"inflight\":%d,\"pair\":%d,\"jobs\":%ld,\"slots\":%zu,\"offeredRate\":%.0f,"
                "\"achievedRate\":%.1f,\"holdSeconds\":%.1f,\"maxLiveJobs\":%zu,\"stalls\":%ld,"
                "\"maxQueueDepth\":%zu,\"drainSeconds\":%.2f,\"loadAverage\":%.2f,"
                "\"serverCpuMsPerJob\":%.2f,\"benchCpuMsPerJob\":%.2f,"
                "\"claimsWritten\":%s,\"claimsReserved\":%s,\"podRunning\":%s,\"podGone\":%s,\"claimsGone\":%s,"
                "\"notAllocated\":%ld,\"notRunning\":%ld,\"podNeverCreated\":%ld,\"runningAfterEnd\":%ld,\"notGone\":%ld,"
                "\"writerFailed\":%lu,\"retries\":%lu,\"conflicts\":%lu,\"errors\":%ld}\n",
                pods ? "pods" : "claims", inflight, pair, a.jobs, slots, a.rate,
                offerSecs > 0 ? double(a.jobs - 1) / offerSecs : 0.0, a.hold, maxLive, stalls, maxDepth, drainSecs,
                load, serverCpuMs, ownCpuMs,
                written.json().c_str(), reserved.json().c_str(), running.json().c_str(), podGone.json().c_str(),
                claimsGone.json().c_str(), notAllocated, notRunning, neverCreated, runningAfterEnd, notGone,
                (unsigned long)st.failed, (unsigned long)st.retries, (unsigned long)st.conflicts, g_errors.exchange(0));
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
    try {
        Args a = parse(argc, argv);
        auto api = std::make_shared<const Config>(loadKubeconfig(a.kubeconfig));
        auto inv = loadInventory(api);
        if (makeSlots(*inv, a).empty()) throw std::runtime_error("the server's slices give no node a slot");
        Recorder rec;
        const std::string ns = urlEncode(a.ns);
        Watch claims(api, "/apis/resource.k8s.io/v1/namespaces/" + ns + "/resourceclaims",
                     [&](const std::string &type, const rapidjson::Value &o, Clock::time_point t) {
                         const auto *m = json::member(o, "metadata");
                         const auto *s = json::member(o, "status");
                         const auto *alloc = s ? json::member(*s, "allocation") : nullptr;
                         const auto *res = s ? json::member(*s, "reservedFor") : nullptr;
                         rec.claim(type, m ? json::getString(*m, "name") : "", alloc && alloc->IsObject(),
                                   res && res->IsArray() && !res->Empty(), t);
                     });
        Watch pods(api, "/api/v1/namespaces/" + ns + "/pods",
                   [&](const std::string &type, const rapidjson::Value &o, Clock::time_point t) {
                       const auto *m = json::member(o, "metadata");
                       const auto *s = json::member(o, "status");
                       const bool deleting = m && json::member(*m, "deletionTimestamp");
                       rec.pod(type, m ? json::getString(*m, "name") : "",
                               !deleting && s && json::getString(*s, "phase") == "Running", t);
                   });
        claims.waitOpen();
        pods.waitOpen();
        uint64_t run = 0;
        for (int p = 1; p <= a.pairs; ++p)
            for (int inflight : a.inflight)
                for (bool withPods : {true, false})
                    runOnce(a, withPods, inflight, p, api, inv, rec, run++ << 32);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_holders: %s\n", e.what());
        return 1;
    }
}
