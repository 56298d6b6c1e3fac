// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/slice_json.h"

#include "k8s_sync/compact_slice.h"

#include <type_traits>
#include <variant>

namespace k8s_cons_tres::k8s {
namespace {

using rapidjson::Value;

std::string asString(const Value &v) {
    return std::string(v.GetString(), v.GetStringLength());
}

template <class T, class Get>
std::optional<AttrValue> decodeList(const Value &x, bool (Value::*is)() const, Get get) {
    if (!x.IsArray())
        return std::nullopt;
    std::vector<T> out;
    out.reserve(x.Size());
    for (const Value &e : x.GetArray()) {
        if (!(e.*is)())
            return std::nullopt;
        out.push_back(get(e));
    }
    return AttrValue(std::move(out));
}

std::optional<AttrValue> decodeForm(std::string_view form, const Value &x) {
    if (form == "int" && x.IsInt64())
        return AttrValue(x.GetInt64());
    if (form == "bool" && x.IsBool())
        return AttrValue(x.GetBool());
    if (form == "string" && x.IsString())
        return AttrValue(asString(x));
    if (form == "version" && x.IsString())
        return AttrValue(AttrVersion{asString(x)});
    if (form == "ints")
        return decodeList<int64_t>(x, &Value::IsInt64, [](const Value &e) { return e.GetInt64(); });
    if (form == "bools")
        return decodeList<bool>(x, &Value::IsBool, [](const Value &e) { return e.GetBool(); });
    if (form == "strings")
        return decodeList<std::string>(x, &Value::IsString, asString);
    if (form == "versions")
        return decodeList<AttrVersion>(x, &Value::IsString,
                                       [](const Value &e) { return AttrVersion{asString(e)}; });
    return std::nullopt;
}

}  // namespace

AttrValue decodeAttrValue(const Value &v, const std::string &name) {
    if (!v.IsObject())
        throw json::Error("attribute '" + name + "' is not an object");
    auto it = v.MemberBegin();
    if (it == v.MemberEnd())
        throw json::Error("attribute '" + name + "' has no value");
    std::string_view form(it->name.GetString(), it->name.GetStringLength());
    if (auto a = decodeForm(form, it->value))
        return std::move(*a);
    throw json::Error("attribute '" + name + "' has bad value form '" + std::string(form) + "'");
}

std::map<std::string, std::string> decodeCounters(const Value *counters) {
    std::map<std::string, std::string> out;
    if (!counters || !counters->IsObject())
        return out;
    for (auto it = counters->MemberBegin(); it != counters->MemberEnd(); ++it)
        out.emplace(asString(it->name), json::getString(it->value, "value"));
    return out;
}

std::vector<DeviceTaint> decodeTaints(const Value &d) {
    std::vector<DeviceTaint> out;
    if (const Value *ts = json::member(d, "taints"); ts && ts->IsArray())
        for (const Value &t : ts->GetArray())
            out.push_back({json::getString(t, "key"), json::getString(t, "value"),
                           json::getString(t, "effect")});
    return out;
}

std::vector<CounterConsumption> decodeConsumption(const Value &d) {
    std::vector<CounterConsumption> out;
    if (const Value *cs = json::member(d, "consumesCounters"); cs && cs->IsArray())
        for (const Value &c : cs->GetArray())
            out.push_back({json::getString(c, "counterSet"),
                           decodeCounters(json::member(c, "counters"))});
    return out;
}

namespace {

template <class T, class Put>
void writeList(json::Writer &w, const char *form, const std::vector<T> &v, Put put) {
    w.Key(form);
    w.StartArray();
    for (const T &x : v)
        put(x);
    w.EndArray();
}

void writeAttr(json::Writer &w, const AttrValue &v) {
    w.StartObject();
    auto version = [&](const AttrVersion &x) { json::str(w, x.value); };
    std::visit(
        [&](const auto &x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, int64_t>) {
                w.Key("int");
                w.Int64(x);
            } else if constexpr (std::is_same_v<T, bool>) {
                w.Key("bool");
                w.Bool(x);
            } else if constexpr (std::is_same_v<T, std::string>) {
                json::kv(w, "string", x);
            } else if constexpr (std::is_same_v<T, AttrVersion>) {
                json::kv(w, "version", x.value);
            } else if constexpr (std::is_same_v<T, AttrInts>) {
                writeList(w, "ints", x, [&](int64_t i) { w.Int64(i); });
            } else if constexpr (std::is_same_v<T, AttrBools>) {
                writeList(w, "bools", x, [&](bool b) { w.Bool(b); });
            } else if constexpr (std::is_same_v<T, AttrStrings>) {
                writeList(w, "strings", x, [&](const std::string &s) { json::str(w, s); });
            } else {
                writeList(w, "versions", x, version);
            }
        },
        v);
    w.EndObject();
}

void writeCounters(json::Writer &w, const std::map<std::string, std::string> &counters) {
    w.Key("counters");
    w.StartObject();
    for (const auto &[name, value] : counters) {
        json::key(w, name);
        w.StartObject();
        json::kv(w, "value", value);
        w.EndObject();
    }
    w.EndObject();
}

void writeTaintsAndCounters(json::Writer &w, const Device &d) {
    if (!d.taints.empty()) {
        w.Key("taints");
        w.StartArray();
        for (const DeviceTaint &t : d.taints) {
            w.StartObject();
            json::kv(w, "key", t.key);
            if (!t.value.empty())
                json::kv(w, "value", t.value);
            json::kv(w, "effect", t.effect);
            w.EndObject();
        }
        w.EndArray();
    }
    if (!d.consumesCounters.empty()) {
        w.Key("consumesCounters");
        w.StartArray();
        for (const CounterConsumption &c : d.consumesCounters) {
            w.StartObject();
            json::kv(w, "counterSet", c.counterSet);
            writeCounters(w, c.counters);
            w.EndObject();
        }
        w.EndArray();
    }
}

void writeDevice(json::Writer &w, const Device &d) {
    w.StartObject();
    json::kv(w, "name", d.name);
    if (d.allowMultipleAllocations) {
        w.Key("allowMultipleAllocations");
        w.Bool(true);
    }
    if (!d.attributes.empty()) {
        w.Key("attributes");
        w.StartObject();
        for (const auto &[name, value] : d.attributes) {
            json::key(w, name);
            writeAttr(w, value);
        }
        w.EndObject();
    }
    if (!d.capacity.empty()) {
        w.Key("capacity");
        w.StartObject();
        for (const auto &[name, value] : d.capacity) {
            json::key(w, name);
            w.StartObject();
            json::kv(w, "value", value);
            w.EndObject();
        }
        w.EndObject();
    }
    writeTaintsAndCounters(w, d);
    w.EndObject();
}

}  // namespace

