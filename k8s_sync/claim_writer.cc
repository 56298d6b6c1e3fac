// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/claim_writer.h"

#include "k8s_client/api_status.h"
#include "k8s_client/thread_name.h"
#include "k8s_sync/claim_event.h"

#include <unistd.h>

namespace k8s_cons_tres::k8s {

namespace {

std::string collection(const std::string &ns) {
    return "/apis/resource.k8s.io/v1/namespaces/" + urlEncode(ns) + "/resourceclaims";
}
std::string item(const std::string &ns, const std::string &name) {
    return collection(ns) + "/" + urlEncode(name);
}
std::string statusOf(const HttpResponse &r) {
    return r.status ? parseApiStatus(r.status, r.body).summary() : r.error;
}
std::string uidIn(const std::string &body) {
    rapidjson::Document doc;
    json::parse(doc, body);
    // json::member, not an iterator comparison: clang's C++20 mode calls
    // RapidJSON's non-const member iterators' != ambiguous.
    const rapidjson::Value *meta = doc.IsObject() ? json::member(doc, "metadata") : nullptr;
    return meta && meta->IsObject() ? json::getString(*meta, "uid") : "";
}

// Marked as written by the plugin (its managed-by label): a delete that was
// not told which object to take leaves anything else alone.
bool markedOurs(const std::string &body) {
    rapidjson::Document doc;
    json::parse(doc, body);
    const rapidjson::Value *meta = doc.IsObject() ? json::member(doc, "metadata") : nullptr;
    const rapidjson::Value *labels = meta && meta->IsObject() ? json::member(*meta, "labels") : nullptr;
    return labels && labels->IsObject() && json::getString(*labels, kLabelManagedBy) == kManagedByValue;
}

}  // namespace

ClaimWriter::ClaimWriter(std::shared_ptr<const Config> cfg, WriterOptions opts, Logger log)
    : cfg_(std::move(cfg)), opts_(opts), log_(log.child("claim writer: ")),
      stop_(std::make_shared<Stopper>()), token_(std::make_shared<TokenSource>(*cfg_)),
      queue_(opts_.capacity) {}

ClaimWriter::~ClaimWriter() { stop(); }

void ClaimWriter::onResult(ResultFn fn) {
    std::lock_guard<std::mutex> lk(mu_);
    onResult_ = std::move(fn);
}

uint64_t ClaimWriter::enqueue(Op op, bool replace) {
    uint64_t id;
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (stop_->stopped()) {
            ++stats_.refused;
            return 0;
        }
        op.id = id = nextId_;
        op.queued = std::chrono::steady_clock::now();
        op.backoff = Backoff(opts_.backoff);
        switch (queue_.push(std::move(op), replace)) {
        case ClaimQueue::Push::Full:
            ++stats_.refused;
            return 0;
        case ClaimQueue::Push::Kept:
            return 0;
        case ClaimQueue::Push::Replaced:
            ++stats_.replaced;
            break;
        case ClaimQueue::Push::Queued:
            break;
        }
        ++nextId_;
        ++stats_.submitted;
        stats_.depth = queue_.size();
    }
    cv_.notify_one();
    return id;
}

uint64_t ClaimWriter::apply(ClaimIntent intent) {
    Op op;
    op.kind = ClaimOpKind::Apply;
    op.intent = std::move(intent);
    return enqueue(std::move(op));
}

uint64_t ClaimWriter::remove(const std::string &ns, const std::string &name, std::string uid) {
    Op op;
    op.kind = ClaimOpKind::Remove;
    op.intent.ns = ns;
    op.intent.name = name;
    op.uid = std::move(uid);
    return enqueue(std::move(op));
}

uint64_t ClaimWriter::removeUnlessQueued(const std::string &ns, const std::string &name) {
    Op op;
    op.kind = ClaimOpKind::Remove;
    op.intent.ns = ns;
    op.intent.name = name;
    return enqueue(std::move(op), false);
}

