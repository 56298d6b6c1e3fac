// SPDX-License-Identifier: GPL-2.0-or-later
// The one header through which the project includes RapidJSON. It makes
// RapidJSON's internal assertions throw instead of calling assert(), so that
// malformed or unexpected JSON is an error the caller can handle, never an
// abort inside slurmctld.
#pragma once

#include <stdexcept>
#include <string>

namespace k8s_cons_tres::json {

// Thrown for malformed JSON and for JSON of the wrong shape.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace k8s_cons_tres::json

#ifdef RAPIDJSON_ASSERT
#error "k8s_client/json.h must be the first to define RAPIDJSON_ASSERT"
#endif
#define RAPIDJSON_ASSERT(x)                                                   \
    do {                                                                      \
        if (!(x))                                                             \
            throw ::k8s_cons_tres::json::Error("JSON assertion failed: " #x);        \
    } while (0)
// Exceptions are thrown from destructor-free paths only; keep RapidJSON from
// marking its functions noexcept around the assertion.
#define RAPIDJSON_HAS_CXX11_NOEXCEPT 0
#define RAPIDJSON_HAS_STDSTRING 1
// Vectorised whitespace and string scanning; SSE2 is part of x86-64 itself.
#if defined(__SSE2__) && !defined(RAPIDJSON_SSE2)
#define RAPIDJSON_SSE2
#endif

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace k8s_cons_tres::json {

// Typed accessors that throw json::Error with the path of what was missing.
const rapidjson::Value *member(const rapidjson::Value &obj, const char *key);
const rapidjson::Value &requireObject(const rapidjson::Value &obj,
                                      const char *key, const char *where);
std::string getString(const rapidjson::Value &obj, const char *key,
                      const std::string &fallback = {});
int64_t getInt(const rapidjson::Value &obj, const char *key,
               int64_t fallback = 0);
bool getBool(const rapidjson::Value &obj, const char *key,
             bool fallback = false);

// Nesting deeper than this is refused. Kubernetes objects nest about 15
// levels; the bound keeps hostile input to bounded memory and time.
inline constexpr int kMaxDepth = 256;

// Parses text into doc (copying), throwing json::Error with the offset on
// failure. Both parsers are RapidJSON's iterative one (no recursion on the C
// stack) and refuse nesting deeper than kMaxDepth.
void parse(rapidjson::Document &doc, const std::string &text);
// RapidJSON's SSE2 scanning reads whole aligned 16-byte blocks, up to 15
// bytes past the last one it needs: in-situ buffers get this much slack.
inline constexpr size_t kInsituSlack = 16;
// In-situ parse of buffer, which must outlive doc; its capacity is first
// grown to size + kInsituSlack when it is smaller.
void parseInsitu(rapidjson::Document &doc, std::string &buffer);

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;
inline void key(Writer &w, const std::string &k) {
    w.Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
}
inline void str(Writer &w, const std::string &v) {
    w.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
}
inline void kv(Writer &w, const char *k, const std::string &v) {
    w.Key(k);
    str(w, v);
}

}  // namespace k8s_cons_tres::json
