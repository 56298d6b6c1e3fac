// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/claim_event.h"

#include "k8s_client/json.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace k8s_cons_tres::k8s {

namespace {

std::string rfc3339_now() {  // metav1.Time: RFC 3339, seconds
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[40];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace

std::string eventName(const ClaimEvent &e) {
    static std::atomic<unsigned> seq{0};
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::system_clock::now().time_since_epoch()).count();
    char suffix[40];
    std::snprintf(suffix, sizeof suffix, ".%llx%02x", static_cast<unsigned long long>(ns), seq++ & 0xff);
    // a name is at most 253 characters: a claim's own name leaves room
    return e.claim.substr(0, 253 - 20) + suffix;
}

std::string encodeClaimEvent(const ClaimEvent &e, const std::string &name, const std::string &host) {
    const std::string now = rfc3339_now();
    rapidjson::StringBuffer buf;
    json::Writer w(buf);
    w.StartObject();
    json::kv(w, "apiVersion", "v1");
    json::kv(w, "kind", "Event");
    w.Key("metadata");
    w.StartObject();
    json::kv(w, "name", name);
    json::kv(w, "namespace", e.ns);
    w.EndObject();
    w.Key("involvedObject");
    w.StartObject();
    json::kv(w, "apiVersion", "resource.k8s.io/v1");
    json::kv(w, "kind", "ResourceClaim");
    json::kv(w, "namespace", e.ns);
    json::kv(w, "name", e.claim);
    w.EndObject();
    json::kv(w, "reason", e.reason);
    json::kv(w, "message", e.message.substr(0, 1024));  // the API server's limit
    json::kv(w, "type", e.type);
    w.Key("source");
    w.StartObject();
    json::kv(w, "component", "slurmctld-k8s-cons-tres");
    json::kv(w, "host", host);
    w.EndObject();
    json::kv(w, "reportingComponent", "slurm.io/k8s-cons-tres");
    json::kv(w, "reportingInstance", host);
    json::kv(w, "firstTimestamp", now);
    json::kv(w, "lastTimestamp", now);
    w.Key("count");
    w.Int(1);
    w.EndObject();
    return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace k8s_cons_tres::k8s
