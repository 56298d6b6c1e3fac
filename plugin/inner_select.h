/*
 * inner_select.h - the wrapped select/cons_tres, reached through its own
 * symbol table (the other_select pattern of select/cray_aries).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_INNER_SELECT_H
#define K8S_INNER_SELECT_H

#include "src/common/select.h"

#define K8S_INNER_TYPE "select/cons_tres"

/* The inner plugin's entry points; valid after inner_select_init(). */
extern slurm_select_ops_t inner;

extern int inner_select_init(void);
extern void inner_select_fini(void);

#endif
