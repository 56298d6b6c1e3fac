// SPDX-License-Identifier: GPL-2.0-or-later
// Hostile JSON costs bounded memory and time and is a clear error.
#include "k8s_sync/claim_json.h"
#include "k8s_client/informer.h"
#include "k8s_client/json.h"
#include "k8s_client/json_stream.h"

#include <catch2/catch.hpp>

#include <chrono>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;

namespace {

std::string nested(size_t depth, const std::string &inner = "1") {
    return std::string(depth, '[') + inner + std::string(depth, ']');
}

std::string errorOf(const std::function<void()> &fn) {
    try {
        fn();
    } catch (const json::Error &e) {
        return e.what();
    }
    return "";
}

struct NullHandler : InformerHandler {
    void beginList() override {}
    void listItem(const rapidjson::Value &) override {}
    void endList() override {}
    void upsert(const rapidjson::Value &) override { ++upserts; }
    void remove(const rapidjson::Value &) override {}
    void commit() override {}
    int upserts = 0;
};

}  // namespace

TEST_CASE("100,000-deep nesting is refused without recursion", "[json][limits]") {
    const std::string deep = nested(100000);
    auto t0 = std::chrono::steady_clock::now();
    rapidjson::Document doc;
    std::string msg = errorOf([&] { json::parse(doc, deep); });
    CHECK(msg.find("nested deeper than 256 levels") != std::string::npos);
    std::string copy = deep;
    msg = errorOf([&] { json::parseInsitu(doc, copy); });
    CHECK(msg.find("nested deeper than 256 levels") != std::string::npos);
    // Same for objects, and through the claim decoder.
    std::string objs;
    for (int i = 0; i < 100000; ++i) objs += "{\"a\":";
    objs += "1" + std::string(100000, '}');
    CHECK(errorOf([&] { parseClaimHolding(objs); }).find("nested deeper") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
}

TEST_CASE("nesting up to the limit still parses", "[json][limits]") {
    rapidjson::Document doc;
    json::parse(doc, nested(json::kMaxDepth));
    CHECK(doc.IsArray());
    std::string text = nested(json::kMaxDepth + 1);
    CHECK_THROWS_AS(json::parseInsitu(doc, text), json::Error);
    // A well-formed document after a refused one parses normally.
    std::string ok = R"({"type":"ADDED","object":{"metadata":{"name":"x"}}})";
    json::parseInsitu(doc, ok);
    CHECK(json::getString(doc, "type") == "ADDED");
}

TEST_CASE("a deeply nested watch event is refused by the splitter and the parser",
          "[json][limits][stream]") {
    JsonStreamSplitter s;
    const std::string ev = "{\"type\":\"ADDED\",\"object\":" + nested(100000, "{}") + "}\n";
    s.feed(ev.data(), ev.size());
    std::string out;
    CHECK(errorOf([&] { s.next(out); }).find("nested deeper than") != std::string::npos);

    NullHandler h;
    std::string text = ev;
    CHECK(errorOf([&] { applyWatchEvent(h, text); }).find("nested deeper than") !=
          std::string::npos);
    CHECK(h.upserts == 0);
}

TEST_CASE("a claim with 100,000 results is refused", "[json][claim][limits]") {
    std::string text = R"({"metadata":{"namespace":"default","name":"huge"},)"
                       R"("status":{"allocation":{"devices":{"results":[)";
    for (int i = 0; i < 100000; ++i) {
        if (i) text += ',';
        text += R"({"request":"cpu","driver":"dra.cpu","pool":"n1","device":"cpudev)" +
                std::to_string(i) + "\"}";
    }
    text += "]}}}}";
    std::string msg = errorOf([&] { parseClaimHolding(text); });
    CHECK(msg.find("default/huge has 100000 allocation results") != std::string::npos);

    // Through a watch event the claim is skipped with that error, not applied.
    struct ClaimDecoding : NullHandler {
        void upsert(const rapidjson::Value &obj) override { decodeClaimHolding(obj); }
    } h;
    std::string ev = R"({"type":"ADDED","object":)" + text + "}";
    WatchEventOutcome o = applyWatchEvent(h, ev);
    CHECK_FALSE(o.changed);
    CHECK(o.error.find("100000 allocation results") != std::string::npos);
}

TEST_CASE("a claim with 32 results decodes", "[json][claim][limits]") {
    std::string text = R"({"metadata":{"namespace":"default","name":"ok"},)"
                       R"("status":{"allocation":{"devices":{"results":[)";
    for (int i = 0; i < 32; ++i) {
        if (i) text += ',';
        text += R"({"request":"cpu","driver":"dra.cpu","pool":"n1","device":"d)" +
                std::to_string(i) + "\"}";
    }
    text += "]}}}}";
    CHECK(parseClaimHolding(text).results.size() == 32);
}

// Found by testsuite/fuzz/fuzz_slice_json: json::parse skipped any leading
// 0xEF/0xBB/0xBF byte (RapidJSON's lax UTF-8 BOM skip) while parseInsitu
// refused it, so a list page and a watch event decoded differently.
TEST_CASE("parse and parseInsitu agree on leading byte-order-mark bytes", "[json][limits][fuzz]") {
    for (const std::string &text : {std::string("\xbb\"resource.k8s.io/v1\""),
                                   std::string("\xef\xbb\xbf{}"), std::string("\xbf[1]")}) {
        INFO(text);
        rapidjson::Document doc;
        std::string copy = text;
        CHECK_FALSE(errorOf([&] { json::parse(doc, text); }).empty());
        CHECK_FALSE(errorOf([&] { json::parseInsitu(doc, copy); }).empty());
    }
    // Input with an embedded NUL ends there for both.
    const std::string nul("{\"a\":1}\0trailing", 16);
    rapidjson::Document a, b;
    std::string copy = nul;
    json::parse(a, nul);
    json::parseInsitu(b, copy);
    CHECK(a == b);
}
