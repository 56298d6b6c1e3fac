// SPDX-License-Identifier: GPL-2.0-or-later
// Freshness comes from data: a watch counts as open once the server has
// answered, and the view is fresh only while every informer receives data.
// A tiny plain-HTTP server stands in for the API server.
#include "k8s_sync/inventory_watcher.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

using namespace k8s_cons_tres::k8s;
using namespace std::chrono_literals;

namespace {

// Lists answer at once; watches as `watch` says. Connections stay open.
class FakeServer {
public:
    enum class Watch { Bookmark, Unanswered };
    enum class List { Answer, Unanswered };

    // Requests whose path contains holdPath (when set) are never answered.
    // serveTaintRules: discovery lists devicetaintrules in resource.k8s.io/v1beta2.
    FakeServer(List list, Watch watch, std::string holdPath = "", bool serveTaintRules = false)
        : list_(list), watch_(watch), hold_(std::move(holdPath)), rules_(serveTaintRules) {
        fd_ = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        REQUIRE(bind(fd_, reinterpret_cast<sockaddr *>(&a), len) == 0);
        REQUIRE(listen(fd_, 16) == 0);
        REQUIRE(getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &len) == 0);
        port_ = ntohs(a.sin_port);
        accept_ = std::thread([this] { acceptLoop(); });
    }
    ~FakeServer() {
        stop_ = true;
        accept_.join();
        for (auto &t : conns_)
            t.join();
        close(fd_);
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    // While set, every request is answered 500 (an API server in trouble).
    void failing(bool on) { failing_ = on; }

private:
    bool readable(int fd) {
        pollfd p{fd, POLLIN, 0};
        return poll(&p, 1, 50) > 0;
    }
    void acceptLoop() {
        while (!stop_)
            if (readable(fd_))
                if (int c = accept(fd_, nullptr, nullptr); c >= 0)
                    conns_.emplace_back([this, c] { serve(c); });
    }
    void send(int c, const std::string &s) { (void)!write(c, s.data(), s.size()); }
    void serve(int c) {
        std::string in;
        char buf[4096];
        bool hold = false;
        while (!stop_) {
            if (!readable(c))
                continue;
            ssize_t n = read(c, buf, sizeof buf);
            if (n <= 0)
                break;
            in.append(buf, size_t(n));
            size_t end;
            while (!hold && (end = in.find("\r\n\r\n")) != std::string::npos) {
                const std::string line = in.substr(0, in.find("\r\n"));
                const bool watch = line.find("watch=1") != std::string::npos;
                in.erase(0, end + 4);
                const bool discovery = line.find(" /apis/resource.k8s.io/v1beta2 ") != std::string::npos ||
                                       line.find(" /apis/resource.k8s.io/v1alpha3 ") != std::string::npos;
                const bool held = !hold_.empty() && line.find(hold_) != std::string::npos;
                if (discovery && !held) {
                    std::string body = rules_ && line.find("v1beta2") != std::string::npos
                        ? R"({"kind":"APIResourceList","groupVersion":"resource.k8s.io/v1beta2","resources":[)"
                          R"({"name":"devicetaintrules","namespaced":false,"kind":"DeviceTaintRule"}]})"
                        : R"({"kind":"Status","status":"Failure","code":404})";
                    send(c, std::string(body.find("APIResourceList") != std::string::npos
                                            ? "HTTP/1.1 200 OK" : "HTTP/1.1 404 Not Found") +
                                "\r\nContent-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body);
                } else if (failing_) {
                    std::string body = R"({"kind":"Status","status":"Failure","code":500})";
                    send(c, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
                } else if ((!hold_.empty() && line.find(hold_) != std::string::npos) ||
                    (watch ? watch_ == Watch::Unanswered : list_ == List::Unanswered)) {
                    hold = true;  // black hole: accepted, never answered
                } else if (!watch) {
                    std::string body = R"({"metadata":{"resourceVersion":"5"},"items":[]})";
                    send(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body);
                } else {
                    send(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n");
                    if (watch_ == Watch::Bookmark) {
                        std::string ev = R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"6"}}})"
                                         "\n";
                        char len[16];
                        std::snprintf(len, sizeof len, "%zx\r\n", ev.size());
                        send(c, len + ev + "\r\n");
                    }
                    hold = true;  // then silence
                }
            }
        }
        close(c);
    }