uint64_t ClaimWriter::applyHolder(HolderIntent pod) {
    Op op;
    op.kind = ClaimOpKind::PodApply;
    op.intent.ns = pod.ns;
    op.intent.name = pod.name;
    op.pod = std::move(pod);
    return enqueue(std::move(op));
}

uint64_t ClaimWriter::removeHolder(const std::string &ns, const std::string &name,
                                   std::vector<std::string> claims, std::string uid) {
    Op op;
    op.kind = ClaimOpKind::PodRemove;
    op.uid = std::move(uid);
    op.intent.ns = op.pod.ns = ns;
    op.intent.name = op.pod.name = name;
    op.pod.claims = std::move(claims);
    return enqueue(std::move(op));
}

uint64_t ClaimWriter::event(const ClaimEvent &e) {
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
    Op op;
    op.kind = ClaimOpKind::Event;
    op.intent.ns = e.ns;
    op.intent.name = eventName(e);
    op.body = encodeClaimEvent(e, op.intent.name, host);
    return enqueue(std::move(op));
}

WriterStats ClaimWriter::stats() const {
    std::lock_guard<std::mutex> lk(mu_);
    WriterStats s = stats_;
    s.depth = queue_.size();
    return s;
}

void ClaimWriter::start() {
    for (int i = 0; i < std::max(1, opts_.inflight); ++i) threads_.emplace_back([this] { run(); });
}

void ClaimWriter::stop() {
    stop_->stop();
    { std::lock_guard<std::mutex> lk(mu_); }  // no lost wake-up between check and wait
    cv_.notify_all();
    for (std::thread &t : threads_) t.join();
    threads_.clear();
    failQueued();  // every thread has ended (or none started): report the rest here
}

void ClaimWriter::set_gate(std::function<bool()> gate) {
    std::lock_guard<std::mutex> lk(mu_);
    gate_ = std::move(gate);
}

void ClaimWriter::set_enabled(bool enabled) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        enabled_ = enabled;
    }
    cv_.notify_all();
}

size_t ClaimWriter::discard() {
    std::lock_guard<std::mutex> lk(mu_);
    const size_t n = queue_.drain().size();
    stats_.depth = queue_.size();
    return n;
}

// Whatever is still queued at stop is reported as failed.
void ClaimWriter::failQueued() {
    std::vector<Op> left;
    {
        std::lock_guard<std::mutex> lk(mu_);
        left = queue_.drain();
    }
    for (auto &op : left) {
        ClaimOpResult res;
        res.kind = op.kind;
        res.id = op.id;
        res.ns = op.intent.ns;
        res.name = op.intent.name;
        res.attempts = op.attempts;
        res.error = "writer stopped before the operation ran";
        finish(op, res);
    }
}

// The next operation to send; waits for new work or the end of a backoff.
std::optional<ClaimWriter::Op> ClaimWriter::next() {
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_->stopped()) {
        if (!enabled_) {
            cv_.wait(lk);
            continue;
        }
        if (gate_ && !gate_()) {  // changes without a notify: look again soon
            cv_.wait_for(lk, std::chrono::milliseconds(200));
            continue;
        }
        if (auto op = queue_.take(ClaimQueue::Clock::now()))
            return op;
        ++idle_;
        if (auto due = queue_.nextDue())
            cv_.wait_until(lk, *due);
        else
            cv_.wait(lk);
        --idle_;
    }
    return std::nullopt;
}

void ClaimWriter::run() {
    name_this_thread("k8s_claims");
    Client client(cfg_, token_, opts_.client, stop_, log_);
    while (std::optional<Op> op = next()) {
        ClaimOpResult res;
        res.kind = op->kind;
        res.id = op->id;
        res.ns = op->intent.ns;
        res.name = op->intent.name;
        Retry again = execute(client, *op, res);
        // a claim's write waiting for this pod's uid stops waiting (holderUid)
        const bool pod = op->kind == ClaimOpKind::PodApply;
        if (again && !stop_->stopped()) {
            {
                std::lock_guard<std::mutex> lk(mu_);
                if (!queue_.retry(std::move(*op), ClaimQueue::Clock::now() + *again))
                    ++stats_.replaced;  // a newer intent for the claim takes over
            }
            if (pod) podCv_.notify_all();
            continue;
        }
        if (again)
            res.error = "writer stopped; last: " + res.error;
        {
            std::lock_guard<std::mutex> lk(mu_);
            queue_.settle(op->key());  // a write queued behind it becomes ready
        }
        if (pod) podCv_.notify_all();
        finish(*op, res);
    }
}

