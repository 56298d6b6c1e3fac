// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/slice_json.h"
#include "testsuite/unit/client_test_util.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;
using k8s_cons_tres::test::readFixture;

TEST_CASE("dra.cpu individual-mode slice decodes", "[json][slice]") {
    ResourceSlice s = parseResourceSlice(readFixture("dra_cpu_individual.json"));
    CHECK(s.name == "node1-dra.cpu-qskwf");
    CHECK(s.driver == "dra.cpu");
    CHECK(s.nodeName == "node1");
    CHECK(s.pool == Pool{"node1", 1, 1});
    REQUIRE(s.devices.size() == 2);
    const Device &d = s.devices[1];
    CHECK(d.name == "cpudev001");
    CHECK(d.attributes.size() == 9);
    CHECK(std::get<int64_t>(d.attributes.at("dra.cpu/cpuID")) == 32);
    CHECK(std::get<int64_t>(d.attributes.at("dra.cpu/coreID")) == 0);
    CHECK(std::get<std::string>(d.attributes.at("dra.cpu/coreType")) == "standard");
    CHECK(std::get<bool>(d.attributes.at("dra.cpu/smtEnabled")));
    CHECK(std::get<int64_t>(d.attributes.at("resource.kubernetes.io/numaNode")) == 0);
    CHECK(std::get<int64_t>(d.attributes.at("dra.net/numaNode")) == 0);
    CHECK(d.capacity.empty());
    CHECK_FALSE(d.allowMultipleAllocations);
}

TEST_CASE("dra.cpu grouped-mode slice decodes", "[json][slice]") {
    ResourceSlice s = parseResourceSlice(readFixture("dra_cpu_grouped.json"));
    CHECK(s.resourceVersion == "42");
    CHECK(s.pool.generation == 3);
    REQUIRE(s.devices.size() == 2);
    const Device &d = s.devices[0];
    CHECK(d.name == "cpudevnuma000");
    CHECK(d.allowMultipleAllocations);
    CHECK(std::get<int64_t>(d.attributes.at("dra.cpu/numCPUs")) == 64);
    CHECK(d.capacity.at("dra.cpu/cpu") == "64");
    CHECK(std::get<int64_t>(s.devices[1].attributes.at("resource.kubernetes.io/numaNode")) == 1);
}

TEST_CASE("NVIDIA slice: bare names are qualified with the driver", "[json][slice]") {
    ResourceSlice s = parseResourceSlice(readFixture("nvidia_gpu.json"));
    REQUIRE(s.devices.size() == 1);
    const Device &d = s.devices[0];
    CHECK(d.name == "gpu-0");
    CHECK(std::get<std::string>(d.attributes.at("gpu.nvidia.com/type")) == "gpu");
    CHECK(std::get<std::string>(d.attributes.at("gpu.nvidia.com/uuid")) ==
          "GPU-2fa81118-5a5f-aa66-7660-471eed407181");
    CHECK(std::get<AttrVersion>(d.attributes.at("gpu.nvidia.com/cudaComputeCapability")).value ==
          "8.0.0");
    CHECK(std::get<std::string>(d.attributes.at("resource.kubernetes.io/pcieRoot")) ==
          "pci0000:64");
    CHECK(std::get<std::string>(d.attributes.at("resource.kubernetes.io/pciBusID")) ==
          "0000:65:00.0");
    CHECK(d.capacity.at("gpu.nvidia.com/memory") == "40Gi");
    CHECK(d.attributes.size() == 11);
}

TEST_CASE("slices survive an encode/decode round trip", "[json][slice]") {
    for (const char *f : {"dra_cpu_individual.json", "dra_cpu_grouped.json", "nvidia_gpu.json"}) {
        INFO(f);
        ResourceSlice s = parseResourceSlice(readFixture(f));
        std::string text = encodeResourceSlice(s);
        CHECK(parseResourceSlice(text) == s);
        CHECK(text.find("\"apiVersion\":\"resource.k8s.io/v1\"") != std::string::npos);
    }
}

TEST_CASE("list-form attributes decode in every form", "[json][slice]") {
    auto s = parseResourceSlice(R"({"metadata":{"name":"s"},"spec":{"driver":"dra.cpu",
        "nodeName":"n","pool":{"name":"n","generation":1,"resourceSliceCount":2},
        "devices":[{"name":"cpudev000","attributes":{
          "resource.kubernetes.io/pcieRoot":{"strings":["pci0000:00","pci0000:1a"]},
          "resource.kubernetes.io/numaNode":{"ints":[1]},
          "flags":{"bools":[true,false]},"vs":{"versions":["1.0.0"]},
          "dra.cpu/cpuID":{"int":7}}}]}})");
    CHECK(s.pool.resourceSliceCount == 2);
    const auto &a = s.devices.at(0).attributes;
    CHECK(a.size() == 5);
    CHECK(std::get<AttrStrings>(a.at("resource.kubernetes.io/pcieRoot")) ==
          AttrStrings{"pci0000:00", "pci0000:1a"});
    CHECK(std::get<AttrInts>(a.at("resource.kubernetes.io/numaNode")) == AttrInts{1});
    CHECK(std::get<AttrBools>(a.at("dra.cpu/flags")) == AttrBools{true, false});
    CHECK(std::get<AttrVersions>(a.at("dra.cpu/vs")) == AttrVersions{{"1.0.0"}});
    CHECK(parseResourceSlice(encodeResourceSlice(s)) == s);
    CHECK_THROWS_AS(parseResourceSlice(R"({"metadata":{},"spec":{"driver":"d","pool":{},
        "devices":[{"name":"a","attributes":{"x":{"ints":[1,"two"]}}}]}})"), json::Error);
}

TEST_CASE("malformed slices are errors, not aborts", "[json][slice]") {
    CHECK_THROWS_AS(parseResourceSlice("{"), json::Error);
    CHECK_THROWS_AS(parseResourceSlice("[]"), json::Error);
    CHECK_THROWS_AS(parseResourceSlice(R"({"metadata":{"name":"x"}})"), json::Error);
    CHECK_THROWS_AS(parseResourceSlice(R"({"metadata":{},"spec":{"pool":{}}})"), json::Error);
    CHECK_THROWS_AS(parseResourceSlice(R"({"metadata":{},"spec":{"driver":"d","pool":{},
        "devices":[{"name":"a","attributes":{"x":{"float":1.5}}}]}})"), json::Error);
    CHECK_THROWS_AS(parseResourceSlice(R"({"metadata":{},"spec":{"driver":"d","pool":{},
        "devices":[{"attributes":{}}]}})"), json::Error);
    CHECK_THROWS_AS(parseResourceSlice(R"({"metadata":{"name":5},"spec":{"driver":"d","pool":{}}})"),
                    json::Error);
    CHECK_THROWS_AS(parseResourceSlice(R"({"metadata":{},"spec":{"driver":"d",
        "pool":{"generation":"one"}}})"), json::Error);
}
