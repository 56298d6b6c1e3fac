// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/compact_slice.h"

#include "k8s_sync/slice_json.h"

#include <algorithm>
#include <functional>

namespace k8s_cons_tres::k8s {
namespace {

using rapidjson::Value;

// Interns qualified names. Devices of one slice list the same keys in the
// same order, so the previous device's raw key at the same position usually
// matches and neither hashing nor qualification is needed.
class KeyCache {
public:
    explicit KeyCache(const std::string &driver) : driver_(driver) {}
    uint32_t id(size_t pos, std::string_view raw) {
        if (pos < raw_.size() && raw_[pos].first == raw)
            return raw_[pos].second;
        uint32_t id = raw.find('/') != std::string_view::npos
                          ? StringPool::instance().intern(raw)
                          : StringPool::instance().intern(driver_ + "/" + std::string(raw));
        if (pos >= raw_.size())
            raw_.resize(pos + 1);
        raw_[pos] = {std::string(raw), id};
        return id;
    }

private:
    const std::string &driver_;
    std::vector<std::pair<std::string, uint32_t>> raw_;
};

std::string_view view(const Value &v) { return {v.GetString(), v.GetStringLength()}; }

void decodeValue(const Value &v, CompactAttr &a, std::string_view name, CompactSlice &s) {
    if (!v.IsObject() || v.MemberCount() == 0)
        throw json::Error("attribute '" + std::string(name) + "' has no value");
    auto it = v.MemberBegin();
    std::string_view form = view(it->name);
    const Value &x = it->value;
    StringPool &pool = StringPool::instance();
    if (form == "int" && x.IsInt64()) {
        a.kind = CompactAttr::Int;
        a.value = x.GetInt64();
    } else if (form == "bool" && x.IsBool()) {
        a.kind = CompactAttr::Bool;
        a.value = x.GetBool();
    } else if (form == "string" && x.IsString()) {
        a.kind = CompactAttr::String;
        a.value = pool.intern(view(x));
    } else if (form == "version" && x.IsString()) {
        a.kind = CompactAttr::Version;
        a.value = pool.intern(view(x));
    } else {  // list forms, and errors, as the plain decoder has them
        s.lists.push_back(decodeAttrValue(v, std::string(name)));
        a.kind = CompactAttr::List;
        a.value = static_cast<int64_t>(s.lists.size() - 1);
    }
}

void decodeDevice(const Value &d, CompactSlice &s, KeyCache &attrKeys, KeyCache &capKeys) {
    if (!d.IsObject())
        throw json::Error("device is not an object");
    CompactDevice dev;
    dev.name = json::getString(d, "name");
    if (dev.name.empty())
        throw json::Error("device without a name");
    dev.allowMultipleAllocations = json::getBool(d, "allowMultipleAllocations");
    dev.attrBegin = uint32_t(s.attrs.size());
    if (const Value *attrs = json::member(d, "attributes"); attrs && attrs->IsObject()) {
        size_t pos = 0;
        for (auto it = attrs->MemberBegin(); it != attrs->MemberEnd(); ++it, ++pos) {
            CompactAttr a{attrKeys.id(pos, view(it->name)), CompactAttr::Int, 0};
            decodeValue(it->value, a, view(it->name), s);
            s.attrs.push_back(a);
        }
    }
    dev.attrCount = uint16_t(s.attrs.size() - dev.attrBegin);
    dev.capBegin = uint32_t(s.caps.size());
    if (const Value *caps = json::member(d, "capacity"); caps && caps->IsObject()) {
        size_t pos = 0;
        for (auto it = caps->MemberBegin(); it != caps->MemberEnd(); ++it, ++pos)
            s.caps.push_back({capKeys.id(pos, view(it->name)),
                              StringPool::instance().intern(json::getString(it->value, "value"))});
    }
    dev.capCount = uint16_t(s.caps.size() - dev.capBegin);
    CompactExtra extra{uint32_t(s.devices.size()), decodeTaints(d), decodeConsumption(d)};
    if (!extra.taints.empty() || !extra.consumesCounters.empty())
        s.extras.push_back(std::move(extra));
    s.devices.push_back(std::move(dev));
}

AttrValue toValue(const CompactSlice &s, const CompactAttr &a) {
    StringPool &pool = StringPool::instance();
    switch (a.kind) {
    case CompactAttr::Int:
        return a.value;
    case CompactAttr::Bool:
        return a.value != 0;
    case CompactAttr::String:
        return pool.get(uint32_t(a.value));
    case CompactAttr::Version:
        return AttrVersion{pool.get(uint32_t(a.value))};
    case CompactAttr::List:
        return s.lists.at(size_t(a.value));
    }
    return a.value;
}

}  // namespace

CompactSlice decodeCompactSlice(const Value &obj) {
    CompactSlice s;
    const Value &spec = decodeSliceHeader(obj, s);
    const Value *devs = json::member(spec, "devices");
    if (devs && devs->IsArray()) {
        KeyCache attrKeys(s.driver), capKeys(s.driver);
        s.devices.reserve(devs->Size());
        for (const Value &d : devs->GetArray()) {
            decodeDevice(d, s, attrKeys, capKeys);
            if (s.devices.size() == 1)  // the first device predicts the rest
                s.attrs.reserve(s.attrs.size() * devs->Size());
        }
        s.attrs.shrink_to_fit();
        s.caps.shrink_to_fit();
    }
    s.sharedCounters = decodeSharedCounters(spec);
    return s;
}

Device CompactSlice::expandDevice(size_t i) const {
    const CompactDevice &cd = devices.at(i);
    StringPool &pool = StringPool::instance();
    Device d;
    d.name = cd.name;
    d.allowMultipleAllocations = cd.allowMultipleAllocations;
    for (uint32_t k = cd.attrBegin; k < cd.attrBegin + cd.attrCount; ++k)
        d.attributes.emplace(pool.get(attrs[k].key), toValue(*this, attrs[k]));
    for (uint32_t k = cd.capBegin; k < cd.capBegin + cd.capCount; ++k)
        d.capacity.emplace(pool.get(caps[k].key), pool.get(caps[k].value));
    for (const CompactExtra &e : extras) {
        if (e.device == i) {
            d.taints = e.taints;
            d.consumesCounters = e.consumesCounters;
        }
    }
    return d;
}

ResourceSlice CompactSlice::expand() const {
    ResourceSlice s;
    s.name = name;
    s.resourceVersion = resourceVersion;
    s.driver = driver;
    s.nodeName = nodeName;
    s.pool = pool;
    s.sharedCounters = sharedCounters;
    s.devices.reserve(devices.size());
    for (size_t i = 0; i < devices.size(); ++i)
        s.devices.push_back(expandDevice(i));
    return s;
}

std::optional<AttrValue> CompactSlice::attribute(size_t i, const std::string &qualified) const {
    const CompactDevice &cd = devices.at(i);
    StringPool &pool = StringPool::instance();
    for (uint32_t k = cd.attrBegin; k < cd.attrBegin + cd.attrCount; ++k)
        if (pool.get(attrs[k].key) == qualified)
            return toValue(*this, attrs[k]);
    return std::nullopt;
}

bool CompactSlice::sameDevices(const CompactSlice &o) const {
    // Arrays equal element by element (their offsets included): a stricter
    // test than equal attribute maps, never a looser one.
    auto sameDevice = [](const CompactDevice &a, const CompactDevice &b) {
        return a.name == b.name && a.attrBegin == b.attrBegin && a.capBegin == b.capBegin &&
               a.attrCount == b.attrCount && a.capCount == b.capCount &&
               a.allowMultipleAllocations == b.allowMultipleAllocations;
    };
    auto sameAttr = [](const CompactAttr &a, const CompactAttr &b) {
        return a.key == b.key && a.kind == b.kind && a.value == b.value;
    };
    auto sameCap = [](const CompactCapacity &a, const CompactCapacity &b) {
        return a.key == b.key && a.value == b.value;
    };
    auto sameExtra = [](const CompactExtra &a, const CompactExtra &b) {
        return a.device == b.device && a.taints == b.taints && a.consumesCounters == b.consumesCounters;
    };
    return driver == o.driver &&
           std::equal(devices.begin(), devices.end(), o.devices.begin(), o.devices.end(), sameDevice) &&
           std::equal(attrs.begin(), attrs.end(), o.attrs.begin(), o.attrs.end(), sameAttr) &&
           std::equal(caps.begin(), caps.end(), o.caps.begin(), o.caps.end(), sameCap) &&
           lists == o.lists &&
           std::equal(extras.begin(), extras.end(), o.extras.begin(), o.extras.end(), sameExtra);
}

uint64_t CompactSlice::devicesHash() const {
    uint64_t h = 0xcbf29ce484222325ULL;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };
    mix(std::hash<std::string>{}(driver));
    mix(devices.size());
    for (const CompactDevice &d : devices) {
        mix(std::hash<std::string>{}(d.name));
        mix(uint64_t{d.attrCount} << 32 | d.capCount);
    }
    for (const CompactAttr &a : attrs) {
        mix(uint64_t{a.key} << 8 | a.kind);
        mix(static_cast<uint64_t>(a.value));
    }
    for (const CompactCapacity &c : caps)
        mix(uint64_t{c.key} << 32 | c.value);
    mix(lists.size());  // rare: equality tells them apart
    mix(extras.size());
    return h;
}

CompactSlice compactSlice(const ResourceSlice &s) {
    // One code path for both directions keeps the two forms in agreement.
    rapidjson::Document d;
    std::string text = encodeResourceSlice(s);
    json::parseInsitu(d, text);
    return decodeCompactSlice(d);
}

}  // namespace k8s_cons_tres::k8s
