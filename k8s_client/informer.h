// SPDX-License-Identifier: GPL-2.0-or-later
// List+watch of one resource, as client-go's reflector does it: a paged LIST
// (limit/continue), then a WATCH from the list's resourceVersion with
// bookmarks; after a dropped stream it resumes from the last resourceVersion
// seen, on 410 Expired it lists again, and failures back off 0.8 s -> 30 s
// with jitter. Each list page and each watch event is parsed on its own, so
// no document for a whole list is ever built.
#pragma once

#include "k8s_client/backoff.h"
#include "k8s_client/http_client.h"
#include "k8s_client/json.h"

#include <atomic>
#include <chrono>
#include <vector>
#include <optional>
#include <memory>
#include <string>
#include <thread>

namespace k8s_cons_tres::k8s {

// Receives decoded objects; called on the informer's thread only.
class InformerHandler {
public:
    virtual ~InformerHandler() = default;
    virtual void beginList() = 0;
    virtual void listItem(const rapidjson::Value &obj) = 0;
    virtual void endList() = 0;                       // list complete: publish
    virtual void upsert(const rapidjson::Value &obj) = 0;
    virtual void remove(const rapidjson::Value &obj) = 0;
    virtual void commit() = 0;                        // end of a batch of events
};

// What one watch event did.
struct WatchEventOutcome {
    std::string type;             // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
    std::string resourceVersion;  // "" when the event carries none
    bool changed = false;         // the handler's state changed
    bool expired = false;         // ERROR 410 Expired: list again
    std::string error;            // other ERROR events, or an undecodable object
};

// Parses one watch event in place (text is modified) and applies it to h.
// Throws json::Error when the event itself is malformed.
WatchEventOutcome applyWatchEvent(InformerHandler &h, std::string &text);

struct InformerOptions {
    std::string name;            // for logs, e.g. "resourceslices[dra.cpu]"
    std::string path;            // collection path, e.g. /apis/resource.k8s.io/v1/resourceslices
    std::string fieldSelector;   // e.g. "spec.driver=dra.cpu"
    std::string labelSelector;
    int pageSize = 500;
    std::chrono::seconds watchTimeout{300};  // asked of the server; randomised up to 2x
    Backoff::Params backoff;
    // A kind the API server may not serve (an alpha or beta API): its
    // collection paths, preferred first, looked up in discovery before the
    // first list. Where none is served the handler gets an empty list, the
    // informer counts as not served() and looks again every rediscover.
    std::vector<std::string> discover;
    std::chrono::seconds rediscover{300};
};

struct InformerStats {
    std::atomic<uint64_t> lists{0}, pages{0}, watches{0}, events{0}, bookmarks{0},
        expired{0}, failures{0};
};

class Informer {
public:
    Informer(std::shared_ptr<const Config> cfg, std::shared_ptr<TokenSource> token,
             ClientOptions copts, InformerOptions opts, std::shared_ptr<Stopper> stop,
             InformerHandler &handler, Logger log);
    ~Informer();
    Informer(const Informer &) = delete;
    Informer &operator=(const Informer &) = delete;

    void start();
    void join();  // after the shared Stopper was stopped
    const InformerStats &stats() const { return stats_; }
    const std::string &name() const { return opts_.name; }
    // True from the watch's HTTP 200 until it ends (not merely requested).
    bool watching() const { return watching_.load(); }
    // False while discovery found none of opts.discover served (nothing to
    // watch, no data to wait for); true for every other informer.
    bool served() const { return served_.load(); }
    // When data last arrived: a completed list, a watch event or a bookmark.
    // An open but silent connection does not count. Epoch (0) = never.
    std::chrono::steady_clock::time_point lastData() const {
        return std::chrono::steady_clock::time_point(
            std::chrono::steady_clock::duration(lastData_.load()));
    }
    std::string lastError() const;

private:
    enum class WatchEnd { Closed, Expired, Failed };
    void run();
    bool list(Client &c, std::string &rv);
    std::optional<std::string> discoverPath(Client &c);
    WatchEnd watch(Client &c, std::string &rv);
    bool handleEvent(std::string &text, std::string &rv, bool &expired, bool &changed);
    std::string query(const std::string &extra) const;
    void fail(const std::string &msg, bool loud);
    void dataArrived();

    std::shared_ptr<const Config> cfg_;
    std::shared_ptr<TokenSource> token_;
    ClientOptions copts_;
    InformerOptions opts_;
    std::shared_ptr<Stopper> stop_;
    InformerHandler &handler_;
    Logger log_;
    InformerStats stats_;
    mutable std::mutex errMu_;
    std::string lastError_;
    std::atomic<bool> watching_{false};
    std::atomic<bool> served_{true};
    long lastStatus_ = 0;  // of the last list request (the informer's thread only)
    std::atomic<std::chrono::steady_clock::rep> lastData_{0};
    std::thread thread_;
};

}  // namespace k8s_cons_tres::k8s