ClaimWriter::Retry ClaimWriter::execute(Client &c, Op &op, ClaimOpResult &res) {
    Retry again;
    try {
        switch (op.kind) {
        case ClaimOpKind::Apply: again = doApply(c, op, res); break;
        case ClaimOpKind::Remove: again = doRemove(c, op, res); break;
        case ClaimOpKind::PodApply: again = doPodApply(c, op, res); break;
        case ClaimOpKind::PodRemove: again = doPodRemove(c, op, res); break;
        case ClaimOpKind::Event: again = doEvent(c, op, res); break;
        }
    } catch (const std::exception &e) {
        res.ok = false;
        res.error = std::string("unexpected answer: ") + e.what();
    }
    res.attempts = op.attempts;
    return again;
}

void ClaimWriter::finish(const Op &op, ClaimOpResult &res) {
    res.latency = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - op.queued);
    ResultFn cb;
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (res.ok) {
            ++stats_.succeeded;
        } else {
            ++stats_.failed;
            stats_.lastError = res.name + ": " + res.error;
        }
        stats_.depth = queue_.size();
        cb = onResult_;
    }
    if (!res.ok) {
        const bool write = op.kind == ClaimOpKind::Apply || op.kind == ClaimOpKind::PodApply ||
                           op.kind == ClaimOpKind::Event;
        const char *what = op.isPod() ? "pod " : op.kind == ClaimOpKind::Event ? "event " : "";
        log_.error((write ? "writing " : "deleting ") + std::string(what) + res.ns + "/" + res.name +
                   " failed: " + res.error);
    }
    if (cb)
        cb(res);
}

// Whether a failed request is tried again, and after how long. The wait
// happens in the queue, so other claims are written meanwhile.
ClaimWriter::Retry ClaimWriter::retryable(const HttpResponse &r, Op &op, ClaimOpResult &res,
                                          const std::string &what) {
    res.error = what + ": " + statusOf(r);
    bool transient = r.status == 0 || r.status == 429 || r.status >= 500;
    if (!transient || r.aborted || op.attempts >= opts_.maxAttempts)
        return std::nullopt;
    {
        std::lock_guard<std::mutex> lk(mu_);
        ++stats_.retries;
    }
    auto wait = r.status == 429
                    ? std::chrono::duration_cast<std::chrono::milliseconds>(
                          r.retryAfter.value_or(opts_.defaultRetryAfter))
                    : op.backoff.next(Backoff::Clock::now());
    log_.verbose(res.name + ": " + res.error + "; retrying in " + std::to_string(wait.count()) +
                 " ms");
    return wait;
}


