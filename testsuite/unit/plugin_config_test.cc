// SPDX-License-Identifier: GPL-2.0-or-later
// k8s_cons_tres.conf: every key, every way a value can be wrong.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "core/plugin_config.h"

using k8s_cons_tres::parse_plugin_config;

namespace {
std::string error_of(const std::string &text) {
    auto r = parse_plugin_config(text, "/etc/slurm/k8s_cons_tres.conf");
    REQUIRE_FALSE(r.config.has_value());
    return r.error;
}
}  // namespace

TEST_CASE("a full configuration is read key by key, case-insensitively") {
    const std::string text = R"(# comment line
Kubeconfig = /etc/slurm/kubeconfig   # trailing comment
claimnamespace=hpc
ClusterLabel=cluster-a
CPUDriver=dra.cpu
GPUDrivers=gpu.nvidia.com, gpu.example.com
CPUDeviceClass=dra.cpu
GPUDeviceClass=gpu.example.com
GPUIndexOrder=PciBusId
K8sNodeName=%n.k8s
NodeNameMap=n1:worker-1,n2:worker-2
StaleAfter=120
RequestTimeout=5
ClaimQueueLimit=5000
MaxInflightWrites=3
LaunchGateRequeues=0
DebugLevel=debug
)";
    auto r = parse_plugin_config(text, "k.conf");
    REQUIRE(r.error.empty());
    const auto &c = *r.config;
    CHECK(c.kubeconfig == "/etc/slurm/kubeconfig");
    CHECK(c.claim_namespace == "hpc");
    CHECK(c.cluster_label == "cluster-a");
    CHECK(c.gpu_drivers == std::vector<std::string>{"gpu.nvidia.com", "gpu.example.com"});
    CHECK(c.gpu_device_class == "gpu.example.com");
    CHECK(c.gres_by_pci_bus);
    CHECK(c.stale_after == std::chrono::seconds(120));
    CHECK(c.request_timeout == std::chrono::seconds(5));
    CHECK(c.claim_queue_limit == 5000);
    CHECK(c.max_inflight_writes == 3);
    CHECK(c.launch_gate_requeues == 0);
    CHECK(c.log_level == 3);
    CHECK(c.k8s_node_name("n1") == "worker-1");
    CHECK(c.k8s_node_name("n3") == "n3.k8s");
}

TEST_CASE("defaults are what a DRA cluster with the NVIDIA driver needs") {
    auto r = parse_plugin_config("InCluster=yes\n", "k.conf");
    REQUIRE(r.config);
    CHECK(r.config->claim_namespace == "slurm");
    CHECK(r.config->cpu_driver == "dra.cpu");
    CHECK(r.config->gpu_drivers == std::vector<std::string>{"gpu.nvidia.com"});
    CHECK_FALSE(r.config->insecure_skip_tls_verify);
    CHECK(r.config->stale_after == std::chrono::seconds(60));
    CHECK(r.config->k8s_node_name("k8s-n1") == "k8s-n1");
}

TEST_CASE("an unknown key names the file, the line and the known keys") {
    auto e = error_of("InCluster=yes\n\nStaleAftr=30\n");
    CHECK(e.rfind("/etc/slurm/k8s_cons_tres.conf:3: unknown key 'StaleAftr'", 0) == 0);
    CHECK(e.find("StaleAfter") != std::string::npos);
}

TEST_CASE("bad values name the key, the value and what is expected") {
    CHECK(error_of("InCluster=maybe\n") ==
          "/etc/slurm/k8s_cons_tres.conf:1: bad value for InCluster='maybe': expected yes or no");
    CHECK(error_of("InCluster=yes\nStaleAfter=1\n").find(":2: bad value for StaleAfter='1': must be between 5") !=
          std::string::npos);
    CHECK(error_of("InCluster=yes\nStaleAfter=10s\n").find("whole number of seconds") != std::string::npos);
    CHECK(error_of("InCluster=yes\nClaimNamespace=Slurm_Jobs\n").find("not a valid namespace") != std::string::npos);
    CHECK(error_of("InCluster=yes\nGPUDrivers=gpu.nvidia.com,GPU!\n").find("'GPU!' is not a DNS subdomain") !=
          std::string::npos);
    CHECK(error_of("InCluster=yes\nGPUIndexOrder=uuid\n").find("expected minor or pcibusid") != std::string::npos);
    CHECK(error_of("InCluster=yes\nK8sNodeName=worker\n").find("must contain %n") != std::string::npos);
    CHECK(error_of("InCluster=yes\nNodeNameMap=n1\n").find("expected slurmname:k8sname") != std::string::npos);
    CHECK(error_of("InCluster=yes\nDebugLevel=loud\n").find("expected error, info, verbose or debug") !=
          std::string::npos);
    CHECK(error_of("InCluster=yes\nClaimQueueLimit=10\n").find("from 100 to") != std::string::npos);
    CHECK(error_of("InCluster=yes\nMaxInflightWrites=0\n").find("from 1 to 64") != std::string::npos);
    CHECK(error_of("APIServer=ftp://x\nTokenFile=/t\n").find("expected an https:// URL") != std::string::npos);
    CHECK(error_of("InCluster=yes\nKubeconfig=\n").find("must not be empty") != std::string::npos);
}

