// SPDX-License-Identifier: GPL-2.0-or-later
// The Slurm -> Kubernetes direction: a bounded queue of claim writes drained
// by the writer's own thread, so that slurmctld never waits on HTTP.
// Apply = POST the claim, then PUT its status with the allocation; Remove =
// DELETE. Idempotent: AlreadyExists is checked to be ours and equal, 409 on
// status means GET and retry, 422 is logged with causes and dropped, 429
// waits for Retry-After, 5xx and network errors back off. The queue holds one
// entry per claim (ClaimQueue): the latest intent for a name wins, and an
// operation waiting out its backoff does not block the others. Several
// threads send at once (WriterOptions::inflight), never two operations of
// the same object.
#pragma once

#include "k8s_client/backoff.h"
#include "k8s_sync/claim_json.h"
#include "k8s_sync/claim_event.h"
#include "k8s_sync/claim_queue.h"
#include "k8s_client/http_client.h"

#include <condition_variable>
#include <functional>
#include <optional>
#include <unordered_map>
#include <thread>

namespace k8s_cons_tres::k8s {

struct WriterOptions {
    size_t capacity = 4096;        // bound on distinct claims queued; beyond it new ones are refused
    // Requests in flight at once (MaxInflightWrites): one thread and one
    // connection each. A real API server takes 5-20 ms a write, so one at a
    // time cannot keep up with a busy cluster. Each object's operations
    // still go one at a time, in order (ClaimQueue).
    int inflight = 32;
    int maxAttempts = 10;          // for 5xx / 429 / network failures
    int maxConflicts = 50;         // 409 retries of one operation
    std::chrono::seconds defaultRetryAfter{1};  // 429 without a Retry-After header
    Backoff::Params backoff;
    ClientOptions client;
};

struct ClaimOpResult {
    using Kind = ClaimOpKind;
    Kind kind = Kind::Apply;
    uint64_t id = 0;
    std::string ns, name;
    bool ok = false;
    int attempts = 0;
    std::string error;             // "" when ok
    std::chrono::microseconds latency{0};  // queued -> done
};

struct WriterStats {
    size_t depth = 0;
    uint64_t submitted = 0, succeeded = 0, failed = 0, refused = 0, retries = 0, conflicts = 0;
    uint64_t replaced = 0;         // operations superseded by a later one for the same claim
    std::string lastError;
};

class ClaimWriter {
public:
    using ResultFn = std::function<void(const ClaimOpResult &)>;

    ClaimWriter(std::shared_ptr<const Config> cfg, WriterOptions opts, Logger log);
    ~ClaimWriter();
    ClaimWriter(const ClaimWriter &) = delete;
    ClaimWriter &operator=(const ClaimWriter &) = delete;

    // Never block; return 0 when the queue is full (counted as refused),
    // otherwise the operation id. An operation replaced by a later one for
    // the same claim before it was sent reports no result of its own: the
    // later one's result settles the claim.
    uint64_t apply(ClaimIntent intent);
    // Removals delete exactly one object, by UID precondition: `uid` when
    // given (a newer object of that name is left alone), else the one this
    // writer wrote last, else the one a GET finds.
    uint64_t remove(const std::string &ns, const std::string &name, std::string uid = "");
    // Holder pods: create the pod (replacing one of ours that differs) and
    // reserve each of its claims for it, once the claims are written; or
    // delete the pod (grace period 0) and, once it is gone, the claims.
    uint64_t applyHolder(HolderIntent pod);
    uint64_t removeHolder(const std::string &ns, const std::string &name, std::vector<std::string> claims,
                          std::string uid = "");
    // An Event on a pod's claim, created once (transient failures retried);
    // its failure is logged and changes nothing else.
    uint64_t event(const ClaimEvent &e);

