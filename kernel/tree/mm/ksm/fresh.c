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
 * and against max_kernel_pages like any KSM page. The charge neither
 * reclaims nor invokes the OOM killer: a cgroup at its limit is let past
 * it by the one page, as try_charge_memcg() lets an allocation that will
 * free memory soon, since the merge frees the page the frame replaces
 * (and the frame itself is freed if the merge fails). Were the charge
 * let fail, a cgroup kept at its limit would never merge; were the page
 * merged in place instead, its owner could choose the frame by filling
 * its cgroup. The pool holds SP_POOL_SIZE pages per NUMA node while the
 * setting (or hide_merges) is on, and is freed when it is turned off.
 *
 * Under hide_merges every new KSM page is made in such a frame, charged
 * to the root memory cgroup, and each mapping of a KSM page is charged a
 * page to its mm's cgroup instead (sp_hide_charge()): a cgroup's charge
 * then stays as it was when a page of its becomes a KSM page, whether or
 * not it joined another process's, and no limit is passed by merging.
 *
 * A frame of the pool is free memory that ksmd holds, so it must not pin
 * the block it lies in: memory offline refuses a block with a page it
 * cannot move before it tells anyone (has_unmovable_pages()), and CMA,
 * gigantic huge pages and virtio-mem need alloc_contig_range() to move
 * every page of a range. So the frames are movable pages of their own
 * kind (movable_operations): migration and compaction isolate one, and
 * sp_pool_migrate() puts their replacement in its slot. Without
 * CONFIG_COMPACTION there is no such kind, and the frames are taken as
 * unmovable pages instead, which the allocator keeps in unmovable blocks.
 *
 * Locking: sp_mutex serialises taking, refilling and draining (ksmd and
 * the sysfs store that turns the setting off). sp_pool_lock guards the
 * slots: a frame enters or leaves a slot only with both sp_pool_lock and
 * its folio lock held, so migration, which holds the folio locks of the
 * frame and of its replacement, finds the frame in its slot. The folio
 * lock is taken first; under sp_pool_lock only a trylock.
 *
 * Layering (see samepage.h): calls into core.c, rmap.c.
 */
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/memcontrol.h>
#include <linux/migrate.h>
#include <linux/nodemask.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/swap.h>

#include "../internal.h"
#include "samepage.h"

#define SP_POOL_SIZE	64
#define SP_POOL_GFP	(IS_ENABLED(CONFIG_COMPACTION) ? GFP_HIGHUSER_MOVABLE : \
			 GFP_HIGHUSER)

bool sp_use_fresh_pages;

/*
 * sp_pool[nid][i]: the free frames kept for NUMA node nid, NULL where none.
 * The array is allocated once, under sp_mutex, and kept (a few hundred
 * bytes a node). A frame's folio->private points at its slot.
 */
static struct folio *(*sp_pool)[SP_POOL_SIZE];
static DEFINE_SPINLOCK(sp_pool_lock);
/* Whether the slots were filled since the pool was last drained. */
static bool sp_pool_filled;

static const struct movable_operations sp_pool_mops;

/* Put a new frame of node @nid in empty @slot, if one can be had. */
static void sp_pool_fill(int nid, struct folio **slot)
{
	struct folio *folio;

	folio = __folio_alloc_node(SP_POOL_GFP | __GFP_NOWARN, 0, nid);
	if (!folio)
		return;
	/* Visible to pfn walkers already: they may hold the lock briefly. */
	folio_lock(folio);
	folio->private = slot;
	__SetPageMovable(&folio->page, &sp_pool_mops);
	spin_lock(&sp_pool_lock);
	*slot = folio;
	spin_unlock(&sp_pool_lock);
	folio_unlock(folio);
}

/*
 * A frame taken out of its slot, locked: no longer movable. Its mapping
 * keeps the movable type, which tells a migration that isolated it that
 * it was let go (the allocator clears it when the page is freed).
 */
