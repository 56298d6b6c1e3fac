/*
 * core_bridge.c - the core runs only inside slurmctld, and only when this
 * plugin is the configured SelectType: slurmctld, srun and the client
 * commands load every select plugin they find, and slurmd loads ours to
 * unpack node and job info; all of those must only forward.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "slurm_compat.h"
#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/run_in_daemon.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "core/k8s_cons_tres.h"
#include "core_bridge.h"
#include "k8s_log.h"


static void core_log(int level, const char *msg)
{
	switch (level) {
	case K8S_CONS_TRES_LOG_ERROR:
		error(PREFIX "%s", msg);
		break;
	case K8S_CONS_TRES_LOG_INFO:
		info(PREFIX "%s", msg);
		break;
	case K8S_CONS_TRES_LOG_VERBOSE:
		verbose(PREFIX "%s", msg);
		break;
	default:
		debug(PREFIX "%s", msg);
		break;
	}
}

/*
 * On 24.11+ "scontrol reconfigure" execs a new slurmctld and the old one
 * exits without finishing its plugins, so its Lease is never given up.
 * Slurm hands the new process the pidfile's descriptor (write-only), and
 * the file still holds the old process's pid: its Lease is carried on.
 */
static long _replaced_pid(void)
{
	char *fd_env = getenv("SLURMCTLD_RECONF_PIDFD");
	char path[64], buf[32] = "";
	ssize_t n = 0;
	int fd;

	if (!getenv("SLURMCTLD_RECONF") || !fd_env)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", atoi(fd_env));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return (n > 0) ? strtol(buf, NULL, 10) : 0;
}

static bool is_our_select_type(void)
{
	return !xstrcmp(slurm_conf.select_type, "select/k8s_cons_tres");
}

extern int core_bridge_start(void)
{
	char err[512];
	char *conf_path;
	struct k8s_cons_tres_start_args args = { 0 };
	int rc;

	if (!running_in_slurmctld() || !is_our_select_type())
		return SLURM_SUCCESS;

	conf_path = get_extra_conf_path("k8s_cons_tres.conf");
	args.conf_path = conf_path;
	args.log = core_log;
	args.cluster_name = slurm_conf.cluster_name;
	args.state_dir = slurm_conf.state_save_location;
	args.replaced_pid = _replaced_pid();
	info(PREFIX "starting in slurmctld, wrapping select/cons_tres, core %s, config %s",
	     k8s_cons_tres_version(), conf_path);
	rc = k8s_cons_tres_start(&args, err, sizeof(err));
	xfree(conf_path);
	if (rc != K8S_CONS_TRES_OK) {
		error(PREFIX "core did not start: %s", err);
		return SLURM_ERROR;
	}
	return SLURM_SUCCESS;
}

extern void core_bridge_stop(void)
{
	if (k8s_cons_tres_running()) {
		k8s_cons_tres_stop();
		info(PREFIX "stopped");
	}
}
