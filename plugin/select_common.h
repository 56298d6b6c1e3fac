/*
 * select_common.h - the shared face of select/k8s_cons_tres: what every ABI
 * family adapter (select_22_05.c, select_23_11.c, select_25_05.c) forwards
 * to, and what each must provide. select_common.c holds the entry points
 * that every supported release, or several families, have with the same
 * arguments; an adapter holds only those of its family alone, and the
 * plugin_id.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_SELECT_COMMON_H
#define K8S_SELECT_COMMON_H

#include "slurm_compat.h"
#include "src/slurmctld/slurmctld.h"

/*
 * Provided by the adapter: load cons_tres with the family's table
 * (inner_select_init) so that k8s_inner is set.
 */
extern int k8s_adapter_init(void);

/*
 * The plugin_id of the families whose slurmctld loads every select plugin
 * in PluginDir and refuses two with one id (22.05 through 24.11), so that
 * it cannot be cons_tres's 109: unused by Slurm (101-110 are taken), "k8"
 * in ASCII.
 */
#define K8S_OWN_PLUGIN_ID 0x6b38

/* One job_test: the arguments every family passes, and the family's way
 * of calling cons_tres with a given cluster-wide core exclusion (22.05: the
 * adapter's; 23.11 on: select_common.c's). */
typedef struct k8s_job_test k8s_job_test_t;
struct k8s_job_test {
	job_record_t *job_ptr;
	bitstr_t *node_bitmap;	/* in/out */
	uint32_t min_nodes, max_nodes, req_nodes;
	uint16_t mode;
	list_t *preemptee_candidates;
	list_t **preemptee_job_list;
	/* cons_tres's job_test with every core of exc (NULL: none) excluded */
	int (*inner)(k8s_job_test_t *t, bitstr_t *exc);
	/*
	 * The GPUs of node node_inx (bit g: GPU index g) that GRES
	 * reservations keep from this job: those reserved for a job outside
	 * them, all others for a job inside one (23.11+: resv_exc_t's GRES
	 * lists). NULL: no GRES reservations in this family.
	 */
	uint64_t (*resv_gpus_off)(k8s_job_test_t *t, int node_inx);
	void *abi;		/* the family's other arguments, for inner() */
};

/*
 * job_test with what Kubernetes holds kept out (RUN_NOW and WILL_RUN) and,
 * for RUN_NOW, the engine's topology choice inside cons_tres's nodes.
 * exc_core_bitmap: slurmctld's own cluster-wide exclusion, may be NULL;
 * every exclusion passed to t->inner contains it. In k8s_steer.c.
 */
extern int k8s_select_job_test(k8s_job_test_t *t, bitstr_t *exc_core_bitmap);

#endif
