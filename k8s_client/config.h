// SPDX-License-Identifier: GPL-2.0-or-later
// Where the client finds the API server and how it authenticates: from a
// kubeconfig file or from the in-cluster service account. Every error names
// the file, the key and the fix.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

namespace k8s_cons_tres::k8s {

class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Config {
    std::string server;                 // "https://host:port", no trailing '/'
    std::string caFile;                 // PEM file, or ""
    std::string caData;                 // PEM bytes (already base64-decoded), or ""
    bool insecureSkipTlsVerify = false; // only when the kubeconfig says so explicitly
    std::string token;                  // static bearer token, or ""
    std::string tokenFile;              // re-read when it changes, or ""
    std::string clientCertFile, clientKeyFile;
    std::string clientCertData, clientKeyData;  // PEM bytes, or ""
    std::string ns = "default";         // namespace of the context / service account
    std::string source;                 // file it came from, for messages
    std::string context;                // kubeconfig context used, "" in-cluster
};

// Reads a kubeconfig. context "" means current-context. Relative file paths
// are resolved against the kubeconfig's directory, as kubectl does.
Config loadKubeconfig(const std::string &path, const std::string &context = "");

using EnvLookup = std::function<std::optional<std::string>(const char *)>;
std::optional<std::string> processEnv(const char *name);

inline constexpr const char *kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// In-cluster: token, ca.crt and namespace under dir; host and port from
// KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT.
Config loadInCluster(const std::string &dir = kServiceAccountDir,
                     const EnvLookup &env = processEnv);

// Standard base64 (kubeconfig "*-data" fields). Throws std::invalid_argument.
std::string base64Decode(const std::string &in);

// Reads a whole file; throws ConfigError naming key and fix on failure.
std::string readFileFor(const std::string &path, const std::string &source,
                        const std::string &key, const std::string &fix);

}  // namespace k8s_cons_tres::k8s
