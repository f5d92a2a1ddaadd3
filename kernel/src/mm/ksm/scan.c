// SPDX-License-Identifier: GPL-2.0
/*
 * samepage scanner: ksmd and what it decides at each visit of a page.
 *
 * ksmd walks the registered mms in list order, and in each the present
 * anonymous pages of its mergeable VMAs in address order, pages_to_scan
 * pages a batch. One walk over every mm is a pass; full_scans counts them.
 *
 * The state of a page at a visit, and what comes of it:
 *   unknown          hash it, remember the hash ("volatile" until proved)
 *   hash changed     remember the new hash: it is volatile
 *   hash unchanged   look for an equal KSM page and join it; else look for
 *                    an equal candidate and make a KSM page of the two;
 *                    else become a candidate ("unshared") for this pass
 *   merged           nothing to do while it still maps its KSM page; if it
 *                    was copied on write or unmapped, forget the sharer
 *   KSM, unknown     a KSM page inherited by fork: record the sharer
 * Addresses where no page is found any more are forgotten as the walk
 * passes them.
 */
#include <linux/freezer.h>
#include <linux/hashtable.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/pagewalk.h>
#include <linux/rmap.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/swap.h>

#include "../internal.h"
#include "samepage.h"

#include <trace/events/ksm.h>

struct sp_cursor sp_cur;

/* Account for the entry of a page going from @old to @new. */
static void sp_account(struct sp_slot *slot, void *old, void *new)
{
	if (!old) {
		sp_stats.tracked++;
		slot->mm->ksm_rmap_items++;
	} else if (xa_is_value(old) && sp_st_cand(xa_to_value(old))) {
		sp_stats.unshared--;
	}
	if (!new) {
		sp_stats.tracked--;
		slot->mm->ksm_rmap_items--;
	} else if (xa_is_value(new) && sp_st_cand(xa_to_value(new))) {
		sp_stats.unshared++;
	}
}

/*
 * Set what ksmd knows of page @vpn of @slot; NULL forgets it. Done under
 * the xarray's lock: once the last entry of an exiting mm's slot is gone,
 * __ksm_exit() may free the slot, and nothing here touches it after that.
 */
static bool sp_entry_set(struct sp_slot *slot, unsigned long vpn, void *new)
{
	void *old;

	xa_lock(&slot->pages);
	if (new)
		old = __xa_store(&slot->pages, vpn, new, GFP_KERNEL);
	else
		old = __xa_erase(&slot->pages, vpn);
	if (!xa_is_err(old))
		sp_account(slot, old, new);
	xa_unlock(&slot->pages);
	return !xa_is_err(old);
}

static void sp_set_state(struct sp_slot *slot, unsigned long vpn,
			 unsigned long st)
{
	sp_entry_set(slot, vpn, xa_mk_value(st));
}

/* Record @sh as a mapping of @node at @addr of @slot; KSM folio locked. */
static bool sp_sharer_link(struct sp_knode *node, struct sp_sharer *sh,
			   struct sp_slot *slot, unsigned long addr)
{
	sh->node = node;
	sh->slot = slot;
	sh->addr = addr;
	if (!sp_entry_set(slot, addr >> PAGE_SHIFT, sh))
		return false;
	hlist_add_head(&sh->link, &node->sharers);
	if (node->nr_sharers++)
		sp_stats.sharing++;
	else
		sp_stats.shared++;
	slot->mm->ksm_merging_pages++;
	return true;
}

/* Take @sh off its node and forget its page; KSM folio locked or gone. */
static void sp_sharer_unlink(struct sp_sharer *sh)
{
	struct sp_knode *node = sh->node;

	hlist_del(&sh->link);
	if (--node->nr_sharers)
		sp_stats.sharing--;
	else
		sp_stats.shared--;
	sh->slot->mm->ksm_merging_pages--;
	sp_entry_set(sh->slot, sh->addr >> PAGE_SHIFT, NULL);
}

static void sp_sharer_free(struct sp_sharer *sh)
{
	if (sh->anon_vma)
		put_anon_vma(sh->anon_vma);
	kmem_cache_free(sp_sharer_cache, sh);
}

static void sp_hold_anon_vma(struct sp_sharer *sh, struct vm_area_struct *vma)
{
	sh->anon_vma = vma->anon_vma;
	get_anon_vma(sh->anon_vma);
}

/**
 * sp_knode_free - free a node whose KSM folio has gone, and its sharers
 * @node: the node; sp_mutex held
 */
