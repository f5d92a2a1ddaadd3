// SPDX-License-Identifier: GPL-2.0
/*
 * KSM fresh pages: new KSM pages in frames nobody chose.
 *
 * By default one page of a merging pair becomes the KSM page: its frame
 * keeps the content, and the other page's mappings move onto it. The
 * frame that stays is then one that a process can choose: Flip Feng Shui
 * (USENIX Security 2016) made its own copy of a victim's page the one that
 * was kept, on a frame it had found vulnerable to Rowhammer, and flipped
 * bits in the victim's now shared page.
 *
 * With use_fresh_pages set, a new KSM page gets a frame of its own, taken
 * at random from a per-NUMA-node pool of SP_POOL_SIZE free pages that ksmd
 * allocated at earlier merges (VUsion, SOSP 2017). The first page of the
 * pair is copied into it once write-protected (sp_merge_fresh()) and
 * mapped there; the second is merged into it as into any KSM page, after
 * a full compare under write protection; both frames go back to the
 * allocator. Which frame a merge uses is drawn at the merge, among frames
 * that left the allocator at earlier ones, so freeing a chosen frame just
 * before a merge does not place it. A page that joins an existing KSM
 * page allocates nothing.
 *
 * The new frame is charged to the memory cgroup of the mm whose page is
 * merged first, as that page was, and counts in kernel_pages_allocated
 * and against max_kernel_pages like any KSM page. The pool holds
 * SP_POOL_SIZE pages per NUMA node while the setting is on, and is freed when
 * it is turned off and when memory goes offline (hotplug.c).
 *
 * Locking: the pool and its array are ksmd's, under sp_mutex, which the
 * sysfs store holds too when it turns the setting off.
 *
 * Layering (see samepage.h): calls into core.c, rmap.c.
 */
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/memcontrol.h>
#include <linux/nodemask.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/swap.h>

#include "../internal.h"
#include "samepage.h"

#define SP_POOL_SIZE	64

bool sp_use_fresh_pages;

/* sp_pool[nid][i]: the free frames of NUMA node nid, NULL where none. */
static struct folio *(*sp_pool)[SP_POOL_SIZE];

static struct folio *sp_pool_alloc(int nid)
{
	return __folio_alloc_node(GFP_HIGHUSER_MOVABLE | __GFP_NOWARN, 0, nid);
}

/* Allocate the pool's array and fill it; false when that fails. */
static bool sp_pool_fill(void)
{
	unsigned int i;
	int nid;

	sp_pool = kcalloc(nr_node_ids, sizeof(*sp_pool),
			  GFP_KERNEL | __GFP_NOWARN);
	if (!sp_pool)
		return false;
	for_each_node_state(nid, N_MEMORY)
		for (i = 0; i < SP_POOL_SIZE; i++)
			sp_pool[nid][i] = sp_pool_alloc(nid);
	return true;
}

/*
 * A frame for NUMA node @nid: the one in a slot drawn at random, which is
 * refilled at once. An empty slot (its refill failed) gives no frame
 * rather than one fresh from the allocator, whose choice is predictable.
 */
static struct folio *sp_pool_take(int nid)
{
	struct folio **slot, *folio;

	if (!sp_pool && !sp_pool_fill())
		return NULL;
	slot = &sp_pool[nid][get_random_u32_below(SP_POOL_SIZE)];
	folio = *slot;
	*slot = sp_pool_alloc(nid);
	return folio;
}

/**
 * sp_fresh_drain - free the pool, when use_fresh_pages is turned off
 *
 * Called with sp_mutex held.
 */
void sp_fresh_drain(void)
{
	unsigned int i;
	int nid;

	lockdep_assert_held(&sp_mutex);
	if (!sp_pool)
		return;
	for (nid = 0; nid < nr_node_ids; nid++)
		for (i = 0; i < SP_POOL_SIZE; i++)
			if (sp_pool[nid][i])
				folio_put(sp_pool[nid][i]);
	kfree(sp_pool);
	sp_pool = NULL;
}

/**
 * sp_fresh_folio - a new KSM page in a frame of the pool
 * @mm: the mm of @page, whose memory cgroup the frame is charged to
 * @page: the page that will be copied into it, referenced
 * @node: the node of the KSM page to be; gets its kpfn and nid
 *
 * The folio is a KSM folio of @node, empty, off the LRU and mapped
 * nowhere: sp_merge_fresh() fills it and puts it on the LRU. With
 * merge_across_nodes off the frame is on @page's NUMA node, or there is none.
 *
 * Return: the folio, with a reference for the caller, or NULL.
 */
struct folio *sp_fresh_folio(struct mm_struct *mm, struct page *page,
			     struct sp_knode *node)
{
	int nid = page_to_nid(page);
	struct folio *folio = sp_pool_take(nid);

	lockdep_assert_held(&sp_mutex);
	if (!folio)
		return NULL;
	if ((!READ_ONCE(sp_merge_across_nodes) && folio_nid(folio) != nid) ||
	    mem_cgroup_charge(folio, mm, GFP_KERNEL)) {
		folio_put(folio);
		return NULL;
	}
	/* Nobody else can see the folio yet: no lock needed to set it up. */
	__folio_set_swapbacked(folio);
	folio_mark_uptodate(folio);
	node->kpfn = folio_pfn(folio);
	node->nid = folio_nid(folio);
	sp_folio_set_node(folio, node);
	/* Not backed by anything yet, as a KSM page made in place is. */
	folio_set_dirty(folio);
	return folio;
}

/**
 * sp_fresh_abandon - let go of a fresh KSM page that nothing was merged into
 * @folio: from sp_fresh_folio(), never mapped
 *
 * It is left KSM without a node, like an orphan that memory failure or the
 * swap cache keeps, and is freed with its last reference (the LRU's, if
 * sp_merge_fresh() put it there before its PTE change failed).
 */
void sp_fresh_abandon(struct folio *folio)
{
	lockdep_assert_held(&sp_mutex);
	folio_lock(folio);
	sp_folio_set_node(folio, NULL);
	folio_unlock(folio);
	folio_put(folio);
}
