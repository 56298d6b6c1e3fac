// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/json.h"

namespace k8s_cons_tres::json {

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

namespace {

using rapidjson::SizeType;

// Forwards SAX events to a Document, refusing nesting beyond kMaxDepth.
class DepthLimit {
public:
    explicit DepthLimit(rapidjson::Document &d) : d_(d) {}
    bool Null() { return d_.Null(); }
    bool Bool(bool b) { return d_.Bool(b); }
    bool Int(int i) { return d_.Int(i); }
    bool Uint(unsigned u) { return d_.Uint(u); }
    bool Int64(int64_t i) { return d_.Int64(i); }
    bool Uint64(uint64_t u) { return d_.Uint64(u); }
    bool Double(double v) { return d_.Double(v); }
    bool RawNumber(const char *s, SizeType n, bool copy) { return d_.RawNumber(s, n, copy); }
    bool String(const char *s, SizeType n, bool copy) { return d_.String(s, n, copy); }
    bool Key(const char *s, SizeType n, bool copy) { return d_.Key(s, n, copy); }
    bool StartObject() { return enter() && d_.StartObject(); }
    bool EndObject(SizeType n) { --depth_; return d_.EndObject(n); }
    bool StartArray() { return enter() && d_.StartArray(); }
    bool EndArray(SizeType n) { --depth_; return d_.EndArray(n); }
    bool tooDeep() const { return tooDeep_; }

private:
    bool enter() {
        tooDeep_ = ++depth_ > kMaxDepth;
        return !tooDeep_;
    }
    rapidjson::Document &d_;
    int depth_ = 0;
    bool tooDeep_ = false;
};

// Document::Populate generator running the iterative reader through DepthLimit.
template <unsigned Flags, class Stream>
struct Generate {
    Stream &in;
    rapidjson::ParseResult result{};
    bool tooDeep = false;
    bool operator()(rapidjson::Document &d) {
        DepthLimit h(d);
        rapidjson::Reader reader;
        result = reader.Parse<Flags | rapidjson::kParseIterativeFlag>(in, h);
        tooDeep = h.tooDeep();
        return !result.IsError();
    }
};

template <unsigned Flags, class Stream>
void run(rapidjson::Document &doc, Stream &in) {
    Generate<Flags, Stream> g{in};
    doc.SetNull();
    doc.Populate(g);
    if (g.tooDeep)
        throw Error("invalid JSON at offset " + std::to_string(g.result.Offset()) +
                    ": nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (g.result.IsError())
        throw Error(std::string("invalid JSON at offset ") + std::to_string(g.result.Offset()) +
                    ": " + rapidjson::GetParseError_En(g.result.Code()));
}

}  // namespace

void parse(rapidjson::Document &doc, const std::string &text) {
    // The MemoryStream itself, not EncodedInputStream<UTF8>: that one skips
    // any leading 0xEF, 0xBB and 0xBF bytes one by one (a lax BOM skip),
    // which the in-situ parser does not; both must accept the same input.
    rapidjson::MemoryStream in(text.data(), text.size());
    run<rapidjson::kParseDefaultFlags>(doc, in);
}

void parseInsitu(rapidjson::Document &doc, std::string &buffer) {
    if (buffer.capacity() < buffer.size() + kInsituSlack)
        buffer.reserve(buffer.size() + kInsituSlack);
    rapidjson::InsituStringStream in(buffer.data());
    run<rapidjson::kParseInsituFlag>(doc, in);
}

}  // namespace k8s_cons_tres::json
