// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/config.h"
#include "k8s_client/http_client.h"
#include "testsuite/unit/client_test_util.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres::k8s;
using k8s_cons_tres::test::TempDir;

namespace {

// base64 of "PEM-CA" and "PEM-CERT", "PEM-KEY"
const char *kCaB64 = "UEVNLUNB";
const char *kCertB64 = "UEVNLUNFUlQ=";
const char *kKeyB64 = "UEVNLUtFWQ==";

std::string kubeconfig(const std::string &clusterBody, const std::string &userBody,
                       const std::string &extraContext = "") {
    return "apiVersion: v1\nkind: Config\ncurrent-context: main\n"
           "clusters:\n- name: c1\n  cluster:\n" + clusterBody +
           "users:\n- name: u1\n  user:\n" + userBody +
           "contexts:\n- name: main\n  context:\n    cluster: c1\n    user: u1\n"
           "    namespace: slurm\n" + extraContext;
}

void requireErrorMentions(const std::string &path, std::initializer_list<std::string> parts) {
    try {
        loadKubeconfig(path);
        FAIL("expected a ConfigError");
    } catch (const ConfigError &e) {
        std::string msg = e.what();
        INFO(msg);
        for (const auto &p : parts)
            CHECK(msg.find(p) != std::string::npos);
        CHECK(msg.find("fix:") != std::string::npos);
    }
}

}  // namespace

TEST_CASE("kubeconfig with inline CA data and token", "[config]") {
    TempDir d;
    auto p = d.file("kc", kubeconfig(std::string("    server: https://127.0.0.1:6443/\n"
                                                 "    certificate-authority-data: ") + kCaB64 + "\n",
                                     "    token: s3cret\n"));
    Config c = loadKubeconfig(p);
    CHECK(c.server == "https://127.0.0.1:6443");
    CHECK(c.caData == "PEM-CA");
    CHECK(c.caFile.empty());
    CHECK(c.token == "s3cret");
    CHECK(c.ns == "slurm");
    CHECK(c.context == "main");
    CHECK_FALSE(c.insecureSkipTlsVerify);
    CHECK(c.source == p);
}

TEST_CASE("kubeconfig file references resolve relative to the kubeconfig", "[config]") {
    TempDir d;
    d.file("ca.crt", "CA");
    d.file("tok", "abc\n");
    d.file("c.pem", "CERT");
    d.file("k.pem", "KEY");
    auto p = d.file("kc", kubeconfig("    server: https://h:1\n    certificate-authority: ca.crt\n",
                                     "    tokenFile: tok\n    client-certificate: c.pem\n"
                                     "    client-key: k.pem\n"));
    Config c = loadKubeconfig(p);
    CHECK(c.caFile == d.path() + "/ca.crt");
    CHECK(c.tokenFile == d.path() + "/tok");
    CHECK(c.clientCertFile == d.path() + "/c.pem");
    CHECK(c.clientKeyFile == d.path() + "/k.pem");
    CHECK(c.token.empty());
}

TEST_CASE("kubeconfig client certificate data and explicit insecure flag", "[config]") {
    TempDir d;
    auto p = d.file("kc", kubeconfig("    server: https://h:1\n    insecure-skip-tls-verify: true\n",
                                     std::string("    client-certificate-data: ") + kCertB64 +
                                         "\n    client-key-data: " + kKeyB64 + "\n"));
    Config c = loadKubeconfig(p);
    CHECK(c.insecureSkipTlsVerify);
    CHECK(c.clientCertData == "PEM-CERT");
    CHECK(c.clientKeyData == "PEM-KEY");
}

TEST_CASE("kubeconfig selects a named context over current-context", "[config]") {
    TempDir d;
    std::string extra = "- name: other\n  context:\n    cluster: c2\n    user: u1\n";
    std::string text = kubeconfig("    server: https://one:1\n", "    token: t\n", extra) +
                       "";
    // add a second cluster
    text.replace(text.find("users:"), 0,
                 "- name: c2\n  cluster:\n    server: https://two:2\n");
    auto p = d.file("kc", text);
    CHECK(loadKubeconfig(p).server == "https://one:1");
    Config c = loadKubeconfig(p, "other");
    CHECK(c.server == "https://two:2");
    CHECK(c.ns == "default");
    CHECK(c.context == "other");
}

