// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/claim_json.h"

#include "k8s_sync/user_names.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace k8s_cons_tres::k8s {
namespace {

using rapidjson::Value;

std::string fnvHex(const std::string &s) {
    uint32_t h = 2166136261u;
    for (unsigned char c : s)
        h = (h ^ c) * 16777619u;
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", h);
    return buf;
}

// Lowercase, [a-z0-9.-] only, trimmed to start/end with an alphanumeric.
std::string dnsPart(const std::string &raw) {
    std::string out;
    for (unsigned char c : raw) {
        if (std::isalnum(c))
            out.push_back(char(std::tolower(c)));
        else if (c == '-' || c == '.')
            out.push_back(char(c));
        else
            out.push_back('-');
    }
    while (!out.empty() && !std::isalnum((unsigned char)out.back()))
        out.pop_back();
    size_t start = 0;
    while (start < out.size() && !std::isalnum((unsigned char)out[start]))
        ++start;
    out.erase(0, start);
    return out.empty() ? "x" : out;
}

void writeStringMap(json::Writer &w, const std::map<std::string, std::string> &m) {
    w.StartObject();
    for (const auto &[k, v] : m) {
        json::key(w, k);
        json::str(w, v);
    }
    w.EndObject();
}

void writeMetadata(json::Writer &w, const ClaimIntent &c, const std::string &rv) {
    w.Key("metadata");
    w.StartObject();
    json::kv(w, "name", c.name);
    json::kv(w, "namespace", c.ns);
    if (!rv.empty())
        json::kv(w, "resourceVersion", rv);
    const auto labels = withUserLabel(c.labels, c.userUid);
    if (!labels.empty()) {
        w.Key("labels");
        writeStringMap(w, labels);
    }
    w.EndObject();
}

void writeRequest(json::Writer &w, const ClaimRequestSpec &r) {
    w.StartObject();
    json::kv(w, "name", r.name);
    w.Key("exactly");
    w.StartObject();
    json::kv(w, "deviceClassName", r.deviceClassName);
    json::kv(w, "allocationMode", "ExactCount");
    w.Key("count");
    w.Int64(r.count);
    if (!r.celSelectors.empty()) {
        w.Key("selectors");
        w.StartArray();
        for (const auto &expr : r.celSelectors) {
            w.StartObject();
            w.Key("cel");
            w.StartObject();
            json::kv(w, "expression", expr);
            w.EndObject();
            w.EndObject();
        }
        w.EndArray();
    }
    if (!r.capacity.empty()) {
        w.Key("capacity");
        w.StartObject();
        w.Key("requests");
        writeStringMap(w, r.capacity);
        w.EndObject();
    }
    w.EndObject();
    w.EndObject();
}

void writeSpec(json::Writer &w, const ClaimIntent &c) {
    w.Key("spec");
    w.StartObject();
    w.Key("devices");
    w.StartObject();
    w.Key("requests");
    w.StartArray();
    for (const auto &r : effectiveRequests(c))
        writeRequest(w, r);
    w.EndArray();
    w.EndObject();
    w.EndObject();
}

void writeResult(json::Writer &w, const AllocationResult &r) {
    w.StartObject();
    json::kv(w, "request", r.request);
    json::kv(w, "driver", r.driver);
    json::kv(w, "pool", r.pool);
    json::kv(w, "device", r.device);
    if (!r.shareID.empty())
        json::kv(w, "shareID", r.shareID);
    if (!r.consumedCapacity.empty()) {
        w.Key("consumedCapacity");
        writeStringMap(w, r.consumedCapacity);
    }
    w.EndObject();
}

// The result that carries the CPUs (request "cpu", of the configured CPU
// driver), for the opaque cpuset config.
const AllocationResult *cpuResultOf(const ClaimIntent &c) {
    for (const auto &r : c.results)
        if (r.request == "cpu")
            return &r;
    return c.results.empty() ? nullptr : &c.results.front();
}

void writeCpusetConfig(json::Writer &w, const ClaimIntent &c) {
    w.Key("config");
    w.StartArray();
    w.StartObject();
    json::kv(w, "source", "FromClaim");
    w.Key("requests");
    const AllocationResult *cpu = cpuResultOf(c);
    w.StartArray();
    json::str(w, cpu ? cpu->request : std::string("cpu"));
    w.EndArray();
    w.Key("opaque");
    w.StartObject();
    json::kv(w, "driver", cpu ? cpu->driver : std::string(kCpuDriver));
    w.Key("parameters");
    w.StartObject();
    json::kv(w, "apiVersion", "v1alpha1");
    w.Key("cpuConfig");
    w.StartObject();
    json::kv(w, "cpuset", c.opaqueCpuset);
    w.EndObject();
    w.EndObject();
    w.EndObject();
    w.EndObject();
    w.EndArray();
}

void writeNodeSelector(json::Writer &w, const std::string &node) {
    w.Key("nodeSelector");
    w.StartObject();
    w.Key("nodeSelectorTerms");
    w.StartArray();
    w.StartObject();
    w.Key("matchFields");
    w.StartArray();
    w.StartObject();
    json::kv(w, "key", "metadata.name");
    json::kv(w, "operator", "In");
    w.Key("values");
    w.StartArray();
    json::str(w, node);
    w.EndArray();
    w.EndObject();
    w.EndArray();
    w.EndObject();
    w.EndArray();
    w.EndObject();
}

void writeStatus(json::Writer &w, const ClaimIntent &c, const std::string &holderUid) {
    w.Key("status");
    w.StartObject();
    w.Key("allocation");
    w.StartObject();
    w.Key("devices");
    w.StartObject();
    w.Key("results");
    w.StartArray();
    for (const auto &r : c.results)
        writeResult(w, r);
    w.EndArray();
    if (!c.opaqueCpuset.empty())
        writeCpusetConfig(w, c);
    w.EndObject();
    if (!c.nodeName.empty())
        writeNodeSelector(w, c.nodeName);
    w.EndObject();
    if (!holderUid.empty() && !c.holder.empty()) {  // the holder pod alone, as reserveClaimFor
        w.Key("reservedFor");
        w.StartArray();
        w.StartObject();
        json::kv(w, "resource", "pods");
        json::kv(w, "name", c.holder);
        json::kv(w, "uid", holderUid);
        w.EndObject();
        w.EndArray();
    }
    w.EndObject();
}

std::string finish(const rapidjson::StringBuffer &buf) {
    return std::string(buf.GetString(), buf.GetSize());
}

std::map<std::string, std::string> decodeStringMap(const Value *v) {
    std::map<std::string, std::string> out;
    if (!v || !v->IsObject())
        return out;
    for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it)
        if (it->value.IsString())
            out.emplace(it->name.GetString(), it->value.GetString());
    return out;
}