// The claim exists: is it ours, and is it already as we want it?
bool ClaimWriter::adopt(Client &c, const ClaimIntent &in, const std::string &key, std::string &rv,
                        bool &done, bool &exists, ClaimOpResult &res) {
    HttpResponse g = c.get(item(in.ns, in.name));
    if (g.status == 404) {
        exists = false;
        return true;  // deleted meanwhile: create it again
    }
    if (!g.ok()) {
        res.error = "GET after conflict: " + statusOf(g);
        return false;
    }
    ClaimHolding h = parseClaimHolding(g.body);
    if (!isOurs(h, in)) {
        res.error = "a claim with this name exists and is not ours (labels differ)";
        return false;
    }
    if (h.allocated) {
        done = allocationMatches(h, in);
        if (done) {
            // already as wanted (written before a restart, or by an attempt
            // whose answer was lost): its reservation is this write's too
            const std::string uid = holderUid(in, key);
            if (uid.empty()) return true;
            rapidjson::Document doc;
            json::parse(doc, g.body);
            if (!reserveClaimFor(doc, in.holder, uid)) return true;
            rapidjson::StringBuffer buf;
            json::Writer w(buf);
            doc.Accept(w);
            HttpResponse s = c.request("PUT", item(in.ns, in.name) + "/status",
                                       std::string(buf.GetString(), buf.GetSize()));
            if (s.ok()) return true;
            {
                std::lock_guard<std::mutex> lk(mu_);
                reservedBy_[key] = "";  // not reserved: the pod's operation does it
            }
            res.error = "reserving it for holder pod " + in.holder + ": " + statusOf(s);
            return false;
        }
        // Allocations are immutable: our claim of another allocation (the
        // job shrank or grew) goes, exactly that object, and is written anew.
        HttpResponse d = c.request("DELETE", item(in.ns, in.name), encodeDeleteOptions(h.uid));
        if (!d.ok() && d.status != 404 && d.status != 409) {
            res.error = "deleting the claim of an older allocation: " + statusOf(d);
            return false;
        }
        exists = false;
        return true;
    }
    exists = true;
    rv = h.resourceVersion;
    remember(in.ns + "/" + in.name, h.uid);  // the Apply op's key
    return true;
}

// One attempt; 409 conflicts are resolved at once within it.
ClaimWriter::Retry ClaimWriter::doApply(Client &c, Op &op, ClaimOpResult &res) {
    const ClaimIntent &in = op.intent;
    bool exists = false;
    std::string rv;
    int conflicts = 0;
    while (!stop_->stopped()) {
        ++op.attempts;
        if (!exists) {
            HttpResponse r = c.request("POST", collection(in.ns), encodeClaimCreate(in));
            if (r.ok()) {
                ClaimHolding made = parseClaimHolding(r.body);
                rv = made.resourceVersion;
                remember(op.key(), made.uid);
                exists = true;
            } else if (r.status == 409) {
                if (++conflicts > opts_.maxConflicts) {
                    res.error = "create: gave up after " + std::to_string(conflicts) + " conflicts";
                    return std::nullopt;
                }
                bool done = false;
                if (!adopt(c, in, op.key(), rv, done, exists, res))
                    return std::nullopt;
                if (done) {
                    res.ok = true;
                    return std::nullopt;
                }
                continue;
            } else {
                return retryable(r, op, res, "create");
            }
        }
        HttpResponse s = c.request("PUT", item(in.ns, in.name) + "/status",
                                   encodeClaimStatus(in, rv, holderUid(in, op.key())));
        if (s.ok()) {
            res.ok = true;
            res.error.clear();
            return std::nullopt;
        }
        if (s.status == 409 || s.status == 404) {
            {
                std::lock_guard<std::mutex> lk(mu_);
                ++stats_.conflicts;
            }
            if (++conflicts > opts_.maxConflicts) {
                res.error = "status: gave up after " + std::to_string(conflicts) + " conflicts";
                return std::nullopt;
            }
            bool done = false;
            if (!adopt(c, in, op.key(), rv, done, exists, res))
                return std::nullopt;
            if (done) {
                res.ok = true;
                return std::nullopt;
            }
            continue;
        }
        return retryable(s, op, res, "status");
    }
    res.error = "writer stopped";
    return std::nullopt;
}

void ClaimWriter::remember(const std::string &key, const std::string &uid) {
    if (uid.empty()) return;
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (uids_.size() >= kMaxUids) uids_.clear();  // bounded: removals then GET first
        uids_[key] = uid;
    }
    if (key.rfind("pod:", 0) == 0) podCv_.notify_all();
}

