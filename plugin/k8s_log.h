/*
 * k8s_log.h - the plugin's two prefixes, in one place: PREFIX begins every
 * line it writes to slurmctld's log ("select/k8s_cons_tres: "; the launch
 * gate's PrEp plugin defines its own before including this), REASON_PREFIX
 * every node reason and job description it sets, and is how it knows its
 * own drains and holds from an admin's.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_LOG_H
#define K8S_LOG_H

#ifndef PREFIX
#define PREFIX "select/k8s_cons_tres: "
#endif
#define REASON_PREFIX "k8s_cons_tres: "

#endif