    List list_;
    Watch watch_;
    std::string hold_;
    bool rules_;
    int fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false}, failing_{false};
    std::thread accept_;
    std::vector<std::thread> conns_;
};

WatcherOptions options() {
    WatcherOptions o;
    o.drivers = {"dra.cpu"};
    o.client.connectTimeout = 500ms;
    o.client.requestTimeout = 500ms;
    o.client.streamIdleTimeout = 30s;  // longer than the test: silence alone decides
    o.backoff.initial = 100ms;
    o.backoff.cap = 200ms;
    o.deviceTaintRules = false;  // the tests below that want them say so
    return o;
}

std::shared_ptr<Config> config(const FakeServer &s) {
    auto c = std::make_shared<Config>();
    c->server = s.url();
    return c;
}

template <class Pred>
bool eventually(Pred p, std::chrono::milliseconds limit = 5000ms) {
    for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;
         std::this_thread::sleep_for(20ms))
        if (p())
            return true;
    return p();
}

}  // namespace

TEST_CASE("a black-holed API server never makes the view fresh", "[freshness]") {
    FakeServer s(FakeServer::List::Unanswered, FakeServer::Watch::Unanswered);
    InventoryWatcher w(config(s), options(), Logger());
    w.start();
    std::this_thread::sleep_for(1200ms);  // past the request timeout: lists failed
    CHECK_FALSE(w.watching());
    CHECK(w.dataAge() == std::chrono::steady_clock::duration::max());
    CHECK_FALSE(w.fresh(1h));
    CHECK(w.informers()[0]->stats().failures > 0);
    w.stop();
}

TEST_CASE("a watch counts as open only once the server answers it", "[freshness]") {
    FakeServer s(FakeServer::List::Answer, FakeServer::Watch::Unanswered);
    InventoryWatcher w(config(s), options(), Logger());
    w.start();
    REQUIRE(eventually([&] { return w.snapshot()->synced(); }));
    std::this_thread::sleep_for(300ms);  // the watch requests are sent, never answered
    CHECK_FALSE(w.watching());
    CHECK(w.fresh(10s));  // the list just now is data
    CHECK_FALSE(w.fresh(100ms, std::chrono::steady_clock::now() + 1s));
    w.stop();
}

TEST_CASE("an open but silent watch goes stale; bookmarks keep it fresh", "[freshness]") {
    FakeServer s(FakeServer::List::Answer, FakeServer::Watch::Bookmark);
    InventoryWatcher w(config(s), options(), Logger());
    w.start();
    REQUIRE(eventually([&] { return w.watching(); }));
    // every informer's bookmark, not just the second's: they arrive apart
    REQUIRE(eventually([&] {
        for (const auto &i : w.informers())
            if (i->stats().bookmarks == 0) return false;
        return true;
    }));
    for (const auto &i : w.informers())
        CHECK(i->stats().bookmarks == 1);
    CHECK(w.fresh(1s));
    std::this_thread::sleep_for(700ms);  // nothing more arrives on the open watches
    CHECK(w.watching());
    CHECK_FALSE(w.fresh(500ms));
    CHECK(w.fresh(5s));
    w.stop();
}

TEST_CASE("one informer without data makes the view stale", "[freshness]") {
    // Slices are listed and bookmarked; the claims informer gets no answer.
    FakeServer s(FakeServer::List::Answer, FakeServer::Watch::Bookmark, "resourceclaims");
    InventoryWatcher w(config(s), options(), Logger());
    w.start();
    REQUIRE(eventually([&] { return w.informers()[0]->stats().bookmarks > 0; }));
    CHECK(w.informers()[0]->watching());
    CHECK_FALSE(w.informers()[1]->watching());
    CHECK(w.informers()[0]->lastData().time_since_epoch().count() != 0);
    CHECK(w.informers()[1]->lastData().time_since_epoch().count() == 0);
    CHECK_FALSE(w.watching());
    CHECK_FALSE(w.fresh(1h));
    w.stop();
}

