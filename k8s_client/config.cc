// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace k8s_cons_tres::k8s {
namespace {

[[noreturn]] void fail(const std::string &file, const std::string &key,
                       const std::string &problem, const std::string &fix) {
    throw ConfigError(file + ": " + key + ": " + problem + "; fix: " + fix);
}

std::string dirOf(const std::string &path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string resolve(const std::string &base, const std::string &p) {
    if (p.empty() || p[0] == '/')
        return p;
    return base + "/" + p;
}

std::string trim(std::string s) {
    const char *ws = " \t\r\n";
    s.erase(s.find_last_not_of(ws) + 1);
    s.erase(0, s.find_first_not_of(ws) == std::string::npos ? s.size()
                                                             : s.find_first_not_of(ws));
    return s;
}

// Reads a scalar string field; "" when absent; error when not a scalar.
std::string scalar(const YAML::Node &map, const char *field,
                   const std::string &file, const std::string &where) {
    YAML::Node n = map[field];
    if (!n || n.IsNull())
        return {};
    if (!n.IsScalar())
        fail(file, where + "." + field, "is not a string",
             "write it as a plain string value");
    return n.as<std::string>();
}

bool flag(const YAML::Node &map, const char *field, const std::string &file,
          const std::string &where) {
    YAML::Node n = map[field];
    if (!n || n.IsNull())
        return false;
    try {
        return n.as<bool>();
    } catch (const YAML::Exception &) {
        fail(file, where + "." + field, "is not a boolean",
             "write true or false");
    }
}

// Finds the entry `name` in the list `section` (clusters/users/contexts) and
// returns its inner map (entry[inner]).
YAML::Node findNamed(const YAML::Node &root, const char *section,
                     const char *inner, const std::string &name,
                     const std::string &file) {
    YAML::Node list = root[section];
    if (!list || !list.IsSequence())
        fail(file, section, "is missing or not a list",
             std::string("add a '") + section + "' list");
    for (const auto &entry : list) {
        if (entry["name"] && entry["name"].as<std::string>() == name) {
            YAML::Node body = entry[inner];
            if (!body || !body.IsMap())
                fail(file, std::string(section) + "[name=" + name + "]." + inner,
                     "is missing", std::string("add the '") + inner + "' map");
            return body;
        }
    }
    fail(file, std::string(section) + "[name=" + name + "]", "no such entry",
         std::string("add an entry named '") + name + "' to " + section +
             " or correct the reference to it");
}

std::string decodeData(const std::string &value, const std::string &file,
                       const std::string &key) {
    try {
        return base64Decode(value);
    } catch (const std::invalid_argument &) {
        fail(file, key, "is not valid base64",
             "put the base64 of the PEM file here (base64 -w0 FILE)");
    }
}

void readCluster(Config &c, const YAML::Node &cluster, const std::string &file,
                 const std::string &where) {
    c.server = scalar(cluster, "server", file, where);
    if (c.server.empty())
        fail(file, where + ".server", "is missing",
             "set it to the API server URL, e.g. https://HOST:6443");
    if (c.server.rfind("http://", 0) == 0)  // as APIServer=http:// in k8s_cons_tres.conf
        fail(file, where + ".server",
             "'" + c.server + "' must be https:// (tokens are never sent in clear)",
             "write it as https://HOST:PORT");
    if (c.server.rfind("https://", 0) != 0)
        fail(file, where + ".server", "'" + c.server + "' is not an https:// URL",
             "write it as https://HOST:PORT");
    while (!c.server.empty() && c.server.back() == '/')
        c.server.pop_back();
    std::string base = dirOf(file);
    c.caFile = resolve(base, scalar(cluster, "certificate-authority", file, where));
    std::string caData = scalar(cluster, "certificate-authority-data", file, where);
    if (!caData.empty())
        c.caData = decodeData(caData, file, where + ".certificate-authority-data");
    c.insecureSkipTlsVerify = flag(cluster, "insecure-skip-tls-verify", file, where);
    if (!c.caFile.empty())
        readFileFor(c.caFile, file, where + ".certificate-authority",
                    "point it at a readable PEM CA file");
}

void readUser(Config &c, const YAML::Node &user, const std::string &file,
              const std::string &where) {
    std::string base = dirOf(file);
    c.token = scalar(user, "token", file, where);
    c.tokenFile = resolve(base, scalar(user, "tokenFile", file, where));
    if (!c.tokenFile.empty())
        readFileFor(c.tokenFile, file, where + ".tokenFile",
                    "point it at a readable file holding the bearer token");
    c.clientCertFile = resolve(base, scalar(user, "client-certificate", file, where));
    c.clientKeyFile = resolve(base, scalar(user, "client-key", file, where));
    std::string certData = scalar(user, "client-certificate-data", file, where);
    std::string keyData = scalar(user, "client-key-data", file, where);
    if (!certData.empty())
        c.clientCertData = decodeData(certData, file, where + ".client-certificate-data");
    if (!keyData.empty())
        c.clientKeyData = decodeData(keyData, file, where + ".client-key-data");
    bool hasCert = !c.clientCertFile.empty() || !c.clientCertData.empty();
    bool hasKey = !c.clientKeyFile.empty() || !c.clientKeyData.empty();
    if (hasCert != hasKey)
        fail(file, where + (hasCert ? ".client-key" : ".client-certificate"),
             "is missing while its pair is set",
             "set both client-certificate and client-key (or their -data forms)");
    if (!c.clientCertFile.empty())
        readFileFor(c.clientCertFile, file, where + ".client-certificate",
                    "point it at a readable PEM certificate");
    if (!c.clientKeyFile.empty())
        readFileFor(c.clientKeyFile, file, where + ".client-key",
                    "point it at a readable PEM private key");
    if (c.token.empty() && c.tokenFile.empty() && !hasCert)
        fail(file, where, "has no credentials",
             "set token, tokenFile or client-certificate/client-key");
}

}  // namespace

std::string readFileFor(const std::string &path, const std::string &source,
                        const std::string &key, const std::string &fix) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail(source, key, "cannot read '" + path + "'", fix);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string base64Decode(const std::string &in) {
    auto value = [](char ch) -> int {
        if (ch >= 'A' && ch <= 'Z') return ch - 'A';
        if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
        if (ch >= '0' && ch <= '9') return ch - '0' + 52;
        if (ch == '+') return 62;
        if (ch == '/') return 63;
        return -1;
    };
    std::string out;
    unsigned bits = 0;
    int nbits = 0;
    size_t pad = 0;
    for (char ch : in) {
        if (ch == '\n' || ch == '\r' || ch == ' ')
            continue;
        if (ch == '=') {
            ++pad;
            continue;
        }
        int v = value(ch);
        if (v < 0 || pad)
            throw std::invalid_argument("invalid base64");
        bits = (bits << 6) | unsigned(v);
        nbits += 6;
        if (nbits >= 8) {
            nbits -= 8;
            out.push_back(char((bits >> nbits) & 0xff));
        }
    }
    if (pad > 2 || nbits >= 6)
        throw std::invalid_argument("invalid base64");
    return out;
}

std::optional<std::string> processEnv(const char *name) {
    const char *v = std::getenv(name);
    if (!v)
        return std::nullopt;
    return std::string(v);
}

Config loadKubeconfig(const std::string &path, const std::string &context) {
    YAML::Node root;
    try {
        root = YAML::LoadFile(path);
    } catch (const YAML::BadFile &) {
        fail(path, "(file)", "cannot be read",
             "check the path given as kubeconfig and its permissions");
    } catch (const YAML::Exception &e) {
        fail(path, "(file)", std::string("is not valid YAML: ") + e.what(),
             "repair the YAML syntax");
    }
    if (!root.IsMap())
        fail(path, "(file)", "is not a kubeconfig map",
             "write apiVersion/clusters/users/contexts at the top level");
    Config c;
    c.source = path;
    try {
        c.context = context.empty() ? scalar(root, "current-context", path, "")
                                    : context;
        if (c.context.empty())
            fail(path, "current-context", "is missing",
                 "set current-context or pass a context name");
        YAML::Node ctx = findNamed(root, "contexts", "context", c.context, path);
        std::string where = "contexts[name=" + c.context + "].context";
        std::string clusterName = scalar(ctx, "cluster", path, where);
        std::string userName = scalar(ctx, "user", path, where);
        if (clusterName.empty())
            fail(path, where + ".cluster", "is missing", "name the cluster to use");
        if (userName.empty())
            fail(path, where + ".user", "is missing", "name the user to use");
        std::string ns = scalar(ctx, "namespace", path, where);
        if (!ns.empty())
            c.ns = ns;
        readCluster(c, findNamed(root, "clusters", "cluster", clusterName, path),
                    path, "clusters[name=" + clusterName + "].cluster");
        readUser(c, findNamed(root, "users", "user", userName, path), path,
                 "users[name=" + userName + "].user");
    } catch (const YAML::Exception &e) {
        fail(path, "(file)", std::string("unexpected structure: ") + e.what(),
             "compare with the kubeconfig format written by kubectl config");
    }
    return c;
}

Config loadInCluster(const std::string &dir, const EnvLookup &env) {
    Config c;
    c.source = dir;
    auto host = env("KUBERNETES_SERVICE_HOST");
    auto port = env("KUBERNETES_SERVICE_PORT");
    if (!host || host->empty() || !port || port->empty())
        fail("environment", "KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT",
             "not set, so this is not running in a pod",
             "run inside Kubernetes or configure a kubeconfig instead");
    std::string h = *host;
    if (h.find(':') != std::string::npos)
        h = "[" + h + "]";  // IPv6 literal
    c.server = "https://" + h + ":" + *port;
    c.tokenFile = dir + "/token";
    if (trim(readFileFor(c.tokenFile, c.tokenFile, "token",
                         "mount the service account token (automountServiceAccountToken)"))
            .empty())
        fail(c.tokenFile, "token", "is empty", "mount a valid service account token");
    c.caFile = dir + "/ca.crt";
    readFileFor(c.caFile, c.caFile, "ca.crt", "mount the service account CA bundle");
    std::ifstream nsIn(dir + "/namespace");
    std::string ns;
    if (nsIn && std::getline(nsIn, ns) && !trim(ns).empty())
        c.ns = trim(ns);
    return c;
}

}  // namespace k8s_cons_tres::k8s
