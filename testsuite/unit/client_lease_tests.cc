// SPDX-License-Identifier: GPL-2.0-or-later
// The Lease's name and this controller's identity: distinct clusters never
// share a Lease, distinct controllers never share an identity.
#include "k8s_sync/claim_json.h"
#include "k8s_sync/lease.h"

#include <catch2/catch.hpp>

#include <regex>
#include <sys/wait.h>
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

TEST_CASE("a holder of this host whose process is gone need not be waited out") {
    const std::string mine = controllerIdentity();
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0)
        _exit(0);
    REQUIRE(waitpid(child, nullptr, 0) == child);  // reaped: the pid names no process
    const std::string p = "_p" + std::to_string(getpid()) + "_";
    const size_t at = mine.find(p);
    REQUIRE(at != std::string::npos);
    const std::string gone = mine.substr(0, at) + "_p" + std::to_string(child) + "_" + mine.substr(at + p.size());
    CHECK(heldByGone(gone));
    CHECK_FALSE(heldByGone(mine));  // this process lives
    // pid 1 lives (here, or in any container this runs in)
    CHECK_FALSE(heldByGone(mine.substr(0, at) + "_p1_" + mine.substr(at + p.size())));
    // another host, or another boot or pid namespace: its pids are not ours to look up
    CHECK_FALSE(heldByGone("other-host" + gone.substr(gone.find("_p"))));
    const size_t t = gone.find("_t");
    REQUIRE(t != std::string::npos);
    CHECK_FALSE(heldByGone(gone.substr(0, t) + "_t00000000.1" + gone.substr(gone.find('_', t + 1))));
    // an identity of the old form (no process table) is waited out as before
    CHECK_FALSE(heldByGone(gone.substr(0, t) + gone.substr(gone.find('_', t + 1))));
    CHECK_FALSE(heldByGone("other-controller"));
    CHECK_FALSE(heldByGone(""));
}