void sp_knode_free(struct sp_knode *node)
{
	struct hlist_node *tmp;
	struct sp_sharer *sh;

	hlist_for_each_entry_safe(sh, tmp, &node->sharers, link) {
		/*
		 * Mainline traces the teardown of each mapping but the one
		 * that made the page shared: the oldest, last in the list.
		 */
		if (tmp)
			trace_ksm_remove_rmap_item(node->kpfn, sh,
						   sh->slot->mm);
		sp_sharer_unlink(sh);
		sp_sharer_free(sh);
	}
	trace_ksm_remove_ksm_page(node->kpfn);
	sp_stable_del(&sp_stable, node);
	kmem_cache_free(sp_node_cache, node);
}

/**
 * sp_sharer_drop - forget a mapping of a KSM page
 * @sh: the sharer; sp_mutex held
 */
void sp_sharer_drop(struct sp_sharer *sh)
{
	struct folio *kfolio = sp_node_folio(sh->node, true);

	/* No folio: the node was stale, and went with @sh and the rest. */
	if (!kfolio)
		return;
	sp_sharer_unlink(sh);
	folio_unlock(kfolio);
	folio_put(kfolio);
	sp_sharer_free(sh);
}

/* Forget the pages of @slot in [@from, @to): nothing is mapped there. */
static void sp_forget(struct sp_slot *slot, unsigned long from,
		      unsigned long to)
{
	unsigned long vpn;
	void *entry;

	if (from >= to)
		return;
	xa_for_each_range(&slot->pages, vpn, entry, from >> PAGE_SHIFT,
			  (to - 1) >> PAGE_SHIFT) {
		if (xa_is_value(entry))
			sp_entry_set(slot, vpn, NULL);
		else
			sp_sharer_drop(entry);
	}
}

/*
 * Smart scan, on mainline's schedule. Each visit of a page that is not KSM
 * makes it one older (the count stops at SP_ST_AGE_MAX: from age 9 on the
 * schedule no longer changes). Pages younger than 3 visits are always
 * read. After that, a visit that finds no skip left reads the page and
 * grants the next visits as skips, more of them the older the page: an
 * unchanged unique page is read at visits 1 to 4, 6, 9, 14, then every
 * ninth. A skipped visit drops the page from the candidates, and counts
 * neither in pages_scanned nor against pages_to_scan.
 */
#define SP_ST_AGE_MAX	GENMASK(SP_ST_AGE_BITS - 1, 0)
#define SP_SMART_YOUNG	3

static unsigned int sp_skips_granted(unsigned int age)
{
	static const u8 grant[] = { 1, 1, 1, 1, 2, 2, 4, 4, 4 };

	return age < ARRAY_SIZE(grant) ? grant[age] : 8;
}

/*
 * Age state word @st by one visit: returns the new word, and whether this
 * visit is skipped in *@skip. Without smart scan nothing ages.
 */
static unsigned long sp_smart_age(unsigned long st, bool *skip)
{
	unsigned int age = sp_st_age(st), left = sp_st_skip(st);
	struct sp_content c = { sp_st_hash(st), sp_st_sum(st) };

	*skip = false;
	if (!READ_ONCE(sp_smart_scan))
		return st;
	if (age >= SP_SMART_YOUNG) {
		*skip = left;
		left = left ? left - 1 : sp_skips_granted(age);
	}
	age = min_t(unsigned int, age + 1, SP_ST_AGE_MAX);
	return sp_st_make(c, sp_st_cand(st) && !*skip, age, left);
}

/* Remember a page that stays unmerged after this visit; @st is aged. */
static void sp_keep(struct sp_slot *slot, unsigned long vpn,
		    struct sp_content c, bool cand, unsigned long st)
{
	sp_set_state(slot, vpn, sp_st_make(c, cand, sp_st_age(st),
					   sp_st_skip(st)));
}

/* Run @fn on the mergeable VMA of @addr in @mm, with mmap_lock. */
static int sp_with_vma(struct mm_struct *mm, unsigned long addr,
		       int (*fn)(struct vm_area_struct *vma, void *arg),
		       void *arg)
{
	struct vm_area_struct *vma;
	int err = -EFAULT;

	mmap_read_lock(mm);
	vma = sp_mergeable_vma(mm, addr);
	if (vma)
		err = fn(vma, arg);
	mmap_read_unlock(mm);
	return err;
}