static void sp_pool_release(struct folio *folio)
{
	__ClearPageMovable(&folio->page);
	folio->private = NULL;
}

/* Allocate the pool's array if need be, and fill it; false on failure. */
static bool sp_pool_init(void)
{
	unsigned int i;
	int nid;

	if (!sp_pool)
		sp_pool = kcalloc(nr_node_ids, sizeof(*sp_pool),
				  GFP_KERNEL | __GFP_NOWARN);
	if (!sp_pool)
		return false;
	for_each_node_state(nid, N_MEMORY)
		for (i = 0; i < SP_POOL_SIZE; i++)
			if (!READ_ONCE(sp_pool[nid][i]))
				sp_pool_fill(nid, &sp_pool[nid][i]);
	sp_pool_filled = true;
	return true;
}

/*
 * A frame for NUMA node @nid: the one in a slot drawn at random, which is
 * refilled at once. An empty slot (its refill failed) or one whose frame
 * is being migrated gives no frame rather than one fresh from the
 * allocator, whose choice is predictable. A frame that memory failure
 * poisoned while in the pool is let go, never read or handed out: its
 * last reference keeps it from the allocator for good.
 */
static struct folio *sp_pool_take(int nid)
{
	struct folio **slot, *folio;

	if (!sp_pool_filled && !sp_pool_init())
		return NULL;
	slot = &sp_pool[nid][get_random_u32_below(SP_POOL_SIZE)];
	spin_lock(&sp_pool_lock);
	folio = *slot;
	if (folio && !folio_trylock(folio))
		folio = NULL;
	if (folio && folio_test_isolated(folio)) {
		folio_unlock(folio);
		folio = NULL;
	}
	if (folio)
		*slot = NULL;
	spin_unlock(&sp_pool_lock);
	if (folio) {
		/* Not isolated: no migration looks at it again. */
		sp_pool_release(folio);
		folio->mapping = NULL;
		folio_unlock(folio);
		if (folio_test_hwpoison(folio)) {
			folio_put(folio);
			folio = NULL;
		}
	}
	/* Only sp_mutex's holder empties or fills a slot. */
	if (!READ_ONCE(*slot))
		sp_pool_fill(nid, slot);
	return folio;
}

/* Empty @slot, waiting for a migration of its frame to end. */
static void sp_pool_empty(struct folio **slot)
{
	struct folio *folio;
	bool ours;

	do {
		spin_lock(&sp_pool_lock);
		folio = *slot;
		if (folio)
			folio_get(folio);
		spin_unlock(&sp_pool_lock);
		if (!folio)
			return;
		folio_lock(folio);
		spin_lock(&sp_pool_lock);
		ours = *slot == folio;
		if (ours)
			*slot = NULL;
		spin_unlock(&sp_pool_lock);
		if (ours) {
			/* If isolated, migration sees it let go and frees it. */
			sp_pool_release(folio);
			folio_put(folio);
		}
		folio_unlock(folio);
		folio_put(folio);
	} while (!ours);
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
			sp_pool_empty(&sp_pool[nid][i]);
	sp_pool_filled = false;
}

/*
 * Nothing to do: while a frame is isolated, sp_pool_take() passes it by,
 * and sp_pool_empty() lets it go only under its folio lock, which
 * migration holds again before it calls sp_pool_migrate().
 */
static bool sp_pool_isolate(struct page *page, isolate_mode_t mode)
{
	return true;
}

/*
 * Both folio locks held, and @src still movable (migration checks that
 * under its lock), so still in its slot: @dst takes the slot and the
 * pool's reference moves with it. A frame holds nothing to copy.
 */
static int sp_pool_migrate(struct page *dst, struct page *src,
			   enum migrate_mode mode)
{
	struct folio *from = page_folio(src), *to = page_folio(dst);
	struct folio **slot = from->private;