std::vector<CounterSet> decodeSharedCounters(const Value &spec) {
    std::vector<CounterSet> out;
    if (const Value *sets = json::member(spec, "sharedCounters"); sets && sets->IsArray())
        for (const Value &c : sets->GetArray())
            out.push_back({json::getString(c, "name"), decodeCounters(json::member(c, "counters"))});
    return out;
}

std::string qualifyName(const std::string &name, const std::string &driver) {
    if (name.find('/') != std::string::npos)
        return name;
    return driver + "/" + name;
}

// One decoder: the compact form's, expanded (tools and tests want maps).
ResourceSlice decodeResourceSlice(const Value &obj) { return decodeCompactSlice(obj).expand(); }

ResourceSlice parseResourceSlice(const std::string &text) {
    rapidjson::Document doc;
    json::parse(doc, text);
    return decodeResourceSlice(doc);
}

void writeResourceSlice(json::Writer &w, const ResourceSlice &s) {
    w.StartObject();
    json::kv(w, "apiVersion", "resource.k8s.io/v1");
    json::kv(w, "kind", "ResourceSlice");
    w.Key("metadata");
    w.StartObject();
    json::kv(w, "name", s.name);
    if (!s.resourceVersion.empty())
        json::kv(w, "resourceVersion", s.resourceVersion);
    w.EndObject();
    w.Key("spec");
    w.StartObject();
    json::kv(w, "driver", s.driver);
    if (!s.nodeName.empty())
        json::kv(w, "nodeName", s.nodeName);
    else {
        w.Key("allNodes");
        w.Bool(true);
    }
    w.Key("pool");
    w.StartObject();
    json::kv(w, "name", s.pool.name);
    w.Key("generation");
    w.Int64(s.pool.generation);
    w.Key("resourceSliceCount");
    w.Int64(s.pool.resourceSliceCount);
    w.EndObject();
    w.Key("devices");
    w.StartArray();
    for (const Device &d : s.devices)
        writeDevice(w, d);
    w.EndArray();
    if (!s.sharedCounters.empty()) {
        w.Key("sharedCounters");
        w.StartArray();
        for (const CounterSet &c : s.sharedCounters) {
            w.StartObject();
            json::kv(w, "name", c.name);
            writeCounters(w, c.counters);
            w.EndObject();
        }
        w.EndArray();
    }
    w.EndObject();
    w.EndObject();
}

std::string encodeResourceSlice(const ResourceSlice &slice) {
    rapidjson::StringBuffer buf;
    json::Writer w(buf);
    writeResourceSlice(w, slice);
    return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace k8s_cons_tres::k8s