struct sp_merge_req {
	struct page *page;
	struct page *kpage;		/* NULL: make @page the KSM page */
	struct sp_knode *node;		/* with @kpage NULL */
	struct sp_sharer *sh;		/* gets the anon_vma on success */
};

static int sp_merge_fn(struct vm_area_struct *vma, void *arg)
{
	struct sp_merge_req *r = arg;
	int err;

	if (r->kpage)
		err = sp_merge_into(vma, r->page, r->kpage);
	else
		err = sp_make_ksm(vma, r->page, r->node);
	if (!err && r->sh)
		sp_hold_anon_vma(r->sh, vma);
	return err;
}

static int sp_unshare_fn(struct vm_area_struct *vma, void *arg)
{
	return sp_unshare(vma, *(unsigned long *)arg);
}

static void sp_unshare_at(struct sp_slot *slot, unsigned long addr)
{
	sp_with_vma(slot->mm, addr, sp_unshare_fn, &addr);
}

/*
 * An all-zero page becomes the zero page of its address, when so
 * configured: tried, as in mainline, only for a page whose whole-page
 * checksum is the zero page's (the sampled hash alone would let a page
 * that differs in an unsampled word try), and traced at every attempt
 * with the zero page's pfn. The visit is done when it merged or the VMA
 * has gone. Its entry stays, not a candidate, until the next pass's walk
 * passes the address, as mainline's rmap_item does.
 */
static bool sp_try_zero(struct sp_slot *slot, unsigned long addr,
			struct page *page, struct sp_content c)
{
	struct page *zero = ZERO_PAGE(addr);
	struct vm_area_struct *vma;
	int err = 0;

	if (!READ_ONCE(sp_use_zero_pages) || c.hash != sp_zero.hash ||
	    c.sum != sp_zero.sum)
		return false;
	mmap_read_lock(slot->mm);
	vma = sp_mergeable_vma(slot->mm, addr);
	if (vma) {
		err = sp_merge_into(vma, page, zero);
		trace_ksm_merge_one_page(page_to_pfn(zero), NULL, slot->mm,
					 err);
	}
	mmap_read_unlock(slot->mm);
	return !err;
}

/* Map @kfolio, the KSM folio of @node, in place of @page. */
static bool sp_join(struct sp_slot *slot, unsigned long addr,
		    struct page *page, struct folio *kfolio,
		    struct sp_knode *node)
{
	struct sp_merge_req r = { .page = page, .kpage = &kfolio->page };
	bool linked = false;
	int err;

	r.sh = kmem_cache_zalloc(sp_sharer_cache, GFP_KERNEL);
	if (!r.sh)
		return false;
	err = sp_with_vma(slot->mm, addr, sp_merge_fn, &r);
	trace_ksm_merge_with_ksm_page(kfolio, folio_pfn(kfolio), r.sh,
				      slot->mm, err);
	if (err) {
		kmem_cache_free(sp_sharer_cache, r.sh);
		return false;
	}
	folio_lock(kfolio);
	if (sp_folio_node(kfolio) == node)
		linked = sp_sharer_link(node, r.sh, slot, addr);
	folio_unlock(kfolio);
	if (!linked) {
		/* Mapped but not recorded: take the mapping back. */
		sp_unshare_at(slot, addr);
		sp_sharer_free(r.sh);
	}
	return linked;
}

/*
 * A KSM page takes one more sharer when it is on the right node and under
 * max_page_sharing. An orphan, with no sharer, takes none: its folio may be
 * on its way out, or poisoned and kept by memory failure for good.
 */
static bool sp_may_share(struct sp_knode *node, int nid)
{
	if (!READ_ONCE(sp_merge_across_nodes) && READ_ONCE(node->nid) != nid)
		return false;
	return node->nr_sharers &&
	       node->nr_sharers < READ_ONCE(sp_max_page_sharing);
}

/* Join an existing KSM page with the same content, if there is one. */
static bool sp_try_stable(struct sp_slot *slot, unsigned long addr,
			  struct page *page, u32 hash)
{
	int nid = page_to_nid(page);
	struct hlist_node *tmp;
	struct sp_knode *node;
	struct folio *kfolio;
	bool done;

	hlist_for_each_entry_safe(node, tmp, sp_stable_bucket(&sp_stable, hash),
				  link) {
		if (node->hash != hash || !sp_may_share(node, nid))
			continue;
		kfolio = sp_node_folio(node, false);
		if (!kfolio)
			continue;
		done = (READ_ONCE(sp_merge_across_nodes) ||
			folio_nid(kfolio) == nid) &&
		       !folio_test_hwpoison(kfolio) &&
		       sp_pages_same(page, &kfolio->page) &&
		       sp_join(slot, addr, page, kfolio, node);
		folio_put(kfolio);
		if (done)
			return true;
	}
	return false;
}

