/* SPDX-License-Identifier: MIT */
/*
 * cstree - OpenCSD decode trees of the CoreSight backend
 * (backend/coresight/): one tree per queue, deformatting its frames (or
 * taking one source's raw stream), with a protocol decoder (ETMv3, PTM,
 * ETMv4, ETE) per source configured from its registers, the packet guard
 * (csguard) on each ETMv4 decoder, elements appended to a decoder's
 * (csdec) list and code read through the image store.
 *
 * OpenCSD's C API keeps its trees' callback objects in one global map,
 * unlocked: trees are made and destroyed under one lock, on any thread.
 */
#ifndef PTD_CSTREE_H
#define PTD_CSTREE_H

#include <stddef.h>

#include <opencsd/c_api/opencsd_c_api.h>

struct cs_dec;
struct csq;

/* A tree for queue q whose elements and memory reads go to d (and whose
 * guards are d's).  Returns the tree, or NULL with a message in err. */
dcd_tree_handle_t cstree_make(struct cs_dec *d, const struct csq *q,
			      char *err, size_t errlen);

void cstree_destroy(dcd_tree_handle_t t);

/* The lock every decode tree of the process is made and destroyed under
 * (OpenCSD's C API keeps their callback objects in one global map):
 * csfast's packet-processor trees take it too. */
void cstree_lock(void);
void cstree_unlock(void);

#endif