std::string ClaimWriter::holderUid(const ClaimIntent &in, const std::string &claimKey) {
    if (in.holder.empty()) return "";
    const std::string podKey = "pod:" + in.ns + "/" + in.holder;
    const auto until = std::chrono::steady_clock::now() + kHolderWait;
    std::unique_lock<std::mutex> lk(mu_);
    // Both are written at once: the pod's POST is usually in flight now.
    // Only an operation another thread runs or an idle one is about to
    // take is waited for: one queued with every other thread busy may
    // wait for this very thread (MaxInflightWrites=1). Under load the
    // idle thread may not have taken it yet when the claim's POST is back.
    while (!uids_.count(podKey) && (queue_.inFlight(podKey) || (queue_.busy(podKey) && idle_ > 0)) &&
           !stop_->stopped())
        if (podCv_.wait_until(lk, until) == std::cv_status::timeout) break;
    auto it = uids_.find(podKey);
    std::string uid = it == uids_.end() ? "" : it->second;
    if (reservedBy_.size() >= kMaxUids) reservedBy_.clear();  // the pod's op then reserves itself
    reservedBy_[claimKey] = uid;
    return uid;
}

bool ClaimWriter::reservedByClaimWrite(const std::string &claimKey, const std::string &podUid) const {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = reservedBy_.find(claimKey);
    if (it != reservedBy_.end()) return it->second == podUid;
    return queue_.busy(claimKey);
}

std::string ClaimWriter::remembered(const std::string &key) const {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = uids_.find(key);
    return it == uids_.end() ? "" : it->second;
}

void ClaimWriter::forget(const std::string &key) {
    std::lock_guard<std::mutex> lk(mu_);
    uids_.erase(key);
    reservedBy_.erase(key);
}

bool ClaimWriter::claimPending(const std::string &key) const {
    std::lock_guard<std::mutex> lk(mu_);
    return queue_.busy(key);
}

// op.uid when given: that object or nothing (a newer one of the name is not
// what was asked to go). Otherwise the one last written, and on a mismatch
// whatever a GET finds under the name. Every DELETE names its UID, so a
// decision made about one object never deletes another.
ClaimWriter::Retry ClaimWriter::deleteExactly(Client &c, Op &op, ClaimOpResult &res,
                                              const std::string &path, int grace, bool &gone,
                                              std::string &deleted, std::string *answer) {
    gone = false;
    deleted.clear();
    std::string uid = op.uid.empty() ? remembered(op.key()) : op.uid;
    while (!stop_->stopped() && !gone) {
        ++op.attempts;
        if (uid.empty()) {
            HttpResponse g = c.get(path);
            if (g.status == 404) {
                gone = true;
                break;
            }
            if (!g.ok()) return retryable(g, op, res, "get before delete");
            if (!markedOurs(g.body)) {
                res.error = "the object of this name is not ours (no managed-by label): left alone";
                return std::nullopt;
            }
            uid = uidIn(g.body);
            if (uid.empty()) {
                res.error = "the object has no uid";
                return std::nullopt;
            }
        }
        HttpResponse d = c.request("DELETE", path, encodeDeleteOptions(uid, grace));
        if (d.ok()) {
            deleted = uid;
            gone = true;
            if (answer) *answer = std::move(d.body);
        } else if (d.status == 404 || d.status == 409) {
            // that object is gone; another of the name, written since, is
            // left alone (reconciliation decides about it on its own)
            gone = true;
        } else {
            return retryable(d, op, res, "delete");
        }
    }
    if (!gone) {
        res.error = "writer stopped";
        return std::nullopt;
    }
    forget(op.key());
    return std::nullopt;
}

ClaimWriter::Retry ClaimWriter::doEvent(Client &c, Op &op, ClaimOpResult &res) {
    ++op.attempts;
    HttpResponse r = c.request("POST", "/api/v1/namespaces/" + urlEncode(op.intent.ns) + "/events", op.body);
    if (r.ok() || r.status == 409) {  // 409: an earlier attempt got through
        res.ok = true;
        return std::nullopt;
    }
    return retryable(r, op, res, "create");
}

ClaimWriter::Retry ClaimWriter::doRemove(Client &c, Op &op, ClaimOpResult &res) {
    bool gone = false;
    std::string deleted;
    Retry again = deleteExactly(c, op, res, item(op.intent.ns, op.intent.name), -1, gone, deleted);
    if (gone) {
        res.ok = true;
        res.error.clear();
    }
    return again;
}

}  // namespace k8s_cons_tres::k8s