    void onResult(ResultFn fn);  // set before start(); called on the writer thread
                                 // (by stop() for a writer never started)
    void start();
    void stop();                 // prompt; queued operations are reported as failed
    // Drops every operation not yet sent (this controller went to standby:
    // the active one reconciles); returns how many.
    size_t discard();
    // While disabled nothing is sent; queued operations wait (this
    // controller does not hold the lease). Enabled unless told otherwise.
    void set_enabled(bool enabled);
    // Asked before every request is sent (set before start()): false holds
    // the queue as set_enabled(false) does. The Lease fences each write, not
    // only the feed's ticks, so a lease that lapsed between two ticks stops
    // writes at once.
    void set_gate(std::function<bool()> gate);
    WriterStats stats() const;

private:
    using Op = ClaimOp;
    // How an attempt ended: settled (ok or failed for good), or try again later.
    using Retry = std::optional<std::chrono::milliseconds>;
    uint64_t enqueue(Op op, bool replace = true);
    // A removal that yields to any operation of the claim requested since
    // (the job came back and wants its claim again).
    uint64_t removeUnlessQueued(const std::string &ns, const std::string &name);
    void run();
    std::optional<Op> next();
    Retry execute(Client &c, Op &op, ClaimOpResult &res);
    Retry doApply(Client &c, Op &op, ClaimOpResult &res);
    Retry doRemove(Client &c, Op &op, ClaimOpResult &res);
    Retry doPodApply(Client &c, Op &op, ClaimOpResult &res);   // holder_writer.cc
    Retry doPodRemove(Client &c, Op &op, ClaimOpResult &res);  // holder_writer.cc
    Retry doEvent(Client &c, Op &op, ClaimOpResult &res);
    Retry reserveClaims(Client &c, Op &op, ClaimOpResult &res, const std::string &uid);
    // The uid of in's holder pod for its status write to reserve it, ""
    // for none; waits up to kHolderWait while the pod's POST is in flight
    // on another thread. Records the decision for the pod's operation
    // (reservedBy_).
    std::string holderUid(const ClaimIntent &in, const std::string &claimKey);
    // The claim's own write reserves it for this pod uid: it decided so, or
    // it is queued or in flight and has not decided yet (it then reads the
    // uid remembered before).
    bool reservedByClaimWrite(const std::string &claimKey, const std::string &podUid) const;
    Retry retryable(const HttpResponse &r, Op &op, ClaimOpResult &res, const std::string &what);
    bool adopt(Client &c, const ClaimIntent &in, const std::string &key, std::string &rv, bool &done,
               bool &exists, ClaimOpResult &res);
    void finish(const Op &op, ClaimOpResult &res);
    // Deletes exactly one object by UID precondition (see remove()). gone:
    // nothing of it is left to delete, deleted: the UID it deleted ("" if
    // none), answer: the DELETE's answer then. Otherwise res says why, or
    // the answer is a retry.
    Retry deleteExactly(Client &c, Op &op, ClaimOpResult &res, const std::string &path, int grace,
                        bool &gone, std::string &deleted, std::string *answer = nullptr);
    void remember(const std::string &key, const std::string &uid);  // takes mu_
    std::string remembered(const std::string &key) const;          // takes mu_
    void forget(const std::string &key);                           // takes mu_
    // A claim's own write is about to go or in flight, not in backoff (a
    // holder pod waits for it briefly).
    bool claimPending(const std::string &key) const;
    void failQueued();

    std::shared_ptr<const Config> cfg_;
    WriterOptions opts_;
    Logger log_;
    std::shared_ptr<Stopper> stop_;
    std::shared_ptr<TokenSource> token_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    ClaimQueue queue_;
    uint64_t nextId_ = 1;
    WriterStats stats_;
    ResultFn onResult_;
    bool enabled_ = true;
    std::function<bool()> gate_;
    std::vector<std::thread> threads_;
    std::unordered_map<std::string, std::string> uids_;  // op key -> UID written (mu_)
    // claim key -> the holder pod uid its last status write reserved it
    // for, "" for none (mu_); and podCv_ wakes holderUid() on a pod's uid.
    std::unordered_map<std::string, std::string> reservedBy_;
    std::condition_variable podCv_;
    size_t idle_ = 0;  // writer threads waiting for work (mu_)
    static constexpr std::chrono::milliseconds kHolderWait{1000};  // a bound only: a POST takes 5-20 ms
    static constexpr size_t kMaxUids = 1 << 20;           // beyond it, removals GET first
};

}  // namespace k8s_cons_tres::k8s