struct sp_get_req {
	unsigned long addr;
	struct page *page;
};

/* Reference the page at the address if it may be merged: anon, not KSM. */
static int sp_get_fn(struct vm_area_struct *vma, void *arg)
{
	struct sp_get_req *g = arg;
	struct folio_walk fw;
	struct folio *folio = folio_walk_start(&fw, vma, g->addr, 0);

	if (!folio)
		return -EFAULT;
	if (folio_test_anon(folio) && !folio_test_ksm(folio) &&
	    !folio_is_zone_device(folio)) {
		folio_get(folio);
		g->page = fw.page;
	}
	folio_walk_end(&fw, vma);
	return 0;
}

/*
 * Make a KSM page of @page and the equal candidate @tpage at @taddr of
 * @t (whose mm the caller holds). Returns true when this visit is done:
 * merged, or undone after @page became KSM and @tpage could not follow.
 */
static bool sp_merge_pair(struct sp_slot *slot, unsigned long addr,
			  struct page *page, struct sp_slot *t,
			  unsigned long taddr, struct page *tpage, u32 hash)
{
	struct sp_merge_req r = { .page = page };
	struct sp_merge_req tr = { .page = tpage, .kpage = page };
	unsigned long cap = READ_ONCE(sp_max_kernel_pages);
	struct sp_knode *node;
	struct folio *kfolio;
	bool linked;
	int err;

	if (cap && sp_stats.shared >= cap)
		return false;
	node = kmem_cache_zalloc(sp_node_cache, GFP_KERNEL);
	r.sh = kmem_cache_zalloc(sp_sharer_cache, GFP_KERNEL);
	tr.sh = kmem_cache_zalloc(sp_sharer_cache, GFP_KERNEL);
	if (!node || !r.sh || !tr.sh)
		goto fail;
	INIT_HLIST_HEAD(&node->sharers);
	node->hash = hash;
	node->nid = page_to_nid(page);
	r.node = node;
	err = sp_with_vma(slot->mm, addr, sp_merge_fn, &r);
	/* Mainline traces the first page of a pair as merged into none. */
	trace_ksm_merge_with_ksm_page(NULL, page_to_pfn(page), r.sh, slot->mm,
				      err);
	if (err)
		goto fail;
	sp_stable_add(&sp_stable, node);

	err = sp_with_vma(t->mm, taddr, sp_merge_fn, &tr);
	trace_ksm_merge_with_ksm_page(page, page_to_pfn(page), tr.sh, t->mm,
				      err);
	/*
	 * Linked first, the candidate's mapping ends last on the node's list,
	 * as in mainline (the page that became KSM heads it).
	 */
	kfolio = page_folio(page);
	folio_lock(kfolio);
	if (!err && !sp_sharer_link(node, tr.sh, t, taddr))
		err = -ENOMEM;
	linked = sp_sharer_link(node, r.sh, slot, addr);
	folio_unlock(kfolio);
	if (err || !linked) {
		/* A KSM page mapped once is no saving: give it back. */
		if (err)
			sp_sharer_free(tr.sh);
		if (linked)
			sp_sharer_drop(r.sh);
		else
			sp_sharer_free(r.sh);
		sp_unshare_at(slot, addr);
	}
	return true;
fail:
	if (node)
		kmem_cache_free(sp_node_cache, node);
	if (r.sh)
		kmem_cache_free(sp_sharer_cache, r.sh);
	if (tr.sh)
		kmem_cache_free(sp_sharer_cache, tr.sh);
	return false;
}

/* What became of a candidate that a probe offered. */
enum sp_pair {
	SP_PAIR_DONE,		/* merged, or undone: this visit is done */
	SP_PAIR_NO,		/* no pair: another content, node, or THP */
	SP_PAIR_GONE,		/* no candidate any more: forget the entry */
};

/*
 * Confirm candidate (@id, @tvpn) for @page: same hash in its state word,
 * same bytes, and merge the two.
 */
