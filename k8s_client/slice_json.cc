// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/slice_json.h"

namespace k8sdra::k8s {
namespace {

using rapidjson::Value;

std::string asString(const Value &v) {
    return std::string(v.GetString(), v.GetStringLength());
}

// One attribute value; nullopt for forms core does not model (list forms).
std::optional<AttrValue> decodeAttr(const Value &v, const std::string &name) {
    if (!v.IsObject())
        throw json::Error("attribute '" + name + "' is not an object");
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
        std::string_view form(it->name.GetString(), it->name.GetStringLength());
        const Value &x = it->value;
        if (form == "int" && x.IsInt64())
            return AttrValue(x.GetInt64());
        if (form == "bool" && x.IsBool())
            return AttrValue(x.GetBool());
        if (form == "string" && x.IsString())
            return AttrValue(asString(x));
        if (form == "version" && x.IsString())
            return AttrValue(AttrVersion{asString(x)});
        if (form == "ints" || form == "bools" || form == "strings" ||
            form == "versions")
            return std::nullopt;  // alpha list attributes: not modelled
        throw json::Error("attribute '" + name + "' has bad value form '" +
                          std::string(form) + "'");
    }
    throw json::Error("attribute '" + name + "' has no value");
}

Device decodeDevice(const Value &d, const std::string &driver) {
    if (!d.IsObject())
        throw json::Error("device is not an object");
    Device dev;
    dev.name = json::getString(d, "name");
    if (dev.name.empty())
        throw json::Error("device without a name");
    dev.allowMultipleAllocations = json::getBool(d, "allowMultipleAllocations");
    if (const Value *attrs = json::member(d, "attributes"); attrs && attrs->IsObject()) {
        for (auto it = attrs->MemberBegin(); it != attrs->MemberEnd(); ++it) {
            std::string name = qualifyName(asString(it->name), driver);
            if (auto v = decodeAttr(it->value, name))
                dev.attributes.emplace(std::move(name), std::move(*v));
        }
    }
    if (const Value *caps = json::member(d, "capacity"); caps && caps->IsObject()) {
        for (auto it = caps->MemberBegin(); it != caps->MemberEnd(); ++it) {
            std::string name = qualifyName(asString(it->name), driver);
            dev.capacity.emplace(std::move(name), json::getString(it->value, "value"));
        }
    }
    return dev;
}

void writeAttr(json::Writer &w, const AttrValue &v) {
    w.StartObject();
    if (auto *i = std::get_if<int64_t>(&v)) {
        w.Key("int");
        w.Int64(*i);
    } else if (auto *b = std::get_if<bool>(&v)) {
        w.Key("bool");
        w.Bool(*b);
    } else if (auto *s = std::get_if<std::string>(&v)) {
        json::kv(w, "string", *s);
    } else {
        json::kv(w, "version", std::get<AttrVersion>(v).value);
    }
    w.EndObject();
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
    w.EndObject();
}

}  // namespace

std::string qualifyName(const std::string &name, const std::string &driver) {
    if (name.find('/') != std::string::npos)
        return name;
    return driver + "/" + name;
}

ResourceSlice decodeResourceSlice(const Value &obj) {
    ResourceSlice s;
    const Value &spec = decodeSliceHeader(obj, s);
    if (const Value *devs = json::member(spec, "devices"); devs && devs->IsArray()) {
        s.devices.reserve(devs->Size());
        for (const Value &d : devs->GetArray())
            s.devices.push_back(decodeDevice(d, s.driver));
    }
    return s;
}

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
    w.EndObject();
    w.EndObject();
}

std::string encodeResourceSlice(const ResourceSlice &slice) {
    rapidjson::StringBuffer buf;
    json::Writer w(buf);
    writeResourceSlice(w, slice);
    return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace k8sdra::k8s
