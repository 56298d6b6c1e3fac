// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/json.h"

namespace k8sdra::json {

const rapidjson::Value *member(const rapidjson::Value &obj, const char *key) {
    if (!obj.IsObject())
        return nullptr;
    auto it = obj.FindMember(key);
    return it == obj.MemberEnd() ? nullptr : &it->value;
}

const rapidjson::Value &requireObject(const rapidjson::Value &obj,
                                      const char *key, const char *where) {
    const rapidjson::Value *v = member(obj, key);
    if (!v || !v->IsObject())
        throw Error(std::string(where) + ": missing object '" + key + "'");
    return *v;
}

std::string getString(const rapidjson::Value &obj, const char *key,
                      const std::string &fallback) {
    const rapidjson::Value *v = member(obj, key);
    if (!v || v->IsNull())
        return fallback;
    if (!v->IsString())
        throw Error(std::string("'") + key + "' is not a string");
    return std::string(v->GetString(), v->GetStringLength());
}

int64_t getInt(const rapidjson::Value &obj, const char *key, int64_t fallback) {
    const rapidjson::Value *v = member(obj, key);
    if (!v || v->IsNull())
        return fallback;
    if (!v->IsInt64())
        throw Error(std::string("'") + key + "' is not an integer");
    return v->GetInt64();
}

bool getBool(const rapidjson::Value &obj, const char *key, bool fallback) {
    const rapidjson::Value *v = member(obj, key);
    if (!v || v->IsNull())
        return fallback;
    if (!v->IsBool())
        throw Error(std::string("'") + key + "' is not a boolean");
    return v->GetBool();
}

static void checkParse(const rapidjson::Document &doc) {
    if (doc.HasParseError())
        throw Error(std::string("invalid JSON at offset ") +
                    std::to_string(doc.GetErrorOffset()) + ": " +
                    rapidjson::GetParseError_En(doc.GetParseError()));
}

void parse(rapidjson::Document &doc, const std::string &text) {
    doc.Parse(text.data(), text.size());
    checkParse(doc);
}

void parseInsitu(rapidjson::Document &doc, std::string &buffer) {
    if (buffer.capacity() < buffer.size() + kInsituSlack)
        buffer.reserve(buffer.size() + kInsituSlack);
    doc.ParseInsitu(buffer.data());
    checkParse(doc);
}

}  // namespace k8sdra::json