static enum sp_pair sp_pair_with(struct sp_slot *slot, unsigned long addr,
				 struct page *page, u32 hash, unsigned int id,
				 unsigned long tvpn)
{
	struct sp_get_req g = { .addr = tvpn << PAGE_SHIFT };
	enum sp_pair ret = SP_PAIR_NO;
	struct mm_struct *tmm = NULL;
	struct page *tpage;
	struct sp_slot *t;
	unsigned long st;
	void *e;

	spin_lock(&sp_slots_lock);
	t = xa_load(&sp_slot_ids, id);
	if (t && mmget_not_zero(t->mm))
		tmm = t->mm;
	spin_unlock(&sp_slots_lock);
	if (!tmm)
		return SP_PAIR_GONE;
	/*
	 * An entry whose page is no candidate now (changed, merged, unmapped)
	 * is stale; one that is a candidate of another hash, sharing twelve
	 * bits of this one, is not.
	 */
	e = xa_load(&t->pages, tvpn);
	st = xa_is_value(e) ? xa_to_value(e) : 0;
	if (!sp_st_cand(st)) {
		ret = SP_PAIR_GONE;
		goto out;
	}
	if (!sp_st_hash_is(st, hash))
		goto out;
	sp_with_vma(tmm, g.addr, sp_get_fn, &g);
	tpage = g.page;
	if (!tpage) {
		ret = SP_PAIR_GONE;
		goto out;
	}
	if (page_folio(tpage) == page_folio(page)) {
		/*
		 * The same page (shared since a fork), or two pieces of one
		 * THP: split that, and merge on the next pass.
		 */
		put_page(tpage);
		if (tpage != page && trylock_page(page)) {
			if (PageTransCompound(page))
				split_huge_page(page);
			unlock_page(page);
		}
		goto out;
	}
	if ((READ_ONCE(sp_merge_across_nodes) ||
	     page_to_nid(tpage) == page_to_nid(page)) &&
	    sp_pages_same(page, tpage) &&
	    sp_merge_pair(slot, addr, page, t, tvpn << PAGE_SHIFT, tpage, hash))
		ret = SP_PAIR_DONE;
	put_page(tpage);
out:
	mmput_async(tmm);
	return ret;
}

/* Pair with an equal candidate, or become one. */
static void sp_try_candidates(struct sp_slot *slot, unsigned long addr,
			      struct page *page, struct sp_content c,
			      unsigned long st)
{
	u32 hash = c.hash;
	unsigned long vpn = addr >> PAGE_SHIFT;
	struct sp_probe p;
	unsigned long tvpn;
	unsigned int id;

	sp_probe_start(&p, &sp_cands, hash);
	while (sp_probe_next(&p, &id, &tvpn)) {
		if (id == slot->id && tvpn == vpn)
			continue;
		switch (sp_pair_with(slot, addr, page, hash, id, tvpn)) {
		case SP_PAIR_DONE:
			return;
		case SP_PAIR_GONE:
			sp_probe_forget(&p);
			break;
		case SP_PAIR_NO:
			break;
		}
	}
	sp_keep(slot, vpn, c, sp_probe_insert(&p, slot->id, vpn), st);
}

/* A KSM page that this mm maps without a sharer: inherited by fork. */
static void sp_adopt(struct sp_slot *slot, unsigned long addr,
		     struct folio *folio)
{
	struct sp_knode *node = sp_folio_node(folio);
	struct sp_merge_req r = { };
	struct vm_area_struct *vma;
	bool linked = false;

	if (!node)
		return;
	r.sh = kmem_cache_zalloc(sp_sharer_cache, GFP_KERNEL);
	if (!r.sh)
		return;
	mmap_read_lock(slot->mm);
	vma = sp_mergeable_vma(slot->mm, addr);
	if (vma)
		sp_hold_anon_vma(r.sh, vma);
	mmap_read_unlock(slot->mm);
	if (r.sh->anon_vma) {
		folio_lock(folio);
		if (sp_folio_node(folio) == node)
			linked = sp_sharer_link(node, r.sh, slot, addr);
		folio_unlock(folio);
	}
	if (!linked)
		sp_sharer_free(r.sh);
}

/*
 * One visit of the page mapped at @addr of @slot's mm, referenced. Returns
 * false when smart scan skipped it: then it does not count as scanned.
 */
static bool sp_visit(struct sp_slot *slot, unsigned long addr,
		     struct page *page)
{
	unsigned long vpn = addr >> PAGE_SHIFT;
	struct folio *folio = page_folio(page);
	void *entry = xa_load(&slot->pages, vpn);
	struct sp_content c;
	unsigned long st;
	bool skip;

