// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/network_position.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>

namespace k8s_cons_tres {
namespace {

std::string trim(std::string_view s) {
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
    return std::string(s.substr(b, e - b));
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

// Splits at sep, keeping empty items (an empty entry is an error here).
std::vector<std::string> split(std::string_view s, char sep) {
    std::vector<std::string> out;
    size_t pos = 0;
    for (;;) {
        const size_t end = s.find(sep, pos);
        out.push_back(trim(s.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos)));
        if (end == std::string_view::npos) return out;
        pos = end + 1;
    }
}

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// A DNS subdomain as Kubernetes takes it for a key's prefix.
bool is_dns_subdomain(std::string_view s) {
    if (s.empty() || s.size() > 253) return false;
    size_t start = 0;
    for (;;) {
        const size_t dot = s.find('.', start);
        const std::string_view part =
            s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
        if (part.empty() || part.size() > 63 || !alnum(part.front()) || !alnum(part.back())) return false;
        for (char c : part)
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
        if (dot == std::string_view::npos) return true;
        start = dot + 1;
    }
}

// A label or annotation key: [prefix/]name, name 1-63 characters.
bool is_qualified_key(std::string_view k) {
    const size_t slash = k.find('/');
    std::string_view name = k;
    if (slash != std::string_view::npos) {
        if (!is_dns_subdomain(k.substr(0, slash))) return false;
        name = k.substr(slash + 1);
    }
    if (name.empty() || name.size() > 63 || !alnum(name.front()) || !alnum(name.back())) return false;
    for (char c : name)
        if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
    return true;
}

// A Slurm topology name as Slinky's annotation uses it (topology.yaml's
// `topology:` value): anything without ',', ':', '=' or spaces.
bool is_topology_name(std::string_view n) {
    if (n.empty()) return false;
    for (char c : n)
        if (c == ',' || c == ':' || c == '=' || std::isspace(static_cast<unsigned char>(c))) return false;
    return true;
}

constexpr const char *kEntryForm =
    "expected LEVEL:SOURCE with LEVEL block or switch and SOURCE a label key, annotation:KEY or "
    "slinky:TOPOLOGY (e.g. block:cloud.google.com/gce-topology-subblock), or one preset";

std::string preset_names() {
    std::string out;
    for (const auto &[name, _] : topology_presets()) out += (out.empty() ? "" : ", ") + name;
    return out;
}

// One LEVEL:SOURCE entry, or what is wrong with it.
std::optional<TopologyEntry> parse_entry(const std::string &item, std::string *why) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) {
        *why = "'" + item + "': " + kEntryForm + " (" + preset_names() + ")";
        return std::nullopt;
    }
    TopologyEntry e;
    const std::string level = lower(trim(item.substr(0, colon)));
    if (level == "block") {
        e.level = TopologyLevel::Block;
    } else if (level == "switch") {
        e.level = TopologyLevel::Switch;
    } else {
        *why = "'" + item + "': level '" + level + "' is neither block nor switch";
        return std::nullopt;
    }
    const std::string source = trim(item.substr(colon + 1));
    const size_t colon2 = source.find(':');
    if (colon2 == std::string::npos) {
        e.source = {TopologySource::Kind::Label, source};
        if (!is_qualified_key(source)) {
            *why = "'" + item + "': '" + source +
                   "' is not a label key ([prefix/]name, e.g. topology.k8s.aws/network-node-layer-3)";
            return std::nullopt;
        }
        return e;
    }
    const std::string kind = lower(trim(source.substr(0, colon2)));
    const std::string key = trim(source.substr(colon2 + 1));
    if (kind == "annotation") {
        e.source = {TopologySource::Kind::Annotation, key};
        if (!is_qualified_key(key)) {
            *why = "'" + item + "': '" + key + "' is not an annotation key ([prefix/]name)";
            return std::nullopt;
        }
        return e;
    }
    if (kind == "slinky") {
        e.source = {TopologySource::Kind::Slinky, key};
        if (!is_topology_name(key)) {
            *why = "'" + item + "': slinky: takes the name of a Slurm topology (e.g. slinky:topo-block)";
            return std::nullopt;
        }
        return e;
    }
    *why = "'" + item + "': source '" + source + "' is neither a label key, annotation:KEY nor slinky:TOPOLOGY";
    return std::nullopt;
}