AllocationResult decodeResult(const Value &r) {
    AllocationResult a;
    a.request = json::getString(r, "request");
    a.driver = json::getString(r, "driver");
    a.pool = json::getString(r, "pool");
    a.device = json::getString(r, "device");
    a.shareID = json::getString(r, "shareID");
    a.consumedCapacity = decodeStringMap(json::member(r, "consumedCapacity"));
    a.adminAccess = json::getBool(r, "adminAccess");
    return a;
}

// metadata.name In [node] (matchFields) or kubernetes.io/hostname In [node].
std::string decodeNodeName(const Value *sel) {
    const Value *terms = sel ? json::member(*sel, "nodeSelectorTerms") : nullptr;
    if (!terms || !terms->IsArray() || terms->Empty())
        return {};
    const Value &term = (*terms)[0];
    for (const char *kind : {"matchFields", "matchExpressions"}) {
        const Value *reqs = json::member(term, kind);
        if (!reqs || !reqs->IsArray())
            continue;
        for (const Value &req : reqs->GetArray()) {
            std::string key = json::getString(req, "key");
            const Value *vals = json::member(req, "values");
            if ((key == "metadata.name" || key == "kubernetes.io/hostname") &&
                json::getString(req, "operator") == "In" && vals &&
                vals->IsArray() && vals->Size() == 1 && (*vals)[0].IsString())
                return (*vals)[0].GetString();
        }
    }
    return {};
}

std::string decodeCpuset(const Value &devices) {
    const Value *configs = json::member(devices, "config");
    if (!configs || !configs->IsArray())
        return {};
    for (const Value &cfg : configs->GetArray()) {
        const Value *opaque = json::member(cfg, "opaque");
        if (!opaque || json::getString(*opaque, "driver") != kCpuDriver)
            continue;
        const Value *params = json::member(*opaque, "parameters");
        const Value *cpu = params ? json::member(*params, "cpuConfig") : nullptr;
        if (cpu)
            return json::getString(*cpu, "cpuset");
    }
    return {};
}

// The API server allows 32 results (AllocationResultsMaxSize); far more is
// hostile or broken input, refused before anything is expanded.
constexpr size_t kMaxResults = 1024;

void decodeAllocation(ClaimHolding &h, const Value &alloc) {
    h.allocated = true;
    if (const Value *devices = json::member(alloc, "devices")) {
        if (const Value *results = json::member(*devices, "results");
            results && results->IsArray()) {
            if (results->Size() > kMaxResults)
                throw json::Error("ResourceClaim " + h.ns + "/" + h.name + " has " +
                                  std::to_string(results->Size()) +
                                  " allocation results, more than the " +
                                  std::to_string(kMaxResults) + " accepted");
            h.results.reserve(results->Size());
            for (const Value &r : results->GetArray())
                h.results.push_back(decodeResult(r));
        }
        h.opaqueCpuset = decodeCpuset(*devices);
    }
    h.nodeName = decodeNodeName(json::member(alloc, "nodeSelector"));
}

