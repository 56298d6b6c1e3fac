// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/informer.h"

#include "k8s_client/api_status.h"
#include "k8s_client/json_stream.h"
#include "k8s_client/list_page.h"
#include "k8s_client/thread_name.h"

#include <algorithm>
#include <future>
#include <system_error>

namespace k8s_cons_tres::k8s {

namespace {
constexpr std::chrono::seconds kEarlyRetryGap{1};
}  // namespace

Informer::Informer(std::shared_ptr<const Config> cfg, std::shared_ptr<TokenSource> token,
                   ClientOptions copts, InformerOptions opts, std::shared_ptr<Stopper> stop,
                   InformerHandler &handler, Logger log)
    : cfg_(std::move(cfg)), token_(std::move(token)), copts_(copts), opts_(std::move(opts)),
      stop_(std::move(stop)), handler_(handler), log_(log.child(opts_.name + ": ")) {}

Informer::~Informer() {
    if (thread_.joinable()) {
        stop_->stop();
        thread_.join();
    }
}

void Informer::start() { thread_ = std::thread([this] { run(); }); }

void Informer::join() {
    if (thread_.joinable())
        thread_.join();
}

std::string Informer::lastError() const {
    std::lock_guard<std::mutex> lk(errMu_);
    return lastError_;
}

void Informer::fail(const std::string &msg, bool loud) {
    ++stats_.failures;
    {
        std::lock_guard<std::mutex> lk(errMu_);
        lastError_ = msg;
    }
    if (loud)
        log_.error(msg);
    else
        log_.verbose(msg);
}

void Informer::dataArrived() {
    lastData_ = std::chrono::steady_clock::now().time_since_epoch().count();
}

std::string Informer::query(const std::string &extra) const {
    std::string q = opts_.path + "?" + extra;
    if (!opts_.fieldSelector.empty())
        q += "&fieldSelector=" + urlEncode(opts_.fieldSelector);
    if (!opts_.labelSelector.empty())
        q += "&labelSelector=" + urlEncode(opts_.labelSelector);
    return q;
}

void Informer::run() {
    name_this_thread("k8s_watch");
    Client client(cfg_, token_, copts_, stop_, log_);
    Backoff backoff(opts_.backoff);
    std::string rv;
    // After a failure, wait out the backoff; but once the API server has
    // answered another request since this attempt began (another informer,
    // the Lease), it is back: retry then, so that a short outage does not
    // leave the view stale for a whole backoff (up to 30 s). A watch the
    // server dropped after answering it is so resumed at once. Bounded: at
    // most one retry a second comes early, however often the server
    // answers (a balancer that drops every watch as soon as it is open).
    auto lastEarly = Backoff::Clock::time_point{};
    auto pause = [&](uint64_t seen) {
        const auto now = Backoff::Clock::now();
        const auto until = now + backoff.next(now);
        const auto earliest = std::min(until, lastEarly + kEarlyRetryGap);
        if (earliest > now && stop_->waitFor(earliest - now))
            return;  // stopped
        const auto rest = until - Backoff::Clock::now();
        if (rest > rest.zero() && stop_->waitFor(rest, seen) == Stopper::Woke::Answered)
            lastEarly = Backoff::Clock::now();
    };
    const bool discovering = !opts_.discover.empty();
    bool found = false;
    while (!stop_->stopped()) {
        const uint64_t seen = stop_->answers();
        try {
            if (discovering && !found) {
                const std::optional<std::string> path = discoverPath(client);
                if (!path) {
                    pause(seen);
                    continue;
                }
                if (path->empty()) {
                    if (served_.exchange(false) || stats_.lists == 0)
                        log_.info("not served by the API server: none apply; looked for again every " +
                                  std::to_string(opts_.rediscover.count()) + " s");
                    handler_.beginList();
                    handler_.endList();
                    ++stats_.lists;
                    stop_->waitFor(opts_.rediscover);
                    continue;
                }
                opts_.path = *path;
                found = true;
                served_ = true;
                log_.info("served at " + *path);
                rv.clear();
            }
            if (rv.empty() && !list(client, rv)) {
                if (discovering && lastStatus_ == 404)
                    found = false;  // gone (an upgrade removed that version): look again
                pause(seen);
                continue;
            }
            switch (watch(client, rv)) {
            case WatchEnd::Closed:
                break;  // normal end (server timeout): resume at once
            case WatchEnd::Expired:
                ++stats_.expired;
                log_.info("resourceVersion " + rv + " expired (410): listing again");
                rv.clear();
                break;
            case WatchEnd::Failed:
                pause(seen);
                break;
            }
        } catch (const std::exception &e) {
            // Bad JSON from the server: start again from a fresh list.
            fail(std::string("unexpected answer, listing again: ") + e.what(), true);
            rv.clear();
            pause(seen);
        }
    }
}

std::optional<std::string> Informer::discoverPath(Client &c) {
    for (const std::string &path : opts_.discover) {
        const size_t slash = path.rfind('/');
        const std::string groupVersion = path.substr(0, slash), resource = path.substr(slash + 1);
        HttpResponse r = c.get(groupVersion);
        if (r.status == 404)
            continue;  // that version of the group is not served
        if (!r.ok()) {
            std::string msg = c.describe(r, "GET " + groupVersion);
            if (r.status)
                msg += " (" + parseApiStatus(r.status, r.body).summary() + ")";
            fail(msg, r.status == 401 || r.status == 403 || stats_.lists == 0);
            return std::nullopt;
        }
        stop_->answered();
        rapidjson::Document doc;
        json::parseInsitu(doc, r.body);
        if (const rapidjson::Value *list = json::member(doc, "resources"); list && list->IsArray())
            for (const rapidjson::Value &item : list->GetArray())
                if (json::getString(item, "name") == resource)
                    return path;
    }
    return std::string();
}

bool Informer::list(Client &c, std::string &rv) {
    handler_.beginList();
    std::string cont;
    std::string listRv;
    int restarts = 0;
    auto page = [&](const std::string &token) {
        std::string extra = "limit=" + std::to_string(opts_.pageSize);
        if (!token.empty())
            extra += "&continue=" + urlEncode(token);
        return query(extra);
    };
    // The next page, asked for while this one is decoded: the server makes
    // it meanwhile. Requests stay one at a time on the one client; the
    // future's destructor waits for it on every way out.
    std::future<HttpResponse> ahead;
    std::string aheadToken;
    for (bool more = true; more && !stop_->stopped();) {
        HttpResponse r;
        if (ahead.valid() && aheadToken == cont)
            r = ahead.get();
        else {
            if (ahead.valid())
                ahead.get();  // asked for another page than this one's: dropped
            r = c.get(page(cont));
        }
        if (r.aborted)
            return false;
        if (r.status == 410 && !cont.empty() && restarts++ < 3) {
            // The continue token outlived the server's history: start over.
            log_.info("list continue token expired (410): listing from the start");
            cont.clear();
            handler_.beginList();
            continue;
        }
        lastStatus_ = r.status;
        if (!r.ok()) {
            bool loud = r.status == 401 || r.status == 403 || r.error.rfind("TLS:", 0) == 0;
            std::string msg = c.describe(r, "LIST " + opts_.path);
            if (r.status)
                msg += " (" + parseApiStatus(r.status, r.body).summary() + ")";
            fail(msg, loud || stats_.lists == 0);
            return false;
        }
        ++stats_.pages;
        if (auto next = peekContinue(r.body); next && !next->empty()) {
            aheadToken = *next;
            try {
                ahead = std::async(std::launch::async, [&c, q = page(*next)] { return c.get(q); });
            } catch (const std::system_error &) {
                // no thread to spare: this page first, then the next one
            }
        }
        rapidjson::Document doc;
        json::parseInsitu(doc, r.body);
        const rapidjson::Value &meta = json::requireObject(doc, "metadata", "list");
        listRv = json::getString(meta, "resourceVersion");
        cont = json::getString(meta, "continue");
        const rapidjson::Value *items = json::member(doc, "items");
        if (items && items->IsArray())
            for (const auto &item : items->GetArray())
                handler_.listItem(item);
        more = !cont.empty();
    }
    if (stop_->stopped())
        return false;
    ++stats_.lists;
    stop_->answered();
    handler_.endList();
    dataArrived();
    rv = listRv;
    log_.verbose("listed at resourceVersion " + rv);
    return true;
}

WatchEventOutcome applyWatchEvent(InformerHandler &h, std::string &text) {
    WatchEventOutcome out;
    // Events are parsed into a per-thread buffer that is reused, so the
    // common event costs no allocation for its document.
    constexpr size_t kArena = 256 << 10;
    thread_local std::unique_ptr<char[]> arena(new char[kArena]);
    rapidjson::MemoryPoolAllocator<> pool(arena.get(), kArena);
    rapidjson::Document ev(&pool);
    json::parseInsitu(ev, text);
    out.type = json::getString(ev, "type");
    const rapidjson::Value *obj = json::member(ev, "object");
    if (!obj || !obj->IsObject())
        throw json::Error("watch event without object");
    if (out.type == "ERROR") {
        long code = long(json::getInt(*obj, "code"));
        std::string reason = json::getString(*obj, "reason");
        out.expired = code == 410 || reason == "Expired" || reason == "Gone";
        if (!out.expired)
            out.error = "watch ERROR event: " + json::getString(*obj, "message");
        return out;
    }
    if (const rapidjson::Value *meta = json::member(*obj, "metadata"); meta && meta->IsObject())
        out.resourceVersion = json::getString(*meta, "resourceVersion");
    if (out.type == "BOOKMARK")
        return out;
    try {
        if (out.type == "ADDED" || out.type == "MODIFIED")
            h.upsert(*obj);
        else if (out.type == "DELETED")
            h.remove(*obj);
        else
            return out;
        out.changed = true;
    } catch (const json::Error &e) {
        out.error = "skipping undecodable " + out.type + " event: " + e.what();
    }
    return out;
}

// Applies one watch event; returns false to end the stream.
bool Informer::handleEvent(std::string &text, std::string &rv, bool &expired, bool &changed) {
    WatchEventOutcome o = applyWatchEvent(handler_, text);
    if (o.type == "ERROR") {
        expired = o.expired;
        if (!o.expired)
            fail(o.error, true);
        return false;
    }
    if (o.type == "BOOKMARK")
        ++stats_.bookmarks;
    else
        ++stats_.events;
    dataArrived();
    if (!o.error.empty())
        log_.error(o.error);
    changed = changed || o.changed;
    if (!o.resourceVersion.empty())
        rv = o.resourceVersion;
    return true;
}

Informer::WatchEnd Informer::watch(Client &c, std::string &rv) {
    double stretch = 1.0 + defaultRandom();
    auto timeout = long(double(opts_.watchTimeout.count()) * stretch);
    std::string path = query("watch=1&allowWatchBookmarks=true&resourceVersion=" +
                             urlEncode(rv) + "&timeoutSeconds=" + std::to_string(timeout));
    ++stats_.watches;
    JsonStreamSplitter splitter;
    bool expired = false;
    std::string text;
    struct Clear {
        std::atomic<bool> &flag;
        ~Clear() { flag = false; }
    } clear{watching_};
    auto onChunk = [&](const char *data, size_t len) {
        splitter.feed(data, len);
        bool changed = false, more = true;
        while (more && splitter.next(text))
            more = handleEvent(text, rv, expired, changed);
        if (changed)
            handler_.commit();
        return more;
    };
    // Open once the server has answered: a black-holed request never is.
    HttpResponse r = c.stream(path, onChunk, [this](long status) {
        watching_ = status >= 200 && status < 300;
        if (watching_)
            stop_->answered();
    });
    if (expired || r.status == 410)
        return WatchEnd::Expired;
    if (r.aborted && stop_->stopped())
        return WatchEnd::Closed;
    if (!r.ok()) {
        std::string msg = c.describe(r, "WATCH " + opts_.path);
        if (r.status)
            msg += " (" + parseApiStatus(r.status, r.body).summary() + ")";
        fail(msg, r.status == 401 || r.status == 403);
        return WatchEnd::Failed;
    }
    if (r.timedOut) {  // no byte for streamIdleTimeout: a dead or black-holed peer
        fail("watch silent for " + std::to_string(copts_.streamIdleTimeout.count()) +
                 " s; reconnecting from " + rv, false);
        return WatchEnd::Closed;
    }
    if (!r.error.empty()) {
        if (r.aborted)  // ended by an ERROR event other than 410
            return WatchEnd::Failed;
        fail("watch stream dropped: " + r.error + "; resuming from " + rv, false);
        return WatchEnd::Failed;
    }
    return WatchEnd::Closed;
}

}  // namespace k8s_cons_tres::k8s
