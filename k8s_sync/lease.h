// SPDX-License-Identifier: GPL-2.0-or-later
// Leader election on a coordination.k8s.io/v1 Lease in the claim namespace,
// the way client-go's leaderelection does it: only the holder writes and
// reconciles claims, so two controllers that both believe they are in
// charge (a split brain) never both write. Another holder's lease counts as
// expired when its resourceVersion has not changed for leaseDurationSeconds
// by our own clock, so clock skew between hosts does not matter.
#pragma once

#include "k8s_client/http_client.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace k8s_cons_tres::k8s {

struct LeaseOptions {
    std::string ns;        // the claim namespace
    std::string name;      // one lease per Slurm cluster (leaseName)
    std::string identity;  // this controller (controllerIdentity)
    // The slurmctld this process replaced in place (24.11+ "scontrol
    // reconfigure" execs a new one and the old one exits without a word):
    // its lease is taken over at once. 0: none.
    long replaced_pid = 0;
    std::chrono::seconds duration{15};
};

// The Lease of a Slurm cluster: distinct cluster names never share one
// ("hpc_1" and "hpc-1" differ): a name that is not a DNS label as it is
// carries a hash of itself.
std::string leaseName(const std::string &cluster);

class LeaseKeeper {
public:
    using Clock = std::chrono::steady_clock;
    LeaseKeeper(std::shared_ptr<const Config> cfg, LeaseOptions opts, ClientOptions copts, Logger log);
    ~LeaseKeeper();
    LeaseKeeper(const LeaseKeeper &) = delete;
    LeaseKeeper &operator=(const LeaseKeeper &) = delete;

    // One attempt to acquire or renew; blocking I/O, so the feed thread
    // calls it, never slurmctld's scheduling path. Returns whether the API
    // server answered the Lease's GET (found or not found).
    bool tick();
    // Held, and renewed recently enough that no other controller can have
    // taken it over (a third of the duration is kept as margin).
    bool held() const;
    // The same question for another thread (the claim writer asks it before
    // every request it sends); valid after this keeper is gone (false then).
    std::function<bool()> heldCheck() const;
    // Gives a held lease up at once (holderIdentity cleared), so that the
    // controller now in charge need not wait for it to lapse.
    void release();
    // Aborts a request in flight (shutdown).
    void stop();
    const LeaseOptions &options() const { return opts_; }

private:
    bool write(const std::string &method, const std::string &path, const std::string &body);
    std::string body(const std::string &rv, int64_t transitions, bool acquire,
                     const std::string &holder) const;

    LeaseOptions opts_;
    Logger log_;
    std::shared_ptr<Stopper> stop_;
    Client client_;
    // Clock ticks; 0: not held. Shared with heldCheck()'s callers.
    std::shared_ptr<std::atomic<int64_t>> held_until_ = std::make_shared<std::atomic<int64_t>>(0);
    std::string observed_rv_;             // another holder's last version
    Clock::time_point observed_at_{};
    std::string acquire_time_;
    bool reported_ = false;               // last state logged: held
};

// This host's name, the process id and a per-start id: two controllers
// never share an identity, even on one host. A controller that stopped
// cleanly gave its lease up (release()). One that was killed is waited for
// until its lease lapses, as client-go's leader election does, unless it
// ran on this host in the same process table and its pid is gone
// (heldByGone). The identity names that table: host_p<pid>_t<boot>.<pidns>_<id>.
std::string controllerIdentity();

// Whether a holder identity is that of a process of this host, this boot
// and this pid namespace that no longer exists: killed or crashed, it
// renews nothing any more. A pid another process now has counts as alive.
bool heldByGone(const std::string &holder);

// Whether a holder identity is that of process replaced_pid on this host:
// the slurmctld whose pid Slurm's reconfigure left in the pidfile is the
// only process with that pid until this one starts, so it can be no other.
bool heldByReplaced(const std::string &holder, long replaced_pid);

}  // namespace k8s_cons_tres::k8s