std::vector<AllocationResult> sorted(std::vector<AllocationResult> v) {
    std::sort(v.begin(), v.end(), [](const auto &a, const auto &b) {
        return std::tie(a.request, a.driver, a.pool, a.device) <
               std::tie(b.request, b.driver, b.pool, b.device);
    });
    return v;
}

}  // namespace

std::string labelValue(const std::string &raw) {
    bool valid = !raw.empty() && raw.size() <= 63 &&
                 std::isalnum((unsigned char)raw.front()) &&
                 std::isalnum((unsigned char)raw.back()) &&
                 std::all_of(raw.begin(), raw.end(), [](unsigned char c) {
                     return std::isalnum(c) || c == '-' || c == '_' || c == '.';
                 });
    if (valid)
        return raw;
    std::string v = dnsPart(raw);
    if (v.size() > 54)
        v = dnsPart(v.substr(0, 54));
    return v + "-" + fnvHex(raw);
}

std::string dnsLabel(const std::string &raw) {
    const bool valid = !raw.empty() && raw.size() <= 40 && std::isalnum((unsigned char)raw.front()) &&
                       std::isalnum((unsigned char)raw.back()) &&
                       std::all_of(raw.begin(), raw.end(), [](unsigned char c) {
                           return (std::isalnum(c) && !std::isupper(c)) || c == '-';
                       });
    if (valid) return raw;
    std::string v = dnsPart(raw);
    for (char &c : v)
        if (c == '.') c = '-';
    if (v.size() > 31) v = dnsPart(v.substr(0, 31));
    return v + "-" + fnvHex(raw);
}

namespace {
// slurm-<cluster>-<job>-<node>-<suffix>, a DNS subdomain of at most 253.
std::string objectName(const std::string &cluster, uint64_t jobId, const std::string &node,
                       const std::string &suffix) {
    // Every name ends in its suffix, so node "n" part 1 ("...-n-1") never
    // meets node "n-1" part 0 ("...-n-1-0"); a node name that is not a DNS
    // label as it is carries its hash, so "Node_1" and "node-1" differ too.
    std::string n = dnsPart(node);
    if (n != node)
        n += "-" + fnvHex(node);
    std::string name = "slurm-" + dnsPart(cluster) + "-" + std::to_string(jobId) + "-" + n + "-" + suffix;
    if (name.size() > 253)  // keep it unique when shortened
        name = dnsPart(name.substr(0, 240)) + "-" + fnvHex(name);
    return name;
}
}  // namespace

std::string claimName(const std::string &cluster, uint64_t jobId,
                      const std::string &node, unsigned part) {
    return objectName(cluster, jobId, node, std::to_string(part));
}

std::string holderPodName(const std::string &cluster, uint64_t jobId, const std::string &node) {
    return objectName(cluster, jobId, node, "holder");
}

std::map<std::string, std::string> claimLabels(const std::string &cluster,
                                               uint64_t jobId,
                                               const std::string &node) {
    return {{kLabelManagedBy, kManagedByValue},
            {kLabelCluster, labelValue(cluster)},
            {kLabelJob, std::to_string(jobId)},
            {kLabelNode, labelValue(node)}};
}

std::vector<ClaimRequestSpec> effectiveRequests(const ClaimIntent &c) {
    if (!c.requests.empty())
        return c.requests;
    std::vector<ClaimRequestSpec> out;
    for (const auto &r : c.results) {
        auto it = std::find_if(out.begin(), out.end(),
                               [&](const auto &q) { return q.name == r.request; });
        if (it == out.end()) {
            out.push_back({r.request, r.driver, 0, {}, r.consumedCapacity});
            it = out.end() - 1;
        }
        ++it->count;
    }
    return out;
}

std::string encodeClaimCreate(const ClaimIntent &c) {
    rapidjson::StringBuffer buf;
    json::Writer w(buf);
    w.StartObject();
    json::kv(w, "apiVersion", "resource.k8s.io/v1");
    json::kv(w, "kind", "ResourceClaim");
    writeMetadata(w, c, "");
    writeSpec(w, c);
    w.EndObject();
    return finish(buf);
}

std::string encodeClaimStatus(const ClaimIntent &c, const std::string &rv, const std::string &holderUid) {
    rapidjson::StringBuffer buf;
    json::Writer w(buf);
    w.StartObject();
    json::kv(w, "apiVersion", "resource.k8s.io/v1");
    json::kv(w, "kind", "ResourceClaim");
    writeMetadata(w, c, rv);
    writeSpec(w, c);
    writeStatus(w, c, holderUid);
    w.EndObject();
    return finish(buf);
}

