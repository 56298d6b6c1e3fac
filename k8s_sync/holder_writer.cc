// SPDX-License-Identifier: GPL-2.0-or-later
// The claim writer's holder pod operations (see holder_pod.h). They run on
// the writer's thread and queue, so pod writes are retried, coalesced and
// bounded exactly like claim writes.
#include "k8s_sync/claim_writer.h"

namespace k8s_cons_tres::k8s {

namespace {

std::string pods(const std::string &ns) { return "/api/v1/namespaces/" + urlEncode(ns) + "/pods"; }
std::string pod(const std::string &ns, const std::string &name) { return pods(ns) + "/" + urlEncode(name); }
std::string claim(const std::string &ns, const std::string &name) {
    return "/apis/resource.k8s.io/v1/namespaces/" + urlEncode(ns) + "/resourceclaims/" + urlEncode(name);
}

// Labelled for the same cluster, job and node as the wanted pod: the plugin
// wrote it for this job (names are deterministic, so anything else with the
// name is someone else's and is left alone).
bool sameJob(const std::map<std::string, std::string> &have, const HolderIntent &in) {
    for (const char *k : {kLabelManagedBy, kLabelCluster, kLabelJob, kLabelNode}) {
        auto h = have.find(k);
        auto w = in.labels.find(k);
        if (h == have.end() || w == in.labels.end() || h->second != w->second) return false;
    }
    return true;
}

// A DELETE's answer: the pod stays until its finalizers or grace period end.
bool stillTerminating(const std::string &answer) {
    rapidjson::Document doc;
    try {
        json::parse(doc, answer);
    } catch (const json::Error &) {
        return true;  // unreadable: look
    }
    const rapidjson::Value *meta = doc.IsObject() ? json::member(doc, "metadata") : nullptr;
    if (!meta || !meta->IsObject()) return true;  // unknown: look
    const rapidjson::Value *fin = json::member(*meta, "finalizers");
    const rapidjson::Value *grace = json::member(*meta, "deletionGracePeriodSeconds");
    return (fin && fin->IsArray() && !fin->Empty()) || (grace && grace->IsInt64() && grace->GetInt64() > 0);
}

PodHolding parsePod(const std::string &body) {
    rapidjson::Document doc;
    json::parse(doc, body);
    return decodePodHolding(doc);
}

// Claims are queued ahead of their pod; one not there yet is waited for:
// briefly while its own write is queued or in flight on another of the
// writer's threads, longer otherwise.
constexpr std::chrono::milliseconds kClaimWait{500};
constexpr std::chrono::milliseconds kClaimWriting{10};

}  // namespace

// Created first, looked at only when the name is taken (409): the common
// case, a new job, costs one request, not a GET and a POST.
ClaimWriter::Retry ClaimWriter::doPodApply(Client &c, Op &op, ClaimOpResult &res) {
    const HolderIntent &in = op.pod;
    ++op.attempts;
    HttpResponse r = c.request("POST", pods(in.ns), encodeHolderPod(in));
    if (r.ok()) {
        const std::string uid = parsePod(r.body).uid;
        remember(op.key(), uid);
        return reserveClaims(c, op, res, uid);
    }
    if (r.status != 409) return retryable(r, op, res, "create pod");
    HttpResponse g = c.get(pod(in.ns, in.name));
    if (g.status == 404) return op.backoff.next(Backoff::Clock::now());  // gone meanwhile: create again
    if (!g.ok()) return retryable(g, op, res, "get pod");
    PodHolding have = parsePod(g.body);
    if (!sameJob(have.labels, in)) {
        res.error = "a pod with this name exists and is not ours (labels differ)";
        return std::nullopt;
    }
    if (!holderMatches(have, in)) {
        // A pod of an older allocation, or one that ended: that very
        // object goes at once and a new one is made.
        HttpResponse d = c.request("DELETE", pod(in.ns, in.name), encodeDeleteOptions(have.uid, 0));
        if (!d.ok() && d.status != 404 && d.status != 409)
            return retryable(d, op, res, "deleting the pod of an older allocation");
        return op.backoff.next(Backoff::Clock::now());  // create once it is gone
    }
    remember(op.key(), have.uid);
    return reserveClaims(c, op, res, have.uid);
}

// Kubelet prepares a claim only for a pod its status.reservedFor names.
ClaimWriter::Retry ClaimWriter::reserveClaims(Client &c, Op &op, ClaimOpResult &res, const std::string &uid) {
    const HolderIntent &in = op.pod;
    int conflicts = 0;
    for (size_t i = 0; i < in.claims.size() && !stop_->stopped();) {
        if (reservedByClaimWrite(in.ns + "/" + in.claims[i], uid)) {
            ++i;  // its own status write carries the reservation: no GET, no PUT
            continue;
        }
        const std::string path = claim(in.ns, in.claims[i]);
        HttpResponse g = c.get(path);
        const bool writing = claimPending(in.ns + "/" + in.claims[i]);
        if (g.status == 404 && (writing || op.attempts < opts_.maxAttempts)) {
            res.error = "claim " + in.claims[i] + " is not written yet";
            return writing ? kClaimWriting : kClaimWait;
        }
        if (!g.ok()) return retryable(g, op, res, "get claim " + in.claims[i]);
        rapidjson::Document doc;
        json::parse(doc, g.body);
        const ClaimHolding h = decodeClaimHolding(doc);
        if (!sameJob(h.labels, in)) {
            res.error = "claim " + in.claims[i] + " is not this job's (labels differ)";
            return std::nullopt;
        }
        if (!h.allocated) {
            if (writing) return kClaimWriting;  // its status is being written
            if (op.attempts >= opts_.maxAttempts) {
                res.error = "claim " + in.claims[i] + " has no allocation";
                return std::nullopt;
            }
            return kClaimWait;
        }
        if (!reserveClaimFor(doc, in.name, uid)) {
            ++i;
            continue;
        }
        rapidjson::StringBuffer buf;
        json::Writer w(buf);
        doc.Accept(w);
        HttpResponse s = c.request("PUT", path + "/status", std::string(buf.GetString(), buf.GetSize()));
        if (s.ok()) {
            ++i;
            continue;
        }
        if (s.status == 409 && ++conflicts <= opts_.maxConflicts) {
            std::lock_guard<std::mutex> lk(mu_);
            ++stats_.conflicts;
            continue;  // changed meanwhile: read it again
        }
        return retryable(s, op, res, "reserve claim " + in.claims[i]);
    }
    res.ok = !stop_->stopped();
    res.error = res.ok ? "" : "writer stopped";
    return std::nullopt;
}

// The pod goes first, at once; its claims only once it is gone, so kubelet
// never sees a running pod lose its claims.
ClaimWriter::Retry ClaimWriter::doPodRemove(Client &c, Op &op, ClaimOpResult &res) {
    const std::string path = pod(op.pod.ns, op.pod.name);
    bool gone = false;
    std::string deleted, answer;
    if (Retry again = deleteExactly(c, op, res, path, 0, gone, deleted, &answer); again || !gone) return again;
    // With grace 0 the answer is the object as deleted: removed at once
    // unless it has finalizers (or the server made the deletion graceful),
    // so a GET is needed only then.
    if (!deleted.empty() && stillTerminating(answer)) {
        HttpResponse g = c.get(path);
        if (g.ok() && parsePod(g.body).uid == deleted) {  // a finalizer: look again later
            res.error = "pod still terminating";
            if (op.attempts >= opts_.maxAttempts) return std::nullopt;
            return op.backoff.next(Backoff::Clock::now());
        }
        if (g.ok()) {  // another pod of the name, written since: its claims stay
            res.ok = true;
            res.error.clear();
            return std::nullopt;
        }
        if (g.status != 404) return retryable(g, op, res, "get pod");
    }
    for (const auto &name : op.pod.claims) removeUnlessQueued(op.pod.ns, name);
    res.ok = true;
    res.error.clear();
    return std::nullopt;
}

}  // namespace k8s_cons_tres::k8s