	folio_get(to);
	to->private = slot;
	__SetPageMovable(dst, &sp_pool_mops);
	spin_lock(&sp_pool_lock);
	VM_WARN_ON_ONCE(*slot != from);
	*slot = to;
	spin_unlock(&sp_pool_lock);
	__ClearPageMovable(src);
	from->private = NULL;
	folio_put(from);
	return MIGRATEPAGE_SUCCESS;
}

/* Migration failed: the frame never left its slot. */
static void sp_pool_putback(struct page *page)
{
}

static const struct movable_operations sp_pool_mops = {
	.isolate_page = sp_pool_isolate,
	.migrate_page = sp_pool_migrate,
	.putback_page = sp_pool_putback,
};

/**
 * sp_fresh_folio - a new KSM page in a frame of the pool
 * @mm: the mm of @page, whose memory cgroup the frame is charged to,
 *	but under hide_merges, when it is charged to the root cgroup
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
	/* With no mm, the charge goes to the root memory cgroup. */
	if (READ_ONCE(ksm_hide_merges))
		mm = NULL;
	if ((!sp_across_nodes() && folio_nid(folio) != nid) ||
	    mem_cgroup_charge(folio, mm, GFP_NOWAIT | __GFP_HIGH)) {
		folio_put(folio);
		return NULL;
	}
	/*
	 * Mapped nowhere, but a pfn walker that found the frame while it
	 * was in the pool may still trylock it: set its flags atomically.
	 */
	folio_set_swapbacked(folio);
	folio_mark_uptodate(folio);
	node->kpfn = folio_pfn(folio);
	node->nid = folio_nid(folio);
	sp_folio_set_node(folio, node);
	/* Not backed by anything yet, as a KSM page made in place is. */
	folio_set_dirty(folio);
	return folio;
}

#ifdef CONFIG_MEMCG
/**
 * sp_hide_charge - charge a new mapping of a KSM page to its memory cgroup
 * @slot: the slot of the mapping's mm
 * @av: the sharer's anon_vma word, which gets SP_SHARER_CHARGED if charged
 *
 * Under hide_merges the frames of KSM pages are charged to the root
 * memory cgroup, and each mapping of one is charged a page, as kernel
 * memory, to the memory cgroup of its mm instead: so a page of a process
 * costs its cgroup a page, merged or not, and no limit is passed by
 * merging. The charge goes to the cgroup of the slot's first charge for
 * as long as the slot lives. Like the charge of a fresh frame it neither
 * reclaims nor fails at the limit, since the page mapped before is freed.
 *
 * Return: 0, or -ENOMEM if the charge failed.
 */
int sp_hide_charge(struct sp_slot *slot, unsigned long *av)
{
	struct mem_cgroup *memcg, *old;

	lockdep_assert_held(&sp_mutex);
	if (!READ_ONCE(ksm_hide_merges))
		return 0;
	if (!slot->objcg) {
		memcg = get_mem_cgroup_from_mm(slot->mm);
		old = set_active_memcg(memcg);
		slot->objcg = get_obj_cgroup_from_current();
		set_active_memcg(old);
		mem_cgroup_put(memcg);
		/* The root cgroup, or no kernel memory accounting. */
		if (!slot->objcg)
			return 0;
	}
	if (obj_cgroup_charge(slot->objcg, GFP_NOWAIT | __GFP_HIGH |
			      __GFP_NOWARN, PAGE_SIZE))
		return -ENOMEM;
	*av |= SP_SHARER_CHARGED;
	return 0;
}

/**
 * sp_hide_uncharge - undo sp_hide_charge() for a mapping going
 * @slot: the slot of the mapping's mm
 * @av: the sharer's anon_vma word
 */
void sp_hide_uncharge(struct sp_slot *slot, unsigned long av)
{
	if (av & SP_SHARER_CHARGED)
		obj_cgroup_uncharge(slot->objcg, PAGE_SIZE);
}
#endif

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