TEST_CASE("broken kubeconfigs name the file, key and fix", "[config]") {
    TempDir d;
    SECTION("missing file") {
        requireErrorMentions(d.path() + "/nope", {d.path() + "/nope", "cannot be read"});
    }
    SECTION("invalid YAML") {
        auto p = d.file("kc", "clusters: [\n  - {name: x\n");
        requireErrorMentions(p, {p, "not valid YAML"});
    }
    SECTION("no current-context") {
        auto p = d.file("kc", "apiVersion: v1\nclusters: []\n");
        requireErrorMentions(p, {p, "current-context"});
    }
    SECTION("context refers to a missing cluster") {
        std::string t = kubeconfig("    server: https://h:1\n", "    token: t\n");
        t.replace(t.find("cluster: c1"), 11, "cluster: zz");
        auto p = d.file("kc", t);
        requireErrorMentions(p, {p, "clusters[name=zz]"});
    }
    SECTION("missing server") {
        auto p = d.file("kc", kubeconfig("    insecure-skip-tls-verify: false\n", "    token: t\n"));
        requireErrorMentions(p, {p, "clusters[name=c1].cluster.server", "is missing"});
    }
    SECTION("server is not a URL") {
        auto p = d.file("kc", kubeconfig("    server: h:1\n", "    token: t\n"));
        requireErrorMentions(p, {"clusters[name=c1].cluster.server", "https://"});
    }
    SECTION("plain http server is refused as APIServer=http:// is") {
        auto p = d.file("kc", kubeconfig("    server: http://10.0.0.1:6443\n", "    token: t\n"));
        requireErrorMentions(p, {p, "clusters[name=c1].cluster.server", "http://10.0.0.1:6443",
                                 "must be https://", "never sent in clear"});
    }
    SECTION("bad base64") {
        auto p = d.file("kc", kubeconfig("    server: https://h:1\n"
                                         "    certificate-authority-data: '!!!'\n",
                                         "    token: t\n"));
        requireErrorMentions(p, {"certificate-authority-data", "base64"});
    }
    SECTION("unreadable CA file") {
        auto p = d.file("kc", kubeconfig("    server: https://h:1\n"
                                         "    certificate-authority: /nonexistent/ca\n",
                                         "    token: t\n"));
        requireErrorMentions(p, {"certificate-authority", "/nonexistent/ca"});
    }
    SECTION("unreadable token file") {
        auto p = d.file("kc", kubeconfig("    server: https://h:1\n", "    tokenFile: missing\n"));
        requireErrorMentions(p, {"users[name=u1].user.tokenFile"});
    }
    SECTION("certificate without key") {
        auto p = d.file("kc", kubeconfig("    server: https://h:1\n",
                                         std::string("    client-certificate-data: ") +
                                             kCertB64 + "\n"));
        requireErrorMentions(p, {"client-key", "both"});
    }
    SECTION("no credentials") {
        auto p = d.file("kc", kubeconfig("    server: https://h:1\n", "    {}\n"));
        requireErrorMentions(p, {"users[name=u1].user", "credentials"});
    }
    SECTION("insecure flag is not a boolean") {
        auto p = d.file("kc", kubeconfig("    server: https://h:1\n"
                                         "    insecure-skip-tls-verify: maybe\n",
                                         "    token: t\n"));
        requireErrorMentions(p, {"insecure-skip-tls-verify", "boolean"});
    }
}

TEST_CASE("in-cluster configuration", "[config]") {
    TempDir d;
    d.file("token", "tok-1\n");
    d.file("ca.crt", "CA");
    d.file("namespace", "slurm-ns\n");
    auto env = [](const char *name) -> std::optional<std::string> {
        if (std::string(name) == "KUBERNETES_SERVICE_HOST")
            return "10.0.0.1";
        if (std::string(name) == "KUBERNETES_SERVICE_PORT")
            return "443";
        return std::nullopt;
    };
    Config c = loadInCluster(d.path(), env);
    CHECK(c.server == "https://10.0.0.1:443");
    CHECK(c.tokenFile == d.path() + "/token");
    CHECK(c.token.empty());  // always read from the file, so rotation is seen
    CHECK(c.caFile == d.path() + "/ca.crt");
    CHECK(c.ns == "slurm-ns");
    CHECK_FALSE(c.insecureSkipTlsVerify);

    auto env6 = [](const char *name) -> std::optional<std::string> {
        return std::string(name) == "KUBERNETES_SERVICE_HOST" ? "fd00::1" : "6443";
    };
    CHECK(loadInCluster(d.path(), env6).server == "https://[fd00::1]:6443");
}

TEST_CASE("in-cluster errors", "[config]") {
    TempDir d;
    auto noEnv = [](const char *) -> std::optional<std::string> { return std::nullopt; };
    auto env = [](const char *) -> std::optional<std::string> { return "1"; };
    CHECK_THROWS_WITH(loadInCluster(d.path(), noEnv),
                      Catch::Contains("KUBERNETES_SERVICE_HOST") && Catch::Contains("fix:"));
    CHECK_THROWS_WITH(loadInCluster(d.path(), env),
                      Catch::Contains(d.path() + "/token") && Catch::Contains("fix:"));
    d.file("token", "  \n");
    CHECK_THROWS_WITH(loadInCluster(d.path(), env), Catch::Contains("empty"));
    d.file("token", "t");
    CHECK_THROWS_WITH(loadInCluster(d.path(), env), Catch::Contains("ca.crt"));
    d.file("ca.crt", "CA");
    CHECK(loadInCluster(d.path(), env).ns == "default");  // no namespace file
}

TEST_CASE("base64 decoding", "[config]") {
    CHECK(base64Decode("") == "");
    CHECK(base64Decode("YQ==") == "a");
    CHECK(base64Decode("YWI=") == "ab");
    CHECK(base64Decode("YWJj") == "abc");
    CHECK(base64Decode("YW\nJj") == "abc");
    CHECK_THROWS_AS(base64Decode("Y*=="), std::invalid_argument);
    CHECK_THROWS_AS(base64Decode("YQ==YQ"), std::invalid_argument);
}

TEST_CASE("token files are re-read when they change", "[config][token]") {
    TempDir d;
    auto path = d.file("token", "first-token\n");
    Config c;
    c.tokenFile = path;
    TokenSource ts(c);
    CHECK(ts.token() == "first-token");
    // Rotation as kubelet does it: a new file renamed over the old one.
    d.file("token.new", "second-token-longer\n");
    std::filesystem::rename(d.path() + "/token.new", path);
    CHECK(ts.token() == "second-token-longer");
    std::filesystem::remove(path);
    CHECK(ts.token() == "second-token-longer");  // keep the last good one meanwhile
    Config fixed;
    fixed.token = "static";
    CHECK(TokenSource(fixed).token() == "static");
}
