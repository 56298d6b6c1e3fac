// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/lease.h"

#include "k8s_client/api_status.h"
#include "k8s_sync/claim_json.h"
#include "k8s_client/json.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <ctime>
#include <random>

namespace k8s_cons_tres::k8s {
namespace {

std::string micro_time() {  // metav1.MicroTime: RFC 3339 with microseconds
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[40];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    char out[64];
    std::snprintf(out, sizeof out, "%s.%06lldZ", buf, static_cast<long long>(us));
    return out;
}

std::string leases_path(const LeaseOptions &o) {
    return "/apis/coordination.k8s.io/v1/namespaces/" + urlEncode(o.ns) + "/leases";
}

// "<host>_p": what every identity of a process of this host begins with
std::string hostPrefix() {
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    return host + std::string("_p");
}

// "<host>_p<pid>_": what every identity of that process begins with
std::string processPrefix(long pid) { return hostPrefix() + std::to_string(pid) + "_"; }

// "t<boot id>.<pid namespace>": which process table a pid belongs to. Two
// slurmctlds in containers of one node share its host name but not their
// pids; after a reboot a pid is someone else's. "" when unknown.
std::string processTable() {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string boot;
    struct stat ns{};
    if (!std::getline(in, boot) || boot.size() < 8 || stat("/proc/self/ns/pid", &ns) != 0)
        return "";
    return "t" + boot.substr(0, 8) + "." + std::to_string(ns.st_ino);
}

}  // namespace

std::string controllerIdentity() {
    std::random_device rd;
    char id[20];
    std::snprintf(id, sizeof id, "%08x%08x", rd(), rd());
    const std::string table = processTable();
    return processPrefix(getpid()) + (table.empty() ? "" : table + "_") + id;
}

bool heldByGone(const std::string &holder) {
    const std::string table = processTable(), head = hostPrefix();
    if (table.empty() || holder.rfind(head, 0) != 0)
        return false;
    size_t at = head.size(), end = at;
    while (end < holder.size() && holder[end] >= '0' && holder[end] <= '9' && end - at < 10)
        ++end;
    if (end == at || holder.compare(end, table.size() + 2, "_" + table + "_") != 0)
        return false;
    const long pid = std::stol(holder.substr(at, end - at));
    // ESRCH: no such process. EPERM or success: the pid lives, maybe
    // reused by another program: wait for the lease to lapse, as before.
    return pid > 0 && pid != getpid() && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

bool heldByReplaced(const std::string &holder, long replaced_pid) {
    return replaced_pid > 0 && holder.rfind(processPrefix(replaced_pid), 0) == 0;
}

std::string leaseName(const std::string &cluster) {
    return "slurm-k8s-cons-tres-" + dnsLabel(cluster);
}

LeaseKeeper::LeaseKeeper(std::shared_ptr<const Config> cfg, LeaseOptions opts, ClientOptions copts, Logger log)
    : opts_(std::move(opts)), log_(log.child("lease: ")), stop_(std::make_shared<Stopper>()),
      client_(cfg, std::make_shared<TokenSource>(*cfg), copts, stop_, log_) {}

LeaseKeeper::~LeaseKeeper() { stop(); }

void LeaseKeeper::stop() { stop_->stop(); }

namespace {
bool heldUntil(const std::atomic<int64_t> &until_) {
    const int64_t until = until_.load();
    return until && LeaseKeeper::Clock::now().time_since_epoch().count() < until;
}
}  // namespace

bool LeaseKeeper::held() const { return heldUntil(*held_until_); }

std::function<bool()> LeaseKeeper::heldCheck() const {
    std::weak_ptr<std::atomic<int64_t>> until = held_until_;
    return [until] {
        auto u = until.lock();
        return u && heldUntil(*u);
    };
}

std::string LeaseKeeper::body(const std::string &rv, int64_t transitions, bool acquire,
                              const std::string &holder) const {
    rapidjson::StringBuffer buf;
    json::Writer w(buf);
    w.StartObject();
    json::kv(w, "apiVersion", "coordination.k8s.io/v1");
    json::kv(w, "kind", "Lease");
    w.Key("metadata");
    w.StartObject();
    json::kv(w, "name", opts_.name);
    json::kv(w, "namespace", opts_.ns);
    if (!rv.empty()) json::kv(w, "resourceVersion", rv);  // optimistic: only over what we saw
    w.EndObject();
    w.Key("spec");
    w.StartObject();
    json::kv(w, "holderIdentity", holder);
    w.Key("leaseDurationSeconds");
    w.Int64(opts_.duration.count());
    json::kv(w, "acquireTime", acquire ? micro_time() : acquire_time_);
    json::kv(w, "renewTime", micro_time());
    w.Key("leaseTransitions");
    w.Int64(transitions);
    w.EndObject();
    w.EndObject();
    return {buf.GetString(), buf.GetSize()};
}

bool LeaseKeeper::write(const std::string &method, const std::string &path, const std::string &b) {
    HttpResponse r = client_.request(method, path, b);
    if (r.ok()) return true;
    if (r.status == 403)
        log_.error("cannot " + method + " Lease " + opts_.ns + "/" + opts_.name + ": " +
                   parseApiStatus(r.status, r.body).summary() +
                   "; claims are not written until it can (grant leases get, create, update in namespace " +
                   opts_.ns + ", see etc/rbac.yaml)");
    else if (r.status != 409)  // a conflict: someone else moved first, look again next tick
        log_.verbose(method + " Lease: " + (r.status ? parseApiStatus(r.status, r.body).summary() : r.error));
    return false;
}

void LeaseKeeper::release() {
    if (!held()) return;
    held_until_->store(0);
    reported_ = false;
    const std::string item = leases_path(opts_) + "/" + urlEncode(opts_.name);
    try {
        HttpResponse g = client_.get(item);
        if (!g.ok()) return;
        rapidjson::Document doc;
        json::parse(doc, g.body);
        const rapidjson::Value *meta = json::member(doc, "metadata");
        const rapidjson::Value *spec = json::member(doc, "spec");
        if (!meta || !spec || json::getString(*spec, "holderIdentity") != opts_.identity) return;
        // empty holder: the next controller takes it without waiting
        if (write("PUT", item, body(json::getString(*meta, "resourceVersion"),
                                    json::getInt(*spec, "leaseTransitions"), false, "")))
            log_.info("gave up Lease " + opts_.ns + "/" + opts_.name);
    } catch (const std::exception &e) {
        log_.verbose(std::string("releasing the Lease: ") + e.what());
    }
}

bool LeaseKeeper::tick() {
    const std::string coll = leases_path(opts_);
    const std::string item = coll + "/" + urlEncode(opts_.name);
    const auto now = Clock::now();
    const auto renewed_until = [&] {
        // a third of the duration as margin: our renew must be seen before
        // another controller's clock can call the lease expired
        return (now + opts_.duration * 2 / 3).time_since_epoch().count();
    };
    bool mine = false, answered = false;
    try {
        HttpResponse g = client_.get(item);
        answered = g.ok() || g.status == 404;
        if (g.status == 404) {
            acquire_time_ = micro_time();
            mine = write("POST", coll, body("", 0, true, opts_.identity));
        } else if (g.ok()) {
            rapidjson::Document doc;
            json::parse(doc, g.body);
            const rapidjson::Value *meta = json::member(doc, "metadata");
            const rapidjson::Value *spec = json::member(doc, "spec");
            const std::string rv = meta ? json::getString(*meta, "resourceVersion") : "";
            const std::string holder = spec ? json::getString(*spec, "holderIdentity") : "";
            const int64_t transitions = spec ? json::getInt(*spec, "leaseTransitions") : 0;
            if (holder != opts_.identity && heldByReplaced(holder, opts_.replaced_pid)) {
                // the slurmctld this one replaced in place: its lease is ours,
                // with no wait for it to lapse (it renews no more once gone)
                opts_.identity = holder;
                acquire_time_ = spec ? json::getString(*spec, "acquireTime") : "";
                if (acquire_time_.empty()) acquire_time_ = micro_time();
                log_.info("carries on Lease " + opts_.ns + "/" + opts_.name + " of the slurmctld it replaced (" +
                          holder + ")");
            }
            if (holder == opts_.identity) {
                mine = write("PUT", item, body(rv, transitions, false, opts_.identity));
            } else {
                if (rv != observed_rv_) {
                    observed_rv_ = rv;
                    observed_at_ = now;
                }
                // A holder of this host whose process is gone (killed,
                // crashed) renews no more: no need to wait for it to lapse.
                const bool gone = !holder.empty() && heldByGone(holder);
                if (holder.empty() || gone || now - observed_at_ > opts_.duration) {
                    acquire_time_ = micro_time();
                    mine = write("PUT", item, body(rv, transitions + 1, true, opts_.identity));
                    if (mine && gone)
                        log_.info("took over from " + holder + ": that slurmctld's process is gone");
                    else if (mine && !holder.empty())
                        log_.info("took over from " + holder + ", whose lease expired");
                }
            }
        } else {
            log_.verbose("GET Lease: " + (g.status ? parseApiStatus(g.status, g.body).summary() : g.error));
        }
    } catch (const std::exception &e) {
        log_.error(std::string("Lease answer not understood: ") + e.what());
    }
    if (mine) {
        held_until_->store(renewed_until());
    } else if (!held()) {
        held_until_->store(0);
    }
    if (held() != reported_) {
        reported_ = held();
        if (reported_)
            log_.info("this slurmctld holds Lease " + opts_.ns + "/" + opts_.name + ": it writes the claims");
        else
            log_.error("this slurmctld does not hold Lease " + opts_.ns + "/" + opts_.name +
                       ": claim writes and reconciliation pause");
    }
    return answered;
}

}  // namespace k8s_cons_tres::k8s