// Whole-spec rules: one block level, no source twice as a switch level, a
// Slinky tree path stands alone (it already is the whole path).
std::string check_spec(const TopologySpec &s) {
    if (s.entries.empty()) return "names no level";
    int blocks = 0, slinky_switches = 0, switches = 0;
    for (size_t i = 0; i < s.entries.size(); ++i) {
        const TopologyEntry &e = s.entries[i];
        if (e.level == TopologyLevel::Block) {
            ++blocks;
            continue;
        }
        ++switches;
        slinky_switches += e.source.kind == TopologySource::Kind::Slinky;
        for (size_t j = 0; j < i; ++j)
            if (s.entries[j].level == TopologyLevel::Switch && s.entries[j].source == e.source)
                return "switch level '" + e.source.key + "' is named twice";
    }
    if (blocks > 1) return "more than one block level (a node is in one block)";
    if (slinky_switches && switches > 1)
        return "a switch:slinky: entry gives the whole switch path and takes no other switch level";
    return "";
}

std::string source_text(const TopologySource &s) {
    switch (s.kind) {
    case TopologySource::Kind::Annotation: return "annotation:" + s.key;
    case TopologySource::Kind::Slinky: return "slinky:" + s.key;
    case TopologySource::Kind::Label: break;
    }
    return s.key;
}

std::string spec_list_text(const std::vector<TopologyEntry> &entries) {
    std::string out;
    for (const TopologyEntry &e : entries)
        out += std::string(out.empty() ? "" : ",") + (e.level == TopologyLevel::Block ? "block:" : "switch:") +
               source_text(e.source);
    return out;
}

const std::string *find(const KeyValues &kv, const std::string &key) {
    for (const auto &[k, v] : kv)
        if (k == key) return &v;
    return nullptr;
}

// The raw value(s) of one source: one value, or for a Slinky tree unit the
// whole path leaf first. Empty with *why set when unusable.
std::vector<std::string> values_of(const TopologyEntry &e, const KeyValues &labels, const KeyValues &annotations,
                                   std::string *why) {
    const bool label = e.source.kind == TopologySource::Kind::Label;
    const std::string key = e.source.kind == TopologySource::Kind::Slinky ? kSlinkyTopologyAnnotation : e.source.key;
    const std::string what = std::string(label ? "label " : "annotation ") + key;
    const std::string *v = find(label ? labels : annotations, key);
    if (!v) {
        *why = "no " + what;
        return {};
    }
    if (v->empty()) {
        *why = what + " is empty";
        return {};
    }
    if (v->size() > kMaxTopologyValue) {
        *why = what + " is longer than " + std::to_string(kMaxTopologyValue) + " characters";
        return {};
    }
    if (e.source.kind != TopologySource::Kind::Slinky) return {*v};
    // NAME:UNIT[:UNIT...] pairs, comma-separated, as Slurm's Topology= takes.
    for (const std::string &pair : split(*v, ',')) {
        std::vector<std::string> units = split(pair, ':');
        if (units.front() != e.source.key) continue;
        units.erase(units.begin());
        if (units.empty() || std::any_of(units.begin(), units.end(), [](const std::string &u) { return u.empty(); })) {
            *why = what + " has no usable unit for topology " + e.source.key + " ('" + pair + "')";
            return {};
        }
        if (e.level == TopologyLevel::Block && units.size() != 1) {
            *why = what + " names more than one block for topology " + e.source.key + " ('" + pair + "')";
            return {};
        }
        std::reverse(units.begin(), units.end());  // Slurm's path is root first
        return units;
    }
    *why = what + " names no topology " + e.source.key;
    return {};
}

std::string hex48(uint64_t h) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%012llx", static_cast<unsigned long long>(h & 0xffffffffffffULL));
    return buf;
}

