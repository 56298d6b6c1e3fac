// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/cow_map.h"
#include "k8s_sync/snapshot.h"

#include <catch2/catch.hpp>

#include <map>
#include <random>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;

TEST_CASE("copies are independent snapshots", "[cowmap]") {
    CowMap<int> m;
    for (int i = 0; i < 2000; ++i)
        m.set("k" + std::to_string(i), std::make_shared<const int>(i));
    CowMap<int> published = m;
    m.set("k5", std::make_shared<const int>(-5));
    m.erase("k6");
    m.set("new", std::make_shared<const int>(42));
    CHECK(*published.find("k5") == 5);
    CHECK(*published.find("k6") == 6);
    CHECK(published.find("new") == nullptr);
    CHECK(published.size() == 2000);
    CHECK(*m.find("k5") == -5);
    CHECK(m.find("k6") == nullptr);
    CHECK(*m.find("new") == 42);
    CHECK(m.size() == 2000);
    CHECK_FALSE(m.erase("absent"));
    size_t n = 0;
    long sum = 0;
    published.forEach([&](const std::string &, int v) { ++n, sum += v; });
    CHECK(n == 2000);
    CHECK(sum == 1999L * 2000 / 2);
}

TEST_CASE("unshared values are shared, not copied, between snapshots", "[cowmap]") {
    CowMap<int> m;
    m.set("a", std::make_shared<const int>(1));
    CowMap<int> copy = m;
    CHECK(copy.get("a").get() == m.get("a").get());
}

TEST_CASE("a diff against a held copy names exactly the keys that changed", "[cowmap]") {
    std::mt19937 rng(7);
    CowMap<int> m;
    std::map<std::string, int> model;
    for (int round = 0; round < 200; ++round) {
        const CowMap<int> held = m;
        const std::map<std::string, int> was = model;
        const int ops = round % 10 == 0 ? 300 : int(rng() % 5);
        for (int i = 0; i < ops; ++i) {
            const std::string key = "k" + std::to_string(rng() % 3000);
            if (rng() % 3 == 0) {
                m.erase(key);
                model.erase(key);
            } else {
                const int v = int(rng() % 1000);
                m.set(key, std::make_shared<const int>(v));
                model[key] = v;
            }
        }
        std::map<std::string, std::pair<int, int>> seen;  // -1: absent
        m.forEachChange(held, [&](const std::string &k, const int *before, const int *after) {
            CHECK(seen.emplace(k, std::pair{before ? *before : -1, after ? *after : -1}).second);
        });
        std::map<std::string, std::pair<int, int>> want;
        for (const auto &[k, v] : model)
            if (auto it = was.find(k); it == was.end() || it->second != v)
                want[k] = {it == was.end() ? -1 : it->second, v};
        for (const auto &[k, v] : was)
            if (!model.count(k))
                want[k] = {v, -1};
        // a key set again to its old value is a change too (a new object)
        for (const auto &[k, v] : seen)
            if (!want.count(k))
                CHECK(v.first == v.second);
        for (const auto &[k, v] : want) {
            INFO(k);
            REQUIRE(seen.count(k));
            CHECK(seen.at(k) == v);
        }
        CHECK(m.same(m));
        if (ops == 0)
            CHECK(m.same(held));
    }
}

TEST_CASE("the store publishes new snapshots and keeps old ones intact", "[snapshot]") {
    SnapshotStore store({"dra.cpu", "gpu.nvidia.com"});
    auto s0 = store.current();
    CHECK_FALSE(s0->synced());
    SliceMap slices;
    ResourceSlice rs;
    rs.name = "n1-cpu";
    rs.driver = "dra.cpu";
    rs.pool.name = "n1";
    rs.nodeName = "n1";
    for (const char *n : {"a", "b", "c"})
    {
        Device d;
        d.name = n;
        d.attributes = {{"dra.cpu/cpuID", int64_t(1)}};
        rs.devices.push_back(d);
    }
    slices.set(rs.name, std::make_shared<const CompactSlice>(compactSlice(rs)));
    store.publishSlices("dra.cpu", slices, true);
    store.publishSlices("gpu.nvidia.com", SliceMap(), true);
    CHECK_FALSE(store.current()->synced());
    ClaimMap claims;
    ClaimHolding h;
    h.ns = "default";
    h.name = "c";
    claims.set(claimKey(h.ns, h.name), std::make_shared<const ClaimHolding>(h));
    store.publishClaims(claims, true);
    auto s = store.current();
    CHECK(s->synced());
    CHECK(s->version == s0->version + 3);
    CHECK(s->sliceCount() == 1);
    CHECK(s->deviceCount() == 3);
    CHECK(s->slice("dra.cpu", "n1-cpu") != nullptr);
    CHECK(s->claim("default", "c") != nullptr);
    REQUIRE(s->slicesOfNode("n1").size() == 1);
    CHECK(s->slicesOfNode("n1")[0] == rs);
    CHECK(s0->sliceCount() == 0);
    slices.erase("n1-cpu");
    store.publishSlices("dra.cpu", slices, false);
    CHECK(store.current()->sliceCount() == 0);
    CHECK(store.current()->synced());  // synced once stays synced
    CHECK(s->sliceCount() == 1);
}
