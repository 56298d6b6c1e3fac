// SPDX-License-Identifier: GPL-2.0-or-later
// One object the informers cannot decode costs only itself: it is logged
// and skipped (a slice) or its last good version kept (a claim), and the
// string pool's bound holds whatever the slices contain.
#include "k8s_client/inventory_handlers.h"
#include "k8s_client/json.h"
#include "k8s_client/string_pool.h"
#include "client_test_util.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace k8sdra;
using namespace k8sdra::k8s;

namespace {

std::string slice_with_strings(const std::string &name, int n, const std::string &salt) {
    std::string devs;
    for (int i = 0; i < n; ++i)
        devs += std::string(i ? "," : "") + R"({"name":"gpu-)" + std::to_string(i) +
                R"(","attributes":{"uuid":{"string":"GPU-)" + salt + "-" + std::to_string(i) + R"("}}})";
    return R"({"metadata":{"name":")" + name + R"(","resourceVersion":"1"},"spec":{"driver":"gpu.nvidia.com","nodeName":"n1","pool":{"name":"n1","generation":1,"resourceSliceCount":1},"devices":[)" +
           devs + "]}}";
}

struct Recorder {
    std::vector<std::string> errors;
    Logger logger() {
        return Logger([this](LogLevel l, const std::string &m) {
            if (l == LogLevel::Error) errors.push_back(m);
        }, "");
    }
};

}  // namespace

TEST_CASE("a full string pool skips the slice that does not fit, not the informer") {
    SnapshotStore store({"gpu.nvidia.com"});
    Recorder rec;
    SliceHandler h(store, "gpu.nvidia.com", rec.logger());
    StringPool &pool = StringPool::instance();
    rapidjson::Document ok, big;
    json::parse(ok, slice_with_strings("ok", 2, "known"));
    h.beginList();
    h.listItem(ok);  // interns its strings while there is room
    pool.set_limit(pool.size() + 10);
    json::parse(big, slice_with_strings("big", 100, "fresh"));
    h.listItem(big);
    h.endList();
    pool.set_limit(SIZE_MAX);
    const auto snap = store.current();
    CHECK(snap->slice("gpu.nvidia.com", "ok"));
    CHECK_FALSE(snap->slice("gpu.nvidia.com", "big"));
    REQUIRE(rec.errors.size() == 1);
    CHECK(rec.errors[0].find("string pool full") != std::string::npos);
    // a watch event over the bound drops that slice (its node becomes
    // incomplete, hence unavailable) instead of making the informer relist
    pool.set_limit(pool.size() + 10);
    rapidjson::Document big2;
    json::parse(big2, slice_with_strings("ok", 100, "fresher"));
    CHECK_NOTHROW(h.upsert(big2));
    pool.set_limit(SIZE_MAX);
    h.commit();
    CHECK_FALSE(store.current()->slice("gpu.nvidia.com", "ok"));
}

TEST_CASE("an undecodable claim event keeps the claim's last good version") {
    SnapshotStore store({});
    Recorder rec;
    ClaimHandler h(store, rec.logger());
    rapidjson::Document good, bad;
    json::parse(good, test::readFixture("claim_allocated.json"));
    h.beginList();
    h.listItem(good);
    h.endList();
    const auto before = store.current();
    REQUIRE(before->claims.size() == 1);
    // the same claim, now with more results than anything accepts
    std::string text = test::readFixture("claim_allocated.json");
    std::string many;
    for (int i = 0; i < 2000; ++i)
        many += std::string(i ? "," : "") + R"({"request":"r","driver":"dra.cpu","pool":"n1","device":"cpudev000"})";
    const auto at = text.find("\"results\"");
    REQUIRE(at != std::string::npos);
    const auto open = text.find('[', at), close = text.find(']', open);
    text = text.substr(0, open + 1) + many + text.substr(close);
    json::parse(bad, text);
    CHECK_NOTHROW(h.upsert(bad));
    h.commit();
    const auto after = store.current();
    REQUIRE(after->claims.size() == 1);
    bool same = false;
    after->forEachClaim([&](const ClaimHolding &c) {
        before->forEachClaim([&](const ClaimHolding &b) { same = c == b; });
    });
    CHECK(same);
    REQUIRE_FALSE(rec.errors.empty());
    CHECK(rec.errors.back().find("keeping the last good version") != std::string::npos);
}
