// SPDX-License-Identifier: GPL-2.0
/*
 * KSM core: the state every file of mm/ksm/ shares - the tunables, the
 * locks, the counters, the slab caches, the registry of slots and ksmd's
 * cursor in it.
 *
 * Layering (see samepage.h): calls into no other file of mm/ksm/.
 */
#include <linux/ksm.h>
#include <linux/mm.h>
#include <linux/rhashtable.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include <linux/memcontrol.h>

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
bool sp_zero_pages_only;
bool sp_estimate;
/* Exported through linux/ksm.h: the views of mm outside ksm ask it. */
bool ksm_hide_merges;
bool sp_pressure_only;
bool sp_smart_scan = true;
unsigned int sp_protect_after = 2;
unsigned int sp_thp_split_min = 64;
unsigned int sp_chains_prune_ms = 2000;
unsigned long sp_max_kernel_pages;

/* The locks and what they protect: see the top of samepage.h. */
DEFINE_MUTEX(sp_mutex);
DEFINE_SPINLOCK(sp_slots_lock);
LIST_HEAD(sp_slots);
DEFINE_XARRAY_ALLOC1(sp_slot_ids);
DECLARE_WAIT_QUEUE_HEAD(sp_thread_wait);
/*
 * The slots by mm, for __ksm_enter() and __ksm_exit(): a table that grows
 * and shrinks with the number of registered mms, so that finding one
 * costs O(1) however many there are. Its own locks make each change
 * atomic; sp_slots_lock orders them with the list.
 */
static const struct rhashtable_params sp_mm_params = {
	.key_len = sizeof_field(struct sp_slot, mm),
	.key_offset = offsetof(struct sp_slot, mm),
	.head_offset = offsetof(struct sp_slot, hnode),
	.automatic_shrinking = true,
};

static struct rhashtable sp_mm_table;

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
	lockdep_assert_held(&sp_slots_lock);
	return rhashtable_lookup_fast(&sp_mm_table, &mm, sp_mm_params);
}

/**
 * sp_slot_get - the slot of an id, kept by its mm's users
 * @id: the slot id, as a candidate entry or a sharer names it
 * @of: if not NULL, the slot whose merge domain the slot must be of
 * @t: the slot, or NULL if it has gone
 * @other: whether the slot is of another domain than @of
 *
 * A slot with no entry left may be freed by __ksm_exit() at any time:
 * the mm's users, counted here, keep it.
 *
 * Return: the slot's mm, its users counted (mmput_async() it), or NULL if
 * the slot has gone, its mm exits, or it is of another domain than @of.
 */
struct mm_struct *sp_slot_get(unsigned int id, const struct sp_slot *of,
			      struct sp_slot **t, bool *other)
{
	struct mm_struct *mm = NULL;

	spin_lock(&sp_slots_lock);
	*t = xa_load(&sp_slot_ids, id);
	*other = *t && of && (*t)->dom != of->dom;
	if (*t && !*other && mmget_not_zero((*t)->mm))
		mm = (*t)->mm;
	spin_unlock(&sp_slots_lock);
	return mm;
}

/**
 * sp_slot_alloc - a new slot for an mm, with an id if one can be had
 * @mm: the mm, which the slot will mmgrab() once linked
 *
 * An mm whose id cannot be had (SP_SLOT_ID_MAX are more than a host has
 * mms) gets id 0: its all-zero pages can still become the zero page, but
 * its pages merge with none.
 *
 * Return: the slot, or NULL.
 */
struct sp_slot *sp_slot_alloc(struct mm_struct *mm)
{
	struct sp_slot *slot;
	u32 id;

	/* None if KSM failed to start at boot: nothing registers then. */
	if (unlikely(!sp_slot_cache))
		return NULL;
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
 * Return: 0, or -ENOMEM when the table of slots by mm could not grow.
 */
int sp_slot_link(struct sp_slot *slot, struct list_head *before)
{
	int err;

	lockdep_assert_held(&sp_slots_lock);
	err = rhashtable_insert_fast(&sp_mm_table, &slot->hnode, sp_mm_params);
	if (err)
		return -ENOMEM;
	list_add_tail(&slot->list, before);
	return 0;
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
	rhashtable_remove_fast(&sp_mm_table, &slot->hnode, sp_mm_params);
	sp_slot_discard(slot);
}

/**
 * sp_slot_discard - give back the id of a slot that is not linked
 * @slot: the slot, which sp_slot_free() or kmem_cache_free() frees next
 */
void sp_slot_discard(struct sp_slot *slot)
{
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
	/* Every charged sharer was dropped before: nothing stays charged. */
	if (slot->objcg)
		obj_cgroup_put(slot->objcg);
	kmem_cache_free(sp_slot_cache, slot);
	mmdrop(mm);
}

/**
 * sp_core_init - make the slab caches of slots and nodes, and the table of
 *	slots by mm
 *
 * Return: 0 or -ENOMEM.
 */
int __init sp_core_init(void)
{
	sp_slot_cache = KMEM_CACHE(sp_slot, 0);
	sp_node_cache = KMEM_CACHE(sp_knode, 0);
	if (!sp_slot_cache || !sp_node_cache)
		goto fail;
	if (rhashtable_init(&sp_mm_table, &sp_mm_params))
		goto fail;
	return 0;
fail:
	kmem_cache_destroy(sp_slot_cache);
	kmem_cache_destroy(sp_node_cache);
	sp_slot_cache = NULL;
	sp_node_cache = NULL;
	return -ENOMEM;
}

/**
 * sp_core_exit - undo sp_core_init(), when boot fails further on
 *
 * Nothing was registered yet: the caches and the table are empty.
 */
void __init sp_core_exit(void)
{
	rhashtable_destroy(&sp_mm_table);
	kmem_cache_destroy(sp_slot_cache);
	kmem_cache_destroy(sp_node_cache);
	sp_slot_cache = NULL;
	sp_node_cache = NULL;
}

#ifdef CONFIG_KSM_INDEX_KUNIT_TEST
#include "tests/core-kunit.h"
#endif
