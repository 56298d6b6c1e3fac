// SPDX-License-Identifier: GPL-2.0-or-later
// Round trip through JSON: fixture generator -> ResourceSlice JSON (the
// client's encoder) -> decoded slices -> model reproduces the topology.
#include "testsuite/support/hwloc_fixture.h"
#include "core/inventory.h"
#include "k8s_sync/slice_json.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres;

TEST_CASE("fixture slices survive JSON and rebuild the same model", "[fixture][json]") {
    for (CpuMode mode : {CpuMode::Individual, CpuMode::GroupNuma}) {
        FixtureOptions o;
        o.node = "rt";
        o.mode = mode;
        o.gpus = 4;
        o.max_devices_per_slice = 50;  // several slices per pool
        const FixtureResult f = fixture_from_synthetic("pack:2 numa:2 l3:2 core:6 pu:2", o);
        REQUIRE(f.ok);
        std::vector<ResourceSlice> decoded;
        for (const ResourceSlice &s : f.slices)
            decoded.push_back(k8s::parseResourceSlice(k8s::encodeResourceSlice(s)));
        CHECK(decoded == f.slices);
        const Inventory direct = Inventory::build(f.slices, {});
        const Inventory via_json = Inventory::build(decoded, {});
        const NodeEntry *a = direct.node("rt");
        const NodeEntry *b = via_json.node("rt");
        REQUIRE(a);
        REQUIRE(b);
        REQUIRE(b->usable());
        CHECK(b->topology.cpu->fingerprint() == a->topology.cpu->fingerprint());
        CHECK(b->topology.cpu->cpus.size() == 96);
        CHECK(b->topology.cpu->numas.size() == 4);
        CHECK(b->topology.cpu->sockets.size() == 2);
        if (mode == CpuMode::Individual)
            CHECK(b->topology.cpu->cells.size() == 8);
        REQUIRE(b->topology.gpus.size() == 4);
        for (size_t i = 0; i < 4; ++i) {
            CHECK(b->topology.gpus[i].uuid == a->topology.gpus[i].uuid);
            CHECK(b->topology.gpus[i].numa == a->topology.gpus[i].numa);
        }
    }
}