	if (entry && !xa_is_value(entry)) {
		struct sp_sharer *sh = entry;

		if (folio_test_ksm(folio) && sp_folio_node(folio) == sh->node)
			return true;
		sp_sharer_drop(sh);
		entry = NULL;
	}
	if (folio_test_ksm(folio)) {
		sp_adopt(slot, addr, folio);
		return true;
	}
	st = sp_smart_age(entry ? xa_to_value(entry) : 0, &skip);
	if (skip) {
		sp_set_state(slot, vpn, st);
		sp_stats.skipped++;
		return false;
	}
	c = sp_read_page(page);
	if (!entry || !sp_st_same(st, c)) {
		sp_keep(slot, vpn, c, false, st);
		return true;
	}
	if (sp_try_zero(slot, addr, page, c))
		sp_keep(slot, vpn, c, false, st);
	else if (!sp_try_stable(slot, addr, page, c.hash))
		sp_try_candidates(slot, addr, page, c, st);
	return true;
}

/* Finding the next page: a page walk that stops at the first one. */
struct sp_found {
	struct page *page;
	unsigned long addr;
};

static bool sp_scannable(struct page *page)
{
	struct folio *folio = page_folio(page);

	return folio_test_anon(folio) && !folio_is_zone_device(folio);
}

static int sp_take(struct sp_found *f, struct page *page, unsigned long addr)
{
	folio_get(page_folio(page));
	f->page = page;
	f->addr = addr;
	return 1;
}

static int sp_pmd_huge(pmd_t *pmdp, unsigned long addr, struct mm_walk *walk)
{
	spinlock_t *ptl = pmd_lock(walk->mm, pmdp);	/* the PMD's lock */
	pmd_t pmd = pmdp_get(pmdp);
	struct page *page;
	int ret = -EAGAIN;	/* split meanwhile: look at the PTEs */

	if (pmd_present(pmd) && pmd_trans_huge(pmd)) {
		ret = 0;
		page = vm_normal_page_pmd(walk->vma, addr, pmd);
		if (page && sp_scannable(page))
			ret = sp_take(walk->private,
				      page + ((addr & ~PMD_MASK) >> PAGE_SHIFT),
				      addr);
	}
	spin_unlock(ptl);
	return ret;
}

static int sp_pmd_entry(pmd_t *pmdp, unsigned long addr, unsigned long end,
			struct mm_walk *walk)
{
	pmd_t pmd = pmdp_get_lockless(pmdp);
	pte_t *start, *ptep;
	struct page *page;
	spinlock_t *ptl;	/* the PTE table's lock */
	int ret = 0;

	if (!pmd_present(pmd))
		return 0;
	if (pmd_trans_huge(pmd)) {
		ret = sp_pmd_huge(pmdp, addr, walk);
		if (ret != -EAGAIN)
			return ret;
		ret = 0;
	}
	start = pte_offset_map_lock(walk->mm, pmdp, addr, &ptl);
	if (!start)
		return 0;
	for (ptep = start; addr < end && !ret; ptep++, addr += PAGE_SIZE) {
		pte_t pte = ptep_get(ptep);

		if (!pte_present(pte))
			continue;
		page = vm_normal_page(walk->vma, addr, pte);
		if (page && sp_scannable(page))
			ret = sp_take(walk->private, page, addr);
	}
	pte_unmap_unlock(start, ptl);
	return ret;
}

static const struct mm_walk_ops sp_walk_ops = {
	.pmd_entry = sp_pmd_entry,
	.walk_lock = PGWALK_RDLOCK,
};

/* The next page of the cursor's mm, from the cursor on; mmap_lock held. */
static struct page *sp_find_in_mm(struct mm_struct *mm, unsigned long *addrp)
{
	VMA_ITERATOR(vmi, mm, sp_cur.addr);
	struct vm_area_struct *vma;
	struct sp_found f;

	for_each_vma(vmi, vma) {
		if (!(vma->vm_flags & VM_MERGEABLE))
			continue;
		sp_cur.saw_vma = true;
		if (!vma->anon_vma)
			continue;
		if (walk_page_range_vma(vma, max(sp_cur.addr, vma->vm_start),
					vma->vm_end, &sp_walk_ops, &f) > 0) {
			*addrp = f.addr;
			return f.page;
		}
		if (!atomic_read(&mm->mm_users))
			break;
	}
	return NULL;
}

/* Free @node if its folio has gone. */
static void sp_drop_if_stale(struct sp_knode *node)
{
	struct folio *folio = sp_node_folio(node, false);

	if (folio)
		folio_put(folio);
}