bool ends_like_mapped(std::string_view v) {
    if (v.size() < 14 || v.compare(v.size() - 14, 2, "--") != 0) return false;
    return std::all_of(v.end() - 12, v.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

const std::vector<std::pair<std::string, std::string>> &topology_presets() {
    // Each maps the keys its provider writes; see k8s_cons_tres.conf(5).
    static const std::vector<std::pair<std::string, std::string>> presets = {
        // EKS: layer-1 is the top of the AWS network hierarchy, layer-3 the
        // bottom (closest to the instance) on most instance types.
        {"aws",
         "block:topology.k8s.aws/network-node-layer-3,switch:topology.k8s.aws/network-node-layer-3,"
         "switch:topology.k8s.aws/network-node-layer-2,switch:topology.k8s.aws/network-node-layer-1"},
        // GKE: a block is a collection of sub-blocks; a sub-block is the
        // lower-latency group, so it is Slurm's block and the leaf switch.
        {"gke",
         "block:cloud.google.com/gce-topology-subblock,switch:cloud.google.com/gce-topology-subblock,"
         "switch:cloud.google.com/gce-topology-block"},
        // OKE: the rack, inside the network block.
        {"oci",
         "block:oci.oraclecloud.com/host.rack_id,switch:oci.oraclecloud.com/host.rack_id,"
         "switch:oci.oraclecloud.com/host.network_block_id"},
        // Slinky's annotation with the topology names its documentation uses.
        {"slinky", "block:slinky:topo-block,switch:slinky:topo-switch"},
        // topograph: tier 0 is the switch closest to the node; the
        // accelerator domain (NVLink) is the block.
        {"topograph",
         "block:accelerator.topograph.run/domain,switch:fabric.topograph.run/tier-0,"
         "switch:fabric.topograph.run/tier-1,switch:fabric.topograph.run/tier-2,"
         "switch:fabric.topograph.run/tier-3"},
    };
    return presets;
}

std::string TopologySpec::text() const { return preset.empty() ? spec_list_text(entries) : preset; }

TopologySpecResult parse_topology_from(const std::string &text) {
    const std::string t = trim(text);
    if (t.empty()) return {std::nullopt, "empty: a preset (" + preset_names() + ") or LEVEL:SOURCE,..."};
    for (const auto &[name, list] : topology_presets()) {
        if (lower(t) != name) continue;
        TopologySpecResult r = parse_topology_from(list);
        r.spec->preset = name;
        return r;
    }
    TopologySpec spec;
    for (const std::string &item : split(t, ',')) {
        if (item.empty()) return {std::nullopt, "an empty entry (two commas, or one at an end)"};
        std::string why;
        auto e = parse_entry(item, &why);
        if (!e) {
            for (const auto &[name, _] : topology_presets())
                if (lower(item) == name) return {std::nullopt, "preset '" + name + "' stands alone, not in a list"};
            return {std::nullopt, why};
        }
        spec.entries.push_back(std::move(*e));
    }
    if (std::string why = check_spec(spec); !why.empty()) return {std::nullopt, why};
    return {std::move(spec), ""};
}

TopologyKeys keys_of(const TopologySpec &spec) {
    TopologyKeys k;
    auto add = [](std::vector<std::string> &v, const std::string &key) {
        if (std::find(v.begin(), v.end(), key) == v.end()) v.push_back(key);
    };
    for (const TopologyEntry &e : spec.entries) {
        switch (e.source.kind) {
        case TopologySource::Kind::Label: add(k.labels, e.source.key); break;
        case TopologySource::Kind::Annotation: add(k.annotations, e.source.key); break;
        case TopologySource::Kind::Slinky: add(k.annotations, kSlinkyTopologyAnnotation); break;
        }
    }
    return k;
}

NetworkPosition position_of(const TopologySpec &spec, const KeyValues &labels, const KeyValues &annotations) {
    NetworkPosition p;
    std::string first_missing;  // the innermost switch level not there
    bool any_switch_level = false;
    for (const TopologyEntry &e : spec.entries) {
        std::string why;
        std::vector<std::string> values = values_of(e, labels, annotations, &why);
        if (e.level == TopologyLevel::Block) {
            if (values.empty())
                p.why_no_block = why;
            else
                p.block = slurm_topology_name(values.front());
            continue;
        }
        any_switch_level = true;
        if (!p.why_no_switches.empty()) continue;  // already unusable
        if (values.empty()) {
            if (first_missing.empty()) first_missing = why;
            continue;
        }
        if (!first_missing.empty()) {
            // Present further out than a missing level: the path has a gap.
            p.why_no_switches = first_missing + " but " +
                                (e.source.kind == TopologySource::Kind::Label ? "label " : "annotation ") +
                                e.source.key + " (further out) is set";
            continue;
        }
        for (const std::string &v : values) p.switches.push_back(slurm_topology_name(v));
    }
    if (!p.why_no_switches.empty()) {
        p.switches.clear();
    } else if (any_switch_level && p.switches.empty()) {
        p.why_no_switches = first_missing;  // the leaf is missing
    }
    return p;
}

std::string slurm_topology_name(std::string_view value) {
    const bool safe_chars = std::all_of(value.begin(), value.end(), [](char c) {
        return alnum(c) || c == '-' || c == '_' || c == '.';
    });
    if (!value.empty() && value.size() <= 63 && safe_chars && alnum(value.front()) && !ends_like_mapped(value))
        return std::string(value);
    // FNV-1a, 64 bits: stable across builds and platforms.
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : value) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    std::string cleaned;
    for (char c : value.substr(0, 49)) cleaned += (alnum(c) || c == '-' || c == '_' || c == '.') ? c : '_';
    if (cleaned.empty() || !alnum(cleaned.front())) cleaned.insert(cleaned.begin(), 'x');
    if (cleaned.size() > 49) cleaned.resize(49);
    return cleaned + "--" + hex48(h);
}

}  // namespace k8s_cons_tres
