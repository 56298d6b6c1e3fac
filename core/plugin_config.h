// SPDX-License-Identifier: GPL-2.0-or-later
// k8s_cons_tres.conf: the plugin's own configuration, beside slurm.conf.
// Slurm style: one Key=Value per line, '#' starts a comment, keys are
// case-insensitive. Anything unknown or malformed is an error that names the
// file and line, so a typo stops start-up instead of silently changing policy.
#pragma once

#include "core/network_position.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace k8s_cons_tres {

struct PluginConfig {
    // Where the API server is: a kubeconfig, or in-cluster service account,
    // or an explicit server URL with token file and CA.
    std::string kubeconfig;          // Kubeconfig=
    bool in_cluster = false;         // InCluster=yes
    std::string api_server;          // APIServer=
    std::string token_file;          // TokenFile=
    std::string ca_file;             // CertificateAuthority=
    bool insecure_skip_tls_verify = false;  // InsecureSkipTLSVerify= (only when set explicitly)

    std::string claim_namespace = "slurm";  // ClaimNamespace=
    std::string cluster_label;              // ClusterLabel= (default: Slurm ClusterName)

    std::string cpu_driver = "dra.cpu";                        // CPUDriver=
    std::vector<std::string> gpu_drivers = {"gpu.nvidia.com"};  // GPUDrivers=
    std::string cpu_device_class = "dra.cpu";                  // CPUDeviceClass=
    std::string gpu_device_class = "gpu.nvidia.com";           // GPUDeviceClass=
    bool gres_by_pci_bus = false;                              // GPUIndexOrder=minor|pcibusid

    // Slurm node name -> Kubernetes node name: "%n" is the Slurm name.
    std::string node_name_format = "%n";                 // K8sNodeName=
    std::map<std::string, std::string> node_name_map;    // NodeNameMap=slurm:k8s,...
    // Slurm hostlist of the Kubernetes nodes; "ALL" (default) means every
    // Slurm node, so that none is used before its slices are known.
    std::string kubernetes_nodes = "ALL";                // KubernetesNodes=

    std::chrono::seconds stale_after{60};        // StaleAfter=
    std::chrono::seconds request_timeout{10};    // RequestTimeout=
    size_t claim_queue_limit = 100000;           // ClaimQueueLimit=
    int max_inflight_writes = 32;                // MaxInflightWrites=
    int log_level = 1;                           // DebugLevel=error|info|verbose|debug
    // Holder pods: one pod per job and Kubernetes node consumes the job's
    // claims, so kubelet prepares them and the drivers carve the devices out
    // of the node's shared pool. The image runs nothing; the default is the
    // pause image kubelet itself uses as sandbox image, fully qualified so no
    // registry search list can resolve it elsewhere (sites with a mirror name
    // it in HolderImage=).
    bool holder_pods = true;                                     // HolderPods=
    std::string holder_image = "registry.k8s.io/pause:3.10";     // HolderImage=
    std::string holder_priority_class = "slurm-k8s-cons-tres-holder";  // HolderPriorityClass=

    // The launch gate: a job on Kubernetes nodes starts its tasks only once
    // Kubernetes shows its claims allocated (claims), and with holder pods
    // also Running, i.e. prepared by the drivers (prepared); off starts at
    // once. Needs PrEpPlugins=k8s_cons_tres in slurm.conf. A job still gated
    // after LaunchGateTimeout= goes back to the queue.
    enum class LaunchGate { Off, Claims, Prepared };
    LaunchGate launch_gate = LaunchGate::Claims;          // LaunchGate=off|claims|prepared
    std::chrono::seconds launch_gate_timeout{60};        // LaunchGateTimeout=
    // A job sent back that many times in a row by the gate (a timeout, a
    // pod's claim on its device) is held the next time: no endless loop.
    uint32_t launch_gate_requeues = 3;                   // LaunchGateRequeues=
    // Being able to write counts as freshness: Kubernetes nodes take no new
    // jobs while a started job's claims have not shown in Kubernetes for
    // this long (or writes are refused, the queue is full, the Lease is
    // not held).
    std::chrono::seconds write_stale_after{10};          // WriteStaleAfter=

    // Slurm EXTERNAL nodes (Slurm 25.05+): with NodeDiscovery=external every
    // Kubernetes node matching NodeSelector (a label selector, "" = all)
    // whose slices are complete becomes an EXTERNAL Slurm node of the same
    // name, with its slices' topology, featured NodeFeatures plus its GPU
    // model, so that a NodeSet by feature puts it into partitions.
    bool node_discovery = false;                         // NodeDiscovery=none|external
    std::string node_selector;                           // NodeSelector=
    std::vector<std::string> node_features = {"k8s"};    // NodeFeatures=
    // ExternalJobClaims=bridge: slurm-bridge writes the claims of the
    // external jobs whose AdminComment names its pods, so the plugin writes
    // none for them. With it or NodeDiscovery=external the plugin watches
    // slurm-bridge's pods, so that a claim for one counts as its job's.
    bool bridge_job_claims = false;                      // ExternalJobClaims=plugin|bridge

    // Network topology: where a node's block and switches come from (a
    // preset or LEVEL:SOURCE,...; network_position.h), and the Slurm
    // topology of topology.yaml the nodes belong to ("" for none).
    std::optional<TopologySpec> topology_from;           // TopologyFrom=
    std::string topology_name;                           // TopologyName=

    // Not from the file: where the admin view (k8s_cons_tres_view.json) is
    // written, slurmctld's StateSaveLocation; "" for none.
    std::string state_dir;
    // Not from the file: the slurmctld this process replaced in place
    // (24.11+ reconfigure), whose Lease it carries on; 0 for none.
    long replaced_pid = 0;

    // The Kubernetes node name of a Slurm node.
    std::string k8s_node_name(const std::string &slurm_node) const;
};

struct ConfigResult {
    std::optional<PluginConfig> config;  // set on success
    std::string error;                   // "FILE:LINE: what is wrong; how to fix", on failure
};

// Parses text as if read from `path` (used in messages).
ConfigResult parse_plugin_config(const std::string &text, const std::string &path);

// Reads and parses `path`. A missing file is an error too: the caller
// decides whether that means "run as plain cons_tres".
ConfigResult load_plugin_config(const std::string &path);

}  // namespace k8s_cons_tres
