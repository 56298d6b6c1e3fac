// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/claim_writer.h"

#include "k8s_client/api_status.h"

namespace k8sdra::k8s {

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

}  // namespace

ClaimWriter::ClaimWriter(std::shared_ptr<const Config> cfg, WriterOptions opts, Logger log)
    : cfg_(std::move(cfg)), opts_(opts), log_(log.child("claim writer: ")),
      stop_(std::make_shared<Stopper>()), token_(std::make_shared<TokenSource>(*cfg_)) {}

ClaimWriter::~ClaimWriter() { stop(); }

void ClaimWriter::onResult(ResultFn fn) {
    std::lock_guard<std::mutex> lk(mu_);
    onResult_ = std::move(fn);
}

uint64_t ClaimWriter::enqueue(Op op) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (queue_.size() >= opts_.capacity || stop_->stopped()) {
            ++stats_.refused;
            return 0;
        }
        op.id = nextId_++;
        op.queued = std::chrono::steady_clock::now();
        queue_.push_back(std::move(op));
        ++stats_.submitted;
        stats_.depth = queue_.size();
    }
    cv_.notify_one();
    return nextId_ - 1;
}

uint64_t ClaimWriter::apply(ClaimIntent intent) {
    return enqueue(Op{ClaimOpResult::Kind::Apply, 0, std::move(intent), {}});
}

uint64_t ClaimWriter::remove(const std::string &ns, const std::string &name) {
    ClaimIntent in;
    in.ns = ns;
    in.name = name;
    return enqueue(Op{ClaimOpResult::Kind::Remove, 0, std::move(in), {}});
}

WriterStats ClaimWriter::stats() const {
    std::lock_guard<std::mutex> lk(mu_);
    WriterStats s = stats_;
    s.depth = queue_.size();
    return s;
}

void ClaimWriter::start() { thread_ = std::thread([this] { run(); }); }

void ClaimWriter::stop() {
    stop_->stop();
    cv_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

void ClaimWriter::run() {
    Client client(cfg_, token_, opts_.client, stop_, log_);
    for (;;) {
        Op op;
        {
            std::unique_lock<std::mutex> lk(mu_);
            cv_.wait(lk, [&] { return !queue_.empty() || stop_->stopped(); });
            if (queue_.empty())
                return;
            op = std::move(queue_.front());
            queue_.pop_front();
        }
        ClaimOpResult res;
        res.kind = op.kind;
        res.id = op.id;
        res.ns = op.intent.ns;
        res.name = op.intent.name;
        if (stop_->stopped())
            res.error = "writer stopped before the operation ran";
        else
            execute(client, op, res);
        finish(op, res);
    }
}

void ClaimWriter::execute(Client &c, Op &op, ClaimOpResult &res) {
    try {
        res.ok = op.kind == ClaimOpResult::Kind::Apply ? doApply(c, op.intent, res)
                                                       : doRemove(c, op.intent, res);
    } catch (const std::exception &e) {
        res.ok = false;
        res.error = std::string("unexpected answer: ") + e.what();
    }
}

void ClaimWriter::finish(Op &op, ClaimOpResult &res) {
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
    if (!res.ok)
        log_.error((op.kind == ClaimOpResult::Kind::Apply ? "writing " : "deleting ") +
                   res.ns + "/" + res.name + " failed: " + res.error);
    if (cb)
        cb(res);
}

// Decides whether a failed request is tried again, waiting as the answer asks.
bool ClaimWriter::retryable(const HttpResponse &r, ClaimOpResult &res, Backoff &b,
                            const std::string &what) {
    res.error = what + ": " + statusOf(r);
    bool transient = r.status == 0 || r.status == 429 || r.status >= 500;
    if (!transient || r.aborted || res.attempts >= opts_.maxAttempts)
        return false;
    {
        std::lock_guard<std::mutex> lk(mu_);
        ++stats_.retries;
    }
    auto wait = r.status == 429
                    ? std::chrono::duration_cast<std::chrono::milliseconds>(
                          r.retryAfter.value_or(opts_.defaultRetryAfter))
                    : b.next(Backoff::Clock::now());
    log_.verbose(res.error + "; retrying in " + std::to_string(wait.count()) + " ms");
    return !stop_->waitFor(wait);
}

// The claim exists: is it ours, and is it already as we want it?
bool ClaimWriter::adopt(Client &c, const ClaimIntent &in, std::string &rv, bool &done,
                        bool &exists, ClaimOpResult &res) {
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
        if (!done)
            res.error = "the claim is already allocated differently (allocations are immutable)";
        return done;
    }
    exists = true;
    rv = h.resourceVersion;
    return true;
}

bool ClaimWriter::doApply(Client &c, const ClaimIntent &in, ClaimOpResult &res) {
    Backoff backoff(opts_.backoff);
    bool exists = false;
    std::string rv;
    int conflicts = 0;
    while (!stop_->stopped()) {
        ++res.attempts;
        if (!exists) {
            HttpResponse r = c.request("POST", collection(in.ns), encodeClaimCreate(in));
            if (r.ok()) {
                rv = parseClaimHolding(r.body).resourceVersion;
                exists = true;
            } else if (r.status == 409) {
                bool done = false;
                if (!adopt(c, in, rv, done, exists, res))
                    return false;
                if (done)
                    return true;
                continue;
            } else if (!retryable(r, res, backoff, "create")) {
                return false;
            } else {
                continue;
            }
        }
        HttpResponse s = c.request("PUT", item(in.ns, in.name) + "/status",
                                   encodeClaimStatus(in, rv));
        if (s.ok())
            return true;
        if (s.status == 409 || s.status == 404) {
            {
                std::lock_guard<std::mutex> lk(mu_);
                ++stats_.conflicts;
            }
            if (++conflicts > opts_.maxConflicts) {
                res.error = "status: gave up after " + std::to_string(conflicts) + " conflicts";
                return false;
            }
            bool done = false;
            if (!adopt(c, in, rv, done, exists, res))
                return false;
            if (done)
                return true;
            continue;
        }
        if (!retryable(s, res, backoff, "status"))
            return false;
    }
    res.error = "writer stopped";
    return false;
}

bool ClaimWriter::doRemove(Client &c, const ClaimIntent &in, ClaimOpResult &res) {
    Backoff backoff(opts_.backoff);
    while (!stop_->stopped()) {
        ++res.attempts;
        HttpResponse r = c.request("DELETE", item(in.ns, in.name));
        if (r.ok() || r.status == 404)
            return true;
        if (!retryable(r, res, backoff, "delete"))
            return false;
    }
    res.error = "writer stopped";
    return false;
}

}  // namespace k8sdra::k8s