ClaimHolding decodeClaimHolding(const Value &obj) {
    if (!obj.IsObject())
        throw json::Error("ResourceClaim is not an object");
    ClaimHolding h;
    const Value &meta = json::requireObject(obj, "metadata", "ResourceClaim");
    h.ns = json::getString(meta, "namespace");
    h.name = json::getString(meta, "name");
    h.uid = json::getString(meta, "uid");
    h.resourceVersion = json::getString(meta, "resourceVersion");
    h.labels = decodeStringMap(json::member(meta, "labels"));
    if (const Value *status = json::member(obj, "status")) {
        if (const Value *alloc = json::member(*status, "allocation");
            alloc && alloc->IsObject())
            decodeAllocation(h, *alloc);
        if (const Value *res = json::member(*status, "reservedFor"); res && res->IsArray())
            for (const auto &ref : res->GetArray())
                if (ref.IsObject() && json::getString(ref, "resource") == "pods" &&
                    json::getString(ref, "apiGroup").empty())
                {
                    h.reservedForPods.push_back(json::getString(ref, "uid"));
                    h.reservedForPodNames.push_back(json::getString(ref, "name"));
                }
    }
    return h;
}

ClaimHolding salvageClaimHolding(const Value &obj, const std::string &why) {
    ClaimHolding h;
    h.undecodable = why.empty() ? std::string("undecodable") : why;
    auto str = [](const Value *o, const char *k) -> std::string {
        const Value *v = o && o->IsObject() ? json::member(*o, k) : nullptr;
        return v && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : std::string();
    };
    const Value *meta = obj.IsObject() ? json::member(obj, "metadata") : nullptr;
    h.ns = str(meta, "namespace");
    h.name = str(meta, "name");
    h.uid = str(meta, "uid");
    h.resourceVersion = str(meta, "resourceVersion");
    const Value *status = obj.IsObject() ? json::member(obj, "status") : nullptr;
    const Value *alloc = status && status->IsObject() ? json::member(*status, "allocation") : nullptr;
    // Without an allocation it holds nothing, decodable or not.
    if (!alloc || alloc->IsNull())
        return h;
    h.allocated = true;
    if (alloc->IsObject()) {
        try {
            h.nodeName = decodeNodeName(json::member(*alloc, "nodeSelector"));
        } catch (const json::Error &) {
        }
        const Value *devices = json::member(*alloc, "devices");
        const Value *results = devices && devices->IsObject() ? json::member(*devices, "results") : nullptr;
        // Only the pools, each once: enough to name the nodes to keep out.
        if (results && results->IsArray())
            for (const Value &r : results->GetArray()) {
                std::string pool = str(&r, "pool");
                if (pool.empty() || h.results.size() >= kMaxResults) continue;
                if (std::none_of(h.results.begin(), h.results.end(),
                                 [&](const AllocationResult &a) { return a.pool == pool; }))
                    h.results.push_back({"", "", std::move(pool), "", "", {}});
            }
    }
    return h;
}

std::string encodeDeleteOptions(const std::string &uid, int gracePeriodSeconds) {
    if (uid.empty() && gracePeriodSeconds < 0) return {};
    rapidjson::StringBuffer buf;
    json::Writer w(buf);
    w.StartObject();
    json::kv(w, "kind", "DeleteOptions");
    json::kv(w, "apiVersion", "v1");
    if (gracePeriodSeconds >= 0) {
        w.Key("gracePeriodSeconds");
        w.Int(gracePeriodSeconds);
    }
    if (!uid.empty()) {
        w.Key("preconditions");
        w.StartObject();
        json::kv(w, "uid", uid);
        w.EndObject();
    }
    w.EndObject();
    return finish(buf);
}

ClaimHolding parseClaimHolding(const std::string &text) {
    rapidjson::Document doc;
    json::parse(doc, text);
    return decodeClaimHolding(doc);
}

bool isOurs(const ClaimHolding &existing, const ClaimIntent &intent) {
    for (const char *k : {kLabelCluster, kLabelJob, kLabelNode}) {
        auto want = intent.labels.find(k);
        auto have = existing.labels.find(k);
        if (want == intent.labels.end())
            continue;
        if (have == existing.labels.end() || have->second != want->second)
            return false;
    }
    return true;
}

bool allocationMatches(const ClaimHolding &existing, const ClaimIntent &intent) {
    return existing.allocated && existing.nodeName == intent.nodeName &&
           existing.opaqueCpuset == intent.opaqueCpuset &&
           sorted(existing.results) == sorted(intent.results);
}

}  // namespace k8s_cons_tres::k8s
