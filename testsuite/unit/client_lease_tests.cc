// SPDX-License-Identifier: GPL-2.0-or-later
// The Lease's name and this controller's identity: distinct clusters never
// share a Lease, distinct controllers never share an identity.
#include "k8s_sync/claim_json.h"
#include "k8s_sync/lease.h"

#include <catch2/catch.hpp>

#include <regex>
#include <unistd.h>

using namespace k8s_cons_tres::k8s;

TEST_CASE("distinct cluster names never share a Lease") {
    CHECK(leaseName("hpc1") == "slurm-k8s-cons-tres-hpc1");
    // each was "slurm-k8s-cons-tres-hpc-1" once
    CHECK(leaseName("hpc_1") != leaseName("hpc-1"));
    CHECK(leaseName("HPC-1") != leaseName("hpc-1"));
    CHECK(leaseName("hpc.1") != leaseName("hpc-1"));
    const std::regex dns("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
    const std::string names[] = {"hpc_1", "HPC-1", "hpc.1", "-x-", std::string(300, 'z'), "", "ü"};
    for (const std::string &c : names) {
        const std::string n = leaseName(c);
        CHECK(std::regex_match(n, dns));
        CHECK(n.size() <= 63);
    }
}

TEST_CASE("a controller's identity is its host and a per-start id") {
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    const std::string a = controllerIdentity(), b = controllerIdentity();
    CHECK(a.rfind(std::string(host) + "_", 0) == 0);
    CHECK(a != b);  // two controllers on one host are two holders
}

TEST_CASE("a slurmctld replaced in place by reconfigure is known by its pid on this host") {
    const std::string mine = controllerIdentity();
    CHECK(heldByReplaced(mine, getpid()));  // 24.11+ attached mode: exec in place, same pid
    CHECK_FALSE(heldByReplaced(mine, getpid() + 1));
    CHECK_FALSE(heldByReplaced(mine, 0));  // not started by a reconfigure
    // the same pid on another host is another process
    const std::string elsewhere = "other-host" + mine.substr(mine.find("_p"));
    CHECK_FALSE(heldByReplaced(elsewhere, getpid()));
    // a pid that only begins with ours is another process
    CHECK_FALSE(heldByReplaced(mine, getpid() / 10));
    CHECK_FALSE(heldByReplaced("other-controller", getpid()));
}