TEST_CASE("malformed lines and repeated keys are errors") {
    CHECK(error_of("InCluster=yes\nthis is not a setting\n").find(":2: expected Key=Value") != std::string::npos);
    CHECK(error_of("InCluster=yes\nincluster=no\n").find(":2: InCluster already set on line 1") !=
          std::string::npos);
}

TEST_CASE("exactly one way to reach the API server") {
    CHECK(error_of("# empty\n").find("no API server configured") != std::string::npos);
    CHECK(error_of("InCluster=yes\nKubeconfig=/k\n").find("set only one") != std::string::npos);
    CHECK(error_of("APIServer=https://10.0.0.1:6443\n").find("needs TokenFile=") != std::string::npos);
    CHECK(error_of("APIServer=http://10.0.0.1:6443\nTokenFile=/t\n").find("must be https://") != std::string::npos);
    auto ok = parse_plugin_config("APIServer=https://10.0.0.1:6443\nTokenFile=/t\nCertificateAuthority=/ca\n", "k");
    REQUIRE(ok.config);
    CHECK(ok.config->api_server == "https://10.0.0.1:6443");
}

TEST_CASE("loading a file: missing file is a clear error, a real file parses") {
    auto missing = k8s_cons_tres::load_plugin_config("/nonexistent/k8s_cons_tres.conf");
    REQUIRE_FALSE(missing.config);
    CHECK(missing.error.find("/nonexistent/k8s_cons_tres.conf: cannot read") == 0);

    char path[] = "/tmp/k8sconfXXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    std::ofstream(path) << "InCluster=yes\nDebugLevel=verbose\n";
    auto r = k8s_cons_tres::load_plugin_config(path);
    std::remove(path);
    REQUIRE(r.config);
    CHECK(r.config->log_level == 2);
}

TEST_CASE("the shipped example configuration is valid") {
    auto r = k8s_cons_tres::load_plugin_config(K8S_CONS_TRES_SRCDIR "/etc/k8s_cons_tres.conf.example");
    INFO(r.error);
    REQUIRE(r.config);
    CHECK(r.config->kubeconfig == "/etc/slurm/k8s-cons-tres.kubeconfig");
    CHECK(r.config->kubernetes_nodes == "ALL");
}

TEST_CASE("node discovery settings") {
    auto r = parse_plugin_config("InCluster=yes\nNodeDiscovery=external\n"
                                 "NodeSelector=slurm.example.com/external=true\nNodeFeatures=k8s,gpu_pool\n",
                                 "k8s_cons_tres.conf");
    REQUIRE(r.config);
    CHECK(r.config->node_discovery);
    CHECK(r.config->node_selector == "slurm.example.com/external=true");
    CHECK(r.config->node_features == std::vector<std::string>{"k8s", "gpu_pool"});
    auto d = parse_plugin_config("InCluster=yes\n", "k8s_cons_tres.conf");
    REQUIRE(d.config);
    CHECK_FALSE(d.config->node_discovery);  // nodes come from slurm.conf unless asked
    CHECK(d.config->node_features == std::vector<std::string>{"k8s"});
    CHECK(error_of("InCluster=yes\nNodeDiscovery=yes\n").find("expected none or external") != std::string::npos);
    CHECK(error_of("InCluster=yes\nNodeFeatures=k8s,a-b\n").find("not a Slurm feature name") != std::string::npos);
    CHECK(error_of("InCluster=yes\nNodeSelector=a b\n").find("label selector") != std::string::npos);
}

TEST_CASE("ExternalJobClaims: plugin by default, bridge when slurm-bridge writes them") {
    auto d = parse_plugin_config("InCluster=yes\n", "k8s_cons_tres.conf");
    REQUIRE(d.config);
    CHECK_FALSE(d.config->bridge_job_claims);
    auto b = parse_plugin_config("InCluster=yes\nExternalJobClaims=Bridge\n", "k8s_cons_tres.conf");
    REQUIRE(b.config);
    CHECK(b.config->bridge_job_claims);
    CHECK(error_of("InCluster=yes\nExternalJobClaims=none\n").find("expected plugin") != std::string::npos);
}