TEST_CASE("informers in a backoff retry once the API server is seen answering again", "[freshness]") {
    FakeServer s(FakeServer::List::Answer, FakeServer::Watch::Bookmark);
    s.failing(true);
    auto o = options();
    o.backoff.initial = 20s;  // far longer than the test
    o.backoff.cap = 30s;
    InventoryWatcher w(config(s), o, Logger());
    w.start();
    REQUIRE(eventually([&] {
        for (const auto &i : w.informers())
            if (i->stats().failures == 0) return false;
        return true;
    }));
    s.failing(false);
    std::this_thread::sleep_for(300ms);
    CHECK_FALSE(w.snapshot()->synced());  // each waits out its backoff...
    w.answered();                          // ...until another request is answered (the Lease)
    CHECK(eventually([&] { return w.snapshot()->synced() && w.watching(); }, 3000ms));
    w.stop();
}

TEST_CASE("an informer retries early at most once a second, however often others are answered",
          "[freshness]") {
    FakeServer s(FakeServer::List::Answer, FakeServer::Watch::Bookmark);
    s.failing(true);
    auto o = options();
    o.backoff.initial = 1500ms;
    o.backoff.cap = 1500ms;
    o.backoff.jitter = 0;
    InventoryWatcher w(config(s), o, Logger());
    w.start();
    REQUIRE(eventually([&] { return w.informers()[0]->stats().failures > 0; }));
    // The server answers others all the time but never this informer: it
    // retries once a second (earlier than its backoff), never at the
    // answers' pace.
    const auto end = std::chrono::steady_clock::now() + 2500ms;
    while (std::chrono::steady_clock::now() < end) {
        w.answered();
        std::this_thread::sleep_for(10ms);
    }
    const auto failures = w.informers()[0]->stats().failures.load();
    CHECK(failures >= 3);  // at 0 s, at once, 1 s, 2 s
    CHECK(failures <= 5);
    w.stop();
}

// A watcher reading DeviceTaintRules too, started: informers()[2] reads them.
struct RulesWatcher {
    InventoryWatcher w;
    explicit RulesWatcher(const FakeServer &s)
        : w(config(s), [] { auto o = options(); o.deviceTaintRules = true; return o; }(), Logger()) {
        w.start();
        REQUIRE(w.informers().size() == 3);
    }
    const Informer &rules() const { return *w.informers()[2]; }
};

TEST_CASE("DeviceTaintRules are read where the API server serves them, and waited for", "[freshness]") {
    FakeServer s(FakeServer::List::Answer, FakeServer::Watch::Bookmark, "", true);
    RulesWatcher rw(s);
    CHECK(rw.rules().name() == "devicetaintrules");
    REQUIRE(eventually([&] { return rw.w.snapshot()->synced() && rw.w.watching(); }));
    CHECK(rw.rules().served());
    CHECK(rw.rules().watching());  // part of the view's freshness: its watch is open
    CHECK(rw.rules().stats().lists >= 1);
}

TEST_CASE("where DeviceTaintRules are not served, none apply and the view does not wait for them",
          "[freshness]") {
    FakeServer s(FakeServer::List::Answer, FakeServer::Watch::Bookmark, "", false);
    RulesWatcher rw(s);
    REQUIRE(eventually([&] { return rw.w.snapshot()->synced() && rw.w.watching(); }));
    CHECK_FALSE(rw.rules().served());
    CHECK_FALSE(rw.rules().watching());
    CHECK(rw.w.snapshot()->taintRules.size() == 0);
    CHECK(rw.w.fresh(5s));  // the slices' and claims' data alone
}

TEST_CASE("until the rules are known, the view is not synced", "[freshness]") {
    // Discovery of resource.k8s.io/v1beta2 is never answered.
    FakeServer s(FakeServer::List::Answer, FakeServer::Watch::Bookmark, "resource.k8s.io/v1beta2 ", true);
    RulesWatcher rw(s);
    REQUIRE(eventually([&] { return rw.w.informers()[0]->stats().lists > 0 && rw.w.informers()[1]->stats().lists > 0; }));
    std::this_thread::sleep_for(300ms);
    CHECK_FALSE(rw.w.snapshot()->synced());
}
