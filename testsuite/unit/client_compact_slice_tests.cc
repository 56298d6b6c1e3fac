// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/compact_slice.h"
#include "k8s_sync/slice_json.h"
#include "testsuite/unit/client_test_util.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;
using k8s_cons_tres::test::readFixture;

namespace {
CompactSlice parseCompact(const std::string &text) {
    rapidjson::Document d;
    json::parse(d, text);
    return decodeCompactSlice(d);
}
}  // namespace

TEST_CASE("the one decoder keeps every device, in order, and a slice survives compacting", "[compact]") {
    for (const char *f : {"dra_cpu_individual.json", "dra_cpu_grouped.json", "nvidia_gpu.json"}) {
        INFO(f);
        std::string text = readFixture(f);
        rapidjson::Document doc;
        json::parse(doc, text);
        const rapidjson::Value &devs = doc["spec"]["devices"];
        ResourceSlice plain = parseCompact(text).expand();
        REQUIRE(plain.devices.size() == devs.Size());
        for (rapidjson::SizeType i = 0; i < devs.Size(); ++i) {
            CHECK(plain.devices[i].name == devs[i]["name"].GetString());
            const rapidjson::Value *attrs = json::member(devs[i], "attributes");
            CHECK(plain.devices[i].attributes.size() == (attrs ? attrs->MemberCount() : 0));
        }
        CHECK(compactSlice(plain).expand() == plain);
        // and through JSON again (slice_json's encoder)
        CHECK(parseResourceSlice(encodeResourceSlice(plain)) == plain);
    }
}

TEST_CASE("compact attribute lookup", "[compact]") {
    CompactSlice c = parseCompact(readFixture("nvidia_gpu.json"));
    CHECK(std::get<std::string>(*c.attribute(0, "gpu.nvidia.com/uuid")) ==
          "GPU-2fa81118-5a5f-aa66-7660-471eed407181");
    CHECK(std::get<int64_t>(*c.attribute(0, "resource.kubernetes.io/numaNode")) == 0);
    CHECK_FALSE(c.attribute(0, "gpu.nvidia.com/index").has_value());
    CompactSlice cpu = parseCompact(readFixture("dra_cpu_individual.json"));
    CHECK(std::get<int64_t>(*cpu.attribute(1, "dra.cpu/cpuID")) == 32);
    CHECK(cpu.attrs.size() == 18);
}

TEST_CASE("compact decoding rejects what the plain decoder rejects", "[compact]") {
    for (const char *bad :
         {"[]", R"({"metadata":{"name":"x"}})", R"({"metadata":{},"spec":{"pool":{}}})",
          R"({"metadata":{},"spec":{"driver":"d","pool":{},"devices":[{"name":"a","attributes":{"x":{"float":1.5}}}]}})",
          R"({"metadata":{},"spec":{"driver":"d","pool":{},"devices":[{"attributes":{}}]}})",
          R"({"metadata":{},"spec":{"driver":"d","pool":{},"devices":[{"name":"a","attributes":{"x":{}}}]}})"}) {
        INFO(bad);
        CHECK_THROWS_AS(parseCompact(bad), json::Error);
    }
}

TEST_CASE("interned strings are stored once", "[compact]") {
    StringPool &pool = StringPool::instance();
    uint32_t a = pool.intern("some-unique-value-for-test");
    uint32_t b = pool.intern(std::string("some-unique-") + "value-for-test");
    CHECK(a == b);
    CHECK(pool.get(a) == "some-unique-value-for-test");
    for (int i = 0; i < 10000; ++i)
        pool.intern("bulk-" + std::to_string(i));
    CHECK(pool.get(a) == "some-unique-value-for-test");  // stable across growth
    CHECK(pool.get(pool.intern("bulk-4097")) == "bulk-4097");
}