static void sp_prune_orphan(struct sp_knode *node)
{
	if (!node->nr_sharers)
		sp_drop_if_stale(node);
}

/**
 * sp_release_orphan - let go of a KSM page that no sharer maps any more
 * @node: a node of the stable index; the caller holds sp_mutex
 *
 * The folio of an orphan may live on without mappings: in the swap cache,
 * in a per-CPU batch, or held for good after memory failure. Such a folio
 * is left KSM without a node, which nothing can join and which goes when
 * its last reference does, and the node is freed. A node whose folio is
 * still mapped, by a fork ksmd has not seen yet, stays.
 */
void sp_release_orphan(struct sp_knode *node)
{
	struct folio *folio;

	if (node->nr_sharers)
		return;
	folio = sp_node_folio(node, true);	/* frees the node if stale */
	if (!folio)
		return;
	if (!folio_mapped(folio)) {
		sp_folio_set_node(folio, NULL);
		sp_knode_free(node);
	}
	folio_unlock(folio);
	folio_put(folio);
}

/*
 * Chains: KSM pages of one content, more than one because of
 * max_page_sharing. Every stable_node_chains_prune_millisecs ksmd checks
 * each of them and drops those whose folio has gone (all sharers copied or
 * unmapped before ksmd saw it), so that stable_node_dups counts live pages
 * only. Other stale nodes go when a lookup meets them or, once they have
 * no sharer left, at the start of a pass.
 */
static unsigned long sp_next_prune;

static void sp_prune_stale(struct sp_knode *node)
{
	if (sp_stable_has_twin(&sp_stable, node))
		sp_drop_if_stale(node);
}

static void sp_prune_chains(void)
{
	if (time_before(jiffies, sp_next_prune))
		return;
	sp_stable_for_each(&sp_stable, sp_prune_stale);
	sp_next_prune = jiffies +
			msecs_to_jiffies(READ_ONCE(sp_chains_prune_ms));
}

/* Start a pass; false when no mm is registered. */
static bool sp_pass_begin(void)
{
	struct sp_slot *first;

	spin_lock(&sp_slots_lock);
	first = list_first_entry_or_null(&sp_slots, struct sp_slot, list);
	sp_cur.slot = first;
	sp_cur.addr = 0;
	sp_cur.saw_vma = false;
	spin_unlock(&sp_slots_lock);
	if (!first)
		return false;
	sp_advisor_pass_begin();
	trace_ksm_start_scan(sp_stats.full_scans, sp_stats.tracked);
	sp_cand_reset(&sp_cands, sp_stats.tracked);
	sp_stable_for_each(&sp_stable, sp_prune_orphan);
	/* Pages in per-CPU LRU batches hold references that block merging. */
	lru_add_drain_all();
	return true;
}

/* End a pass: ksm_stop_scan carries its number, full_scans before it. */
static void sp_pass_end(void)
{
	sp_advisor_pass_end();
	trace_ksm_stop_scan(sp_stats.full_scans, sp_stats.tracked);
	sp_stats.full_scans++;
}

/*
 * Done with the cursor's slot (its mm's mmap_lock held, dropped here):
 * move on, and unregister the mm if it exited or has no mergeable VMA
 * left (a process that asked for merge-any keeps its slot).
 */
static void sp_slot_done(struct sp_slot *slot)
{
	struct mm_struct *mm = slot->mm;
	bool gone = !atomic_read(&mm->mm_users) ||
		    (!sp_cur.saw_vma && !test_bit(MMF_VM_MERGE_ANY, &mm->flags));

	/*
	 * Everything is done before mmap_lock is dropped: holding it keeps a
	 * racing MADV_MERGEABLE from finding the mm still registered, and an
	 * exiting mm's teardown waits for it.
	 */
	if (gone) {
		sp_forget(slot, 0, ULONG_MAX);
		clear_bit(MMF_VM_MERGEABLE, &mm->flags);
	}
	spin_lock(&sp_slots_lock);
	sp_cur.slot = list_is_last(&slot->list, &sp_slots) ? NULL :
		      list_next_entry(slot, list);
	sp_cur.addr = 0;
	sp_cur.saw_vma = false;
	if (gone) {
		list_del(&slot->list);
		hash_del(&slot->hnode);
		xa_erase(&sp_slot_ids, slot->id);
	}
	spin_unlock(&sp_slots_lock);
	mmap_read_unlock(mm);
	if (gone)
		sp_slot_free(slot);
}

