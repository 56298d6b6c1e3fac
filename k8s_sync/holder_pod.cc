// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/holder_pod.h"

#include "k8s_client/json.h"
#include "k8s_sync/user_names.h"

namespace k8s_cons_tres::k8s {

using rapidjson::Value;

std::string encodeHolderPod(const HolderIntent &in) {
    rapidjson::StringBuffer buf;
    json::Writer w(buf);
    w.StartObject();
    json::kv(w, "apiVersion", "v1");
    json::kv(w, "kind", "Pod");
    w.Key("metadata");
    w.StartObject();
    json::kv(w, "name", in.name);
    json::kv(w, "namespace", in.ns);
    w.Key("labels");
    w.StartObject();
    for (const auto &[k, v] : withUserLabel(in.labels, in.userUid)) json::kv(w, k.c_str(), v);
    w.EndObject();
    if (!in.claimsDigest.empty()) {
        w.Key("annotations");
        w.StartObject();
        json::kv(w, kAnnotationClaims, in.claimsDigest);
        w.EndObject();
    }
    w.EndObject();

    w.Key("spec");
    w.StartObject();
    json::kv(w, "nodeName", in.node);  // bound as created: no scheduler decides
    if (!in.priorityClass.empty()) json::kv(w, "priorityClassName", in.priorityClass);
    json::kv(w, "restartPolicy", "Always");
    w.Key("terminationGracePeriodSeconds");
    w.Int(0);  // it runs nothing worth a grace period
    w.Key("automountServiceAccountToken");
    w.Bool(false);
    w.Key("enableServiceLinks");
    w.Bool(false);
    // Pod Security "restricted", which the claim namespace enforces: a stolen
    // plugin token can then start no privileged pod on a node.
    w.Key("securityContext");
    w.StartObject();
    w.Key("runAsNonRoot");
    w.Bool(true);
    w.Key("runAsUser");
    w.Int(65535);  // the pause image's own user
    w.Key("runAsGroup");
    w.Int(65535);
    w.Key("seccompProfile");
    w.StartObject();
    json::kv(w, "type", "RuntimeDefault");
    w.EndObject();
    w.EndObject();
    // Slurm placed the job: no taint of the node may keep its devices unheld.
    w.Key("tolerations");
    w.StartArray();
    w.StartObject();
    json::kv(w, "operator", "Exists");
    w.EndObject();
    w.EndArray();
    w.Key("resourceClaims");
    w.StartArray();
    for (size_t i = 0; i < in.claims.size(); ++i) {
        w.StartObject();
        json::kv(w, "name", "c" + std::to_string(i));
        json::kv(w, "resourceClaimName", in.claims[i]);
        w.EndObject();
    }
    w.EndArray();
    w.Key("containers");
    w.StartArray();
    w.StartObject();
    json::kv(w, "name", "holder");
    json::kv(w, "image", in.image);
    w.Key("securityContext");
    w.StartObject();
    w.Key("allowPrivilegeEscalation");
    w.Bool(false);
    w.Key("readOnlyRootFilesystem");
    w.Bool(true);
    w.Key("capabilities");
    w.StartObject();
    w.Key("drop");
    w.StartArray();
    json::str(w, "ALL");
    w.EndArray();
    w.EndObject();
    w.EndObject();
    w.Key("resources");
    w.StartObject();
    w.Key("requests");
    w.StartObject();
    if (in.cpus) json::kv(w, "cpu", std::to_string(in.cpus));
    if (in.memMb) json::kv(w, "memory", std::to_string(in.memMb) + "Mi");
    w.EndObject();
    w.Key("claims");
    w.StartArray();
    for (size_t i = 0; i < in.claims.size(); ++i) {
        w.StartObject();
        json::kv(w, "name", "c" + std::to_string(i));
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    w.EndObject();
    w.EndArray();
    w.EndObject();
    w.EndObject();
    return std::string(buf.GetString(), buf.GetSize());
}

PodHolding decodePodHolding(const Value &obj) {
    if (!obj.IsObject()) throw json::Error("Pod is not an object");
    PodHolding p;
    const Value &meta = json::requireObject(obj, "metadata", "Pod");
    p.ns = json::getString(meta, "namespace");
    p.name = json::getString(meta, "name");
    p.uid = json::getString(meta, "uid");
    p.deleting = json::member(meta, "deletionTimestamp") && !(*json::member(meta, "deletionTimestamp")).IsNull();
    if (const Value *labels = json::member(meta, "labels"); labels && labels->IsObject())
        for (auto it = labels->MemberBegin(); it != labels->MemberEnd(); ++it)
            if (it->value.IsString()) p.labels.emplace(it->name.GetString(), it->value.GetString());
    if (const Value *ann = json::member(meta, "annotations"); ann && ann->IsObject())
        p.claimsDigest = json::getString(*ann, kAnnotationClaims);
    if (const Value *spec = json::member(obj, "spec"); spec && spec->IsObject()) {
        p.nodeName = json::getString(*spec, "nodeName");
        if (const Value *rc = json::member(*spec, "resourceClaims"); rc && rc->IsArray())
            for (const auto &c : rc->GetArray())
                if (c.IsObject()) p.claims.push_back(json::getString(c, "resourceClaimName"));
    }
    if (const Value *status = json::member(obj, "status"); status && status->IsObject())
        p.phase = json::getString(*status, "phase");
    return p;
}

bool holderMatches(const PodHolding &pod, const HolderIntent &in) {
    // A pod that ended (kubelet refused it, or it was evicted) holds nothing.
    return !pod.deleting && pod.phase != "Failed" && pod.phase != "Succeeded" && pod.nodeName == in.node &&
           pod.claims == in.claims && (pod.claimsDigest.empty() || pod.claimsDigest == in.claimsDigest);
}

bool reserveClaimFor(rapidjson::Document &claim, const std::string &podName, const std::string &podUid) {
    auto &a = claim.GetAllocator();
    if (!claim.IsObject()) throw json::Error("ResourceClaim is not an object");
    if (!claim.HasMember("status") || !claim["status"].IsObject()) {
        claim.RemoveMember("status");
        claim.AddMember("status", Value(rapidjson::kObjectType), a);
    }
    Value *status = &claim["status"];
    if (status->HasMember("reservedFor") && (*status)["reservedFor"].IsArray() &&
        (*status)["reservedFor"].Size() == 1) {
        const Value &ref = (*status)["reservedFor"][0];
        if (ref.IsObject() && json::getString(ref, "resource") == "pods" && json::getString(ref, "name") == podName &&
            json::getString(ref, "uid") == podUid)
            return false;
    }
    // Only the holder pod: an entry anyone else put there is not kept.
    Value ref(rapidjson::kObjectType);
    ref.AddMember("resource", "pods", a);
    ref.AddMember("name", Value(podName.c_str(), a), a);
    ref.AddMember("uid", Value(podUid.c_str(), a), a);
    Value list(rapidjson::kArrayType);
    list.PushBack(ref, a);
    status->RemoveMember("reservedFor");
    status->AddMember("reservedFor", list, a);
    return true;
}

}  // namespace k8s_cons_tres::k8s
