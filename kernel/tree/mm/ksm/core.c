// SPDX-License-Identifier: GPL-2.0
/*
 * KSM core: the state every file of mm/ksm/ shares - the tunables, the
 * locks, the counters, the slab caches, the registry of slots and ksmd's
 * cursor in it.
 *
 * Layering (see samepage.h): calls into no other file of mm/ksm/.
 */
#include <linux/hashtable.h>
#include <linux/ksm.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "samepage.h"

#define CREATE_TRACE_POINTS
#include <trace/events/ksm.h>

/*
 * Tunables, at the defaults that Documentation/admin-guide/mm/ksm.rst
 * documents. Without sysfs nobody could start ksmd, so it runs from boot.
 */
unsigned long sp_run = IS_ENABLED(CONFIG_SYSFS) ? SP_RUN_STOP : SP_RUN_MERGE;
unsigned int sp_pages_to_scan = 100;
unsigned int sp_sleep_ms = 20;
unsigned int sp_max_page_sharing = 256;
bool sp_merge_across_nodes = true;
bool sp_use_zero_pages;
bool sp_smart_scan = true;
unsigned int sp_chains_prune_ms = 2000;
unsigned long sp_max_kernel_pages;

/* The locks and what they protect: see the top of samepage.h. */
DEFINE_MUTEX(sp_mutex);
DEFINE_SPINLOCK(sp_slots_lock);
LIST_HEAD(sp_slots);
DEFINE_XARRAY_ALLOC1(sp_slot_ids);
DECLARE_WAIT_QUEUE_HEAD(sp_thread_wait);
static DEFINE_HASHTABLE(sp_mm_hash, 8);

struct sp_stats sp_stats;
atomic_long_t ksm_zero_pages = ATOMIC_LONG_INIT(0);

struct sp_cursor sp_cur;

static struct kmem_cache *sp_slot_cache;
struct kmem_cache *sp_node_cache;

/**
 * sp_slot_of - the slot of an mm
 * @mm: the mm
 *
 * Context: sp_slots_lock held.
 * Return: the slot, or NULL if @mm is not registered.
 */
struct sp_slot *sp_slot_of(struct mm_struct *mm)
{
	struct sp_slot *slot;

	lockdep_assert_held(&sp_slots_lock);
	hash_for_each_possible(sp_mm_hash, slot, hnode, (unsigned long)mm)
		if (slot->mm == mm)
			return slot;
	return NULL;
}

/**
 * sp_slot_alloc - a new slot for an mm, with an id if one can be had
 * @mm: the mm, which the slot will mmgrab() once linked
 *
 * An mm beyond SP_SLOT_ID_MAX registered ones gets id 0: its pages can
 * still join KSM pages and become the zero page, but pair with none.
 *
 * Return: the slot, or NULL.
 */
struct sp_slot *sp_slot_alloc(struct mm_struct *mm)
{
	struct sp_slot *slot;
	u32 id;

	slot = kmem_cache_zalloc(sp_slot_cache, GFP_KERNEL);
	if (!slot)
		return NULL;
	slot->mm = mm;
	xa_init(&slot->pages);
	if (!xa_alloc(&sp_slot_ids, &id, slot, XA_LIMIT(1, SP_SLOT_ID_MAX),
		      GFP_KERNEL))
		slot->id = id;
	return slot;
}

/**
 * sp_slot_link - register a slot
 * @slot: the slot
 * @before: where in sp_slots it goes: before this entry (the list head
 *	itself for the end)
 *
 * Context: sp_slots_lock held.
 */
void sp_slot_link(struct sp_slot *slot, struct list_head *before)
{
	lockdep_assert_held(&sp_slots_lock);
	hash_add(sp_mm_hash, &slot->hnode, (unsigned long)slot->mm);
	list_add_tail(&slot->list, before);
}

/**
 * sp_slot_unlink - unregister a slot
 * @slot: the slot; no sharer names its id any more
 *
 * Context: sp_slots_lock held.
 */
void sp_slot_unlink(struct sp_slot *slot)
{
	lockdep_assert_held(&sp_slots_lock);
	list_del(&slot->list);
	hash_del(&slot->hnode);
	if (slot->id)
		xa_erase(&sp_slot_ids, slot->id);
}

/**
 * sp_slot_free - free an unlinked, empty slot and let go of its mm
 * @slot: the slot
 */
void sp_slot_free(struct sp_slot *slot)
{
	struct mm_struct *mm = slot->mm;

	xa_destroy(&slot->pages);
	kmem_cache_free(sp_slot_cache, slot);
	mmdrop(mm);
}

/**
 * sp_core_init - make the slab caches of slots and nodes
 *
 * Return: 0 or -ENOMEM.
 */
int __init sp_core_init(void)
{
	sp_slot_cache = KMEM_CACHE(sp_slot, 0);
	sp_node_cache = KMEM_CACHE(sp_knode, 0);
	if (sp_slot_cache && sp_node_cache)
		return 0;
	kmem_cache_destroy(sp_slot_cache);
	kmem_cache_destroy(sp_node_cache);
	return -ENOMEM;
}
