// SPDX-License-Identifier: GPL-2.0-or-later
// One object the informers cannot decode costs only itself: it is logged
// and skipped (a slice) or kept as what can be read of it (a claim), and the
// string pool's bound holds whatever the slices contain.
#include "k8s_sync/claim_json.h"
#include "k8s_sync/inventory_handlers.h"
#include "k8s_client/json.h"
#include "k8s_client/string_pool.h"
#include "client_test_util.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;

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

namespace {
// claim_allocated.json with more results than anything accepts.
std::string oversized_claim() {
    std::string text = test::readFixture("claim_allocated.json");
    std::string many;
    for (int i = 0; i < 2000; ++i)
        many += std::string(i ? "," : "") + R"({"request":"r","driver":"dra.cpu","pool":"node1","device":"cpudev000"})";
    const auto at = text.find("\"results\"");
    REQUIRE(at != std::string::npos);
    const auto open = text.find('[', at), close = text.find(']', open);
    return text.substr(0, open + 1) + many + text.substr(close);
}

const ClaimHolding *only_claim(const Snapshot &snap) {
    const ClaimHolding *found = nullptr;
    snap.forEachClaim([&](const ClaimHolding &c) { found = &c; });
    return found;
}
}  // namespace

TEST_CASE("an undecodable claim event stands as what can be read of it, its node kept out") {
    SnapshotStore store({});
    Recorder rec;
    ClaimHandler h(store, rec.logger());
    rapidjson::Document good, bad;
    json::parse(good, test::readFixture("claim_allocated.json"));
    h.beginList();
    h.listItem(good);
    h.endList();
    REQUIRE(store.current()->claims.size() == 1);
    json::parse(bad, oversized_claim());
    CHECK_NOTHROW(h.upsert(bad));
    h.commit();
    const auto after = store.current();
    REQUIRE(after->claims.size() == 1);
    const ClaimHolding *c = only_claim(*after);
    REQUIRE(c);
    CHECK(c->name == "slurm-1234-node1");
    CHECK(c->allocated);
    CHECK(c->undecodable.find("allocation results") != std::string::npos);
    CHECK(c->nodeName == "node1");
    CHECK(c->labels.empty());  // never the plugin's own, whatever it carried
    REQUIRE_FALSE(rec.errors.empty());
    CHECK(rec.errors.back().find("keeps the nodes it names out") != std::string::npos);
}

TEST_CASE("an undecodable claim in a list is kept, not skipped: skipping would free its devices") {
    SnapshotStore store({});
    Recorder rec;
    ClaimHandler h(store, rec.logger());
    rapidjson::Document bad;
    json::parse(bad, oversized_claim());
    h.beginList();
    h.listItem(bad);
    h.endList();
    const auto snap = store.current();
    REQUIRE(snap->claims.size() == 1);
    const ClaimHolding *c = only_claim(*snap);
    REQUIRE(c);
    CHECK_FALSE(c->undecodable.empty());
    CHECK(c->allocated);
    REQUIRE(c->results.size() == 1);  // its pools, each once
    CHECK(c->results[0].pool == "node1");
}

TEST_CASE("what can be read of a claim that cannot be decoded") {
    rapidjson::Document d;
    // an unallocated claim holds nothing, readable or not
    json::parse(d, R"({"metadata":{"name":"x","namespace":"t"},"spec":7})");
    CHECK_FALSE(salvageClaimHolding(d, "why").allocated);
    // a result whose device is not a string, another whose pool is not either
    json::parse(d, R"({"metadata":{"name":"x","namespace":"t"},"status":{"allocation":{"devices":{"results":[
        {"driver":"gpu.nvidia.com","pool":"n7","device":5},{"pool":9}]}}}})");
    ClaimHolding h = salvageClaimHolding(d, "why");
    CHECK(h.allocated);
    CHECK(h.undecodable == "why");
    REQUIRE(h.results.size() == 1);
    CHECK(h.results[0].pool == "n7");
    CHECK_THROWS(decodeClaimHolding(d));
    // not even an object
    json::parse(d, "[1]");
    CHECK_NOTHROW(salvageClaimHolding(d, ""));
}