/* The next page to visit, referenced; NULL at the end of a pass. */
static struct page *sp_next_page(struct sp_slot **slotp, unsigned long *addrp)
{
	struct sp_slot *slot;
	struct page *page;

	if (!sp_cur.slot && !sp_pass_begin())
		return NULL;
	while ((slot = sp_cur.slot)) {
		mmap_read_lock(slot->mm);
		page = NULL;
		if (atomic_read(&slot->mm->mm_users))
			page = sp_find_in_mm(slot->mm, addrp);
		if (page) {
			sp_forget(slot, sp_cur.addr, *addrp);
			sp_cur.addr = *addrp + PAGE_SIZE;
			mmap_read_unlock(slot->mm);
			*slotp = slot;
			return page;
		}
		sp_forget(slot, sp_cur.addr, ULONG_MAX);
		sp_slot_done(slot);
	}
	sp_pass_end();
	return NULL;
}

static void sp_scan_batch(unsigned int budget)
{
	struct sp_slot *slot;
	unsigned long addr;
	struct page *page;

	while (budget && !freezing(current)) {
		cond_resched();
		page = sp_next_page(&slot, &addr);
		if (!page)
			return;
		if (sp_visit(slot, addr, page)) {
			sp_stats.scanned++;
			budget--;
		}
		put_page(page);
	}
}

/**
 * sp_unmerge_all - run=2: unshare every KSM page and forget every page
 *
 * Called with sp_mutex held. Slots of exited mms are freed on the way.
 *
 * Return: 0, or the error that stopped it (-ENOMEM, -ERESTARTSYS).
 */
int sp_unmerge_all(void)
{
	struct vm_area_struct *vma;
	struct sp_slot *slot;
	int err = 0;

	spin_lock(&sp_slots_lock);
	sp_cur.slot = list_first_entry_or_null(&sp_slots, struct sp_slot, list);
	spin_unlock(&sp_slots_lock);
	while (!err && (slot = sp_cur.slot)) {
		VMA_ITERATOR(vmi, slot->mm, 0);

		mmap_read_lock(slot->mm);
		if (atomic_read(&slot->mm->mm_users)) {
			for_each_vma(vmi, vma) {
				if (!(vma->vm_flags & VM_MERGEABLE))
					continue;
				err = sp_unshare_range(vma, vma->vm_start,
						       vma->vm_end);
				if (err)
					break;
			}
		}
		sp_forget(slot, 0, ULONG_MAX);
		sp_cur.saw_vma = true;	/* keep live slots registered */
		sp_slot_done(slot);
	}
	spin_lock(&sp_slots_lock);
	sp_cur.slot = NULL;
	spin_unlock(&sp_slots_lock);
	sp_stable_for_each(&sp_stable, sp_release_orphan);
	sp_stats.full_scans = 0;
	return err;
}

static bool sp_should_run(void)
{
	return (READ_ONCE(sp_run) & SP_RUN_MERGE) && !list_empty(&sp_slots) &&
	       !sp_offline_pending();
}

/*
 * Between batches: sleep sleep_millisecs (a new value takes effect at
 * once), or, with nothing to do, until there is.
 */
static void sp_idle(void)
{
	unsigned int ms = READ_ONCE(sp_sleep_ms);

	if (!sp_should_run())
		wait_event_freezable(sp_thread_wait,
				     kthread_should_stop() || sp_should_run());
	else
		wait_event_freezable_timeout(sp_thread_wait,
					     kthread_should_stop() ||
					     READ_ONCE(sp_sleep_ms) != ms,
					     msecs_to_jiffies(ms));
}

static int sp_ksmd(void *unused)
{
	set_user_nice(current, 5);
	set_freezable();
	do {
		scoped_guard(mutex, &sp_mutex) {
			if (sp_should_run()) {
				sp_scan_batch(READ_ONCE(sp_pages_to_scan));
				sp_prune_chains();
			}
		}
		sp_idle();
	} while (!kthread_should_stop());
	return 0;
}

/**
 * sp_scan_init - start ksmd
 *
 * Return: 0 or the error from kthread_run().
 */
int __init sp_scan_init(void)
{
	struct task_struct *t = kthread_run(sp_ksmd, NULL, "ksmd");

	return PTR_ERR_OR_ZERO(t);
}

#ifdef CONFIG_KSM_KUNIT_TEST
#include "tests/scan-kunit.h"
#endif
