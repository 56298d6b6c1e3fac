// SPDX-License-Identifier: GPL-2.0-or-later
// The continue token read ahead of a list page's parse: the same as the
// full parse reads, or unknown, never another.
#include "k8s_client/json.h"
#include "k8s_client/list_page.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres::k8s;

namespace {

// What Informer::list reads from the fully parsed page.
std::string parsedContinue(std::string text) {
    rapidjson::Document d;
    k8s_cons_tres::json::parseInsitu(d, text);
    return k8s_cons_tres::json::getString(k8s_cons_tres::json::requireObject(d, "metadata", "list"), "continue");
}

}  // namespace

TEST_CASE("the continue token is read before the items", "[list_page]") {
    for (const char *page : {
             R"({"kind":"ResourceSliceList","apiVersion":"resource.k8s.io/v1","metadata":{"resourceVersion":"7","continue":"abc"},"items":[{"metadata":{"continue":"no"}}]})",
             R"({"metadata":{"continue":"abc","resourceVersion":"7"},"items":[]})",
             R"({"metadata":{"resourceVersion":"7"},"items":[{"a":1}]})",
             R"({"metadata":{"continue":""},"items":[]})",
             R"({"metadata":{"continue":null},"items":[]})",
             R"({"metadata":{"x":{"continue":"deep"},"continue":"top","remainingItemCount":3},"items":[]})",
             R"({"metadata":{"continue":"first","continue":"second"},"items":[]})",
             R"({"metadata":{"continue":"a\"b\\u0041"},"items":[]})",
             R"({"kind":"L","other":{"metadata":{"continue":"no"}},"metadata":{"continue":"yes"},"items":[]})",
         }) {
        INFO(page);
        auto peeked = peekContinue(page);
        REQUIRE(peeked);
        CHECK(*peeked == parsedContinue(page));
    }
}

TEST_CASE("a page whose token cannot be read first is left to the full parse", "[list_page]") {
    for (const char *page : {
             R"({"items":[],"metadata":{"continue":"late"}})",
             R"({"kind":"L"})",
             R"({"metadata":{"continue":5},"items":[]})",
             R"({"metadata":{"continue":"x")",
             R"(not json)",
             R"([])",
             "",
         }) {
        INFO(page);
        CHECK_FALSE(peekContinue(page));
    }
}
