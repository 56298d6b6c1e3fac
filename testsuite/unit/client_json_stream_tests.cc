// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/api_status.h"
#include "k8s_client/json.h"
#include "k8s_client/json_stream.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres::k8s;

TEST_CASE("watch stream objects are split at any chunk boundary", "[stream]") {
    std::string events =
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a}{\\\"\"}}}\n"
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}\n"
        "{\"type\":\"DELETED\",\"object\":{\"list\":[1,{\"x\":\"]\"}]}}\n";
    for (size_t chunk : {1, 2, 7, 64, 4096}) {
        JsonStreamSplitter sp;
        std::vector<std::string> out;
        std::string obj;
        for (size_t i = 0; i < events.size(); i += chunk) {
            sp.feed(events.data() + i, std::min(chunk, events.size() - i));
            while (sp.next(obj))
                out.push_back(obj);
        }
        INFO(chunk);
        REQUIRE(out.size() == 3);
        rapidjson::Document d;
        k8s_cons_tres::json::parse(d, out[0]);
        CHECK(std::string(d["object"]["metadata"]["name"].GetString()) == "a}{\"");
        k8s_cons_tres::json::parse(d, out[2]);
        CHECK(std::string(d["type"].GetString()) == "DELETED");
        CHECK(sp.buffered() == 0);
    }
}

TEST_CASE("garbage between objects is an error", "[stream]") {
    JsonStreamSplitter sp;
    std::string obj;
    sp.feed("{} x", 4);
    CHECK(sp.next(obj));
    CHECK_THROWS_AS(sp.next(obj), k8s_cons_tres::json::Error);
    JsonStreamSplitter sp2;
    sp2.feed("}", 1);
    CHECK_THROWS_AS(sp2.next(obj), k8s_cons_tres::json::Error);
}

TEST_CASE("Status bodies are summarised with their causes", "[status]") {
    ApiStatus st = parseApiStatus(
        422, R"({"kind":"Status","status":"Failure","message":"ResourceClaim.resource.k8s.io \"x\" is invalid","reason":"Invalid","details":{"causes":[{"reason":"FieldValueTooMany","message":"must have at most 32 items","field":"status.allocation.devices.results"}]},"code":422})");
    CHECK(st.code == 422);
    CHECK(st.reason == "Invalid");
    REQUIRE(st.causes.size() == 1);
    CHECK(st.summary().find("status.allocation.devices.results: must have at most 32 items") !=
          std::string::npos);
    ApiStatus raw = parseApiStatus(502, "<html>bad gateway</html>");
    CHECK(raw.code == 502);
    CHECK(raw.summary() == "HTTP 502: <html>bad gateway</html>");
}
