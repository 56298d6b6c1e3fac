// SPDX-License-Identifier: GPL-2.0-or-later
// The core's lifecycle through its C ABI, as the plugin drives it.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <mutex>
#include <string>
#include <vector>

#include "core/engine.h"
#include "core/feed.h"
#include "core/k8s_cons_tres.h"

namespace {
std::mutex log_mu;
std::vector<std::string> log_lines;
void capture(int level, const char *msg) {
    std::lock_guard lock(log_mu);
    log_lines.push_back(std::to_string(level) + ":" + msg);
}
bool logged(const std::string &needle) {
    std::lock_guard lock(log_mu);
    for (const auto &l : log_lines)
        if (l.find(needle) != std::string::npos) return true;
    return false;
}
// k8s_cons_tres_start is the start-up's (k8s_sync/start.cc): it hands start_core
// the EngineFeed. These tests hand it theirs, or none.
int start(const k8s_cons_tres_start_args *args, char *err, size_t errlen, const k8s_cons_tres::FeedFactory &feed = {}) {
    return k8s_cons_tres::start_core(args, feed, err, errlen);
}
}  // namespace

TEST_CASE("core starts once, refuses a second start, and stops cleanly") {
    k8s_cons_tres_start_args args{};
    args.log = capture;
    char err[128];
    REQUIRE(k8s_cons_tres_running() == 0);
    REQUIRE(start(&args, err, sizeof err) == K8S_CONS_TRES_OK);
    CHECK(std::strlen(err) == 0);
    CHECK(k8s_cons_tres_running() == 1);
    CHECK(logged(std::string("1:core ") + k8s_cons_tres_version() + " started; Kubernetes integration off"));

    CHECK(start(&args, err, sizeof err) == K8S_CONS_TRES_ESTATE);
    CHECK(std::string(err) == "core already started");

    k8s_cons_tres_stop();
    CHECK(k8s_cons_tres_running() == 0);
    k8s_cons_tres_stop();  // twice is harmless
    CHECK(k8s_cons_tres_running() == 0);

    // and it can start again after a stop (slurmctld reconfigure re-inits)
    REQUIRE(start(&args, err, sizeof err) == K8S_CONS_TRES_OK);
    k8s_cons_tres_stop();
}

TEST_CASE("core start tolerates a NULL argument block and no logger") {
    REQUIRE(start(nullptr, nullptr, 0) == K8S_CONS_TRES_OK);
    CHECK(k8s_cons_tres_running() == 1);
    k8s_cons_tres_stop();
}

namespace {
std::string write_temp(const std::string &text) {
    char path[] = "/tmp/k8slifeXXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    close(fd);
    return path;
}
}  // namespace

TEST_CASE("a bad configuration file stops the start with the file's own error") {
    const std::string path = write_temp("InCluster=yes\nColour=blue\n");
    k8s_cons_tres_start_args args{path.c_str(), capture, "testcluster", nullptr, 0};
    char err[256];
    CHECK(start(&args, err, sizeof err) == K8S_CONS_TRES_EINVAL);
    CHECK(std::string(err).find(path + ":2: unknown key 'Colour'") == 0);
    CHECK(k8s_cons_tres_running() == 0);
    std::remove(path.c_str());
}


namespace {
int g_feeds_alive = 0;
struct FakeFeed : k8s_cons_tres::Feed {
    FakeFeed() { ++g_feeds_alive; }
    ~FakeFeed() override { --g_feeds_alive; }
};
}  // namespace

TEST_CASE("a good configuration starts the feed it is handed; stop ends it") {
    std::shared_ptr<k8s_cons_tres::Engine> seen;
    const k8s_cons_tres::FeedFactory feed = [&](std::shared_ptr<k8s_cons_tres::Engine> engine, k8s_cons_tres::FeedLog,
                                         std::string *) -> std::unique_ptr<k8s_cons_tres::Feed> {
        seen = engine;
        return std::make_unique<FakeFeed>();
    };
    const std::string path = write_temp("InCluster=yes\nClaimNamespace=hpc\n");
    k8s_cons_tres_start_args args{path.c_str(), capture, "testcluster", nullptr, 0};
    char err[256];
    REQUIRE(start(&args, err, sizeof err, feed) == K8S_CONS_TRES_OK);
    CHECK(logged("started; configuration " + path));
    CHECK(g_feeds_alive == 1);
    REQUIRE(seen);
    CHECK(seen == k8s_cons_tres::running_engine());
    CHECK(seen->config()->claim_namespace == "hpc");
    CHECK(seen->config()->cluster_label == "testcluster");  // from Slurm when not set
    k8s_cons_tres_stop();
    CHECK(g_feeds_alive == 0);
    CHECK(k8s_cons_tres::running_engine() == nullptr);
    std::remove(path.c_str());
}

TEST_CASE("a feed that cannot start fails the start with its reason") {
    const k8s_cons_tres::FeedFactory feed = [](std::shared_ptr<k8s_cons_tres::Engine>, k8s_cons_tres::FeedLog,
                                        std::string *error) -> std::unique_ptr<k8s_cons_tres::Feed> {
        *error = "kubeconfig /x: no such file";
        return nullptr;
    };
    const std::string path = write_temp("Kubeconfig=/x\n");
    k8s_cons_tres_start_args args{path.c_str(), capture, "testcluster", nullptr, 0};
    char err[256];
    CHECK(start(&args, err, sizeof err, feed) == K8S_CONS_TRES_EINVAL);
    CHECK(std::string(err) == "kubeconfig /x: no such file");
    CHECK(k8s_cons_tres_running() == 0);
    CHECK(start(&args, err, sizeof err) == K8S_CONS_TRES_EINVAL);
    CHECK(std::string(err) == "this build has no Kubernetes client to feed the core");
    std::remove(path.c_str());
}

TEST_CASE("a missing configuration file means integration off") {
    char err[256];
    k8s_cons_tres_start_args missing{"/nonexistent/k8s_cons_tres.conf", capture, nullptr, nullptr, 0};
    REQUIRE(start(&missing, err, sizeof err) == K8S_CONS_TRES_OK);
    CHECK(logged("no /nonexistent/k8s_cons_tres.conf: Kubernetes integration is OFF"));
    REQUIRE(k8s_cons_tres::running_engine());
    CHECK_FALSE(k8s_cons_tres::running_engine()->integration_on());
    k8s_cons_tres_stop();
}
