// SPDX-License-Identifier: GPL-2.0
/*
 * KSM visit: what ksmd decides at each visit of a page.
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
 *
 * A visit runs under sp_mutex and holds no mmap_lock: each step that
 * needs one (merging, unsharing, finding a candidate's page) takes the
 * mmap_lock of the mm it works in for reading, around direct calls into
 * merge.c.
 *
 * Layering (see samepage.h): calls into core.c, estimate.c, fresh.c,
 * index.c, knode.c, merge.c, rmap.c, thp.c.
 */
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/rmap.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/swap.h>

#include "../internal.h"
#include "samepage.h"

#include <trace/events/ksm.h>

/*
 * Smart scan, on the 6.12 implementation's schedule, so that pages_scanned
 * and pages_skipped count as they did. Each visit of a page that is not
 * KSM makes it one older (the count stops at SP_ST_AGE_MAX: from age 9 on
 * the schedule stays the same). Pages younger than 3 visits are always
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

	*skip = false;
	if (!READ_ONCE(sp_smart_scan))
		return st;
	if (age >= SP_SMART_YOUNG) {
		*skip = left;
		left = left ? left - 1 : sp_skips_granted(age);
	}
	age = min_t(unsigned int, age + 1, SP_ST_AGE_MAX);
	return sp_st_make(sp_st_hash(st), sp_st_cand(st) && !*skip, age,
			  left) | (st & SP_ST_CARRY);
}

/*
 * The still visits worth counting for a page of state word @st: in a
 * watched mm (@how has SP_FOUND_SOFT), whether it held still at all; else
 * as far as the back-off looks (sp_st_written()). A count that stops
 * changing leaves the state word, and its xarray slot, as they were.
 */
static unsigned int sp_still_cap(unsigned long st, unsigned int how)
{
	if (how & SP_FOUND_SOFT)
		return 1;
	return sp_protect_wait(sp_st_level(st)) + SP_PROTECT_PAYBACK + 1;
}

/*
 * A page written since the walk cleaned it for its hash (state word @st):
 * it may have changed, so its state word no longer says clean, and it is
 * read at its next visit that smart scan does not skip. Its smart-scan
 * age and skips stay: mainline's schedule counts visits, whatever the
 * content does, and pages_skipped with it. If it was protected (not
 * @soft: watched, its write took no fault) and written before it repaid
 * the fault, it backs off a level; if after, it comes one level back
 * (DOC: Protecting pages).
 */
static unsigned long sp_st_written(unsigned long st, bool soft)
{
	unsigned int level = sp_st_level(st);
	unsigned int after = sp_protect_wait(level);

	if (!soft && after && sp_st_still(st) > after + SP_PROTECT_PAYBACK)
		level = level ? level - 1 : 0;
	else if (!soft)
		level++;
	st = sp_st_make(sp_st_hash(st), sp_st_cand(st), sp_st_age(st),
			sp_st_skip(st));
	return sp_st_set_level(st, level);
}

/*
 * Remember a page that stays unmerged after this visit; @st is aged and
 * says whether @hash was taken write-protected (walk.c). @old is its
 * entry before the visit: a clean page's usually stays as it was.
 */
static void sp_note_unmerged(struct sp_slot *slot, unsigned long vpn,
			     void *old, u64 hash, bool cand, unsigned long st)
{
	void *new = xa_mk_value(sp_st_make(hash, cand, sp_st_age(st),
					   sp_st_skip(st)) |
				(st & SP_ST_CARRY));

	if (new != old)
		sp_entry_set(slot, vpn, new);
}

/*
 * What the merge tracepoints carry in their rmap_item field: a value that
 * names the mapping, the same that sp_knode_free() gives
 * ksm_remove_rmap_item when the mapping goes with its KSM page.
 */
static void *sp_trace_item(struct sp_slot *slot, unsigned long addr)
{
	return (void *)(long)sp_loc(slot->id, addr >> PAGE_SHIFT);
}

struct sp_merge_req {
	struct page *page;
	struct page *kpage;		/* NULL: make @page the KSM page */
	struct sp_knode *node;		/* with @kpage NULL */
	bool fill;			/* @kpage is fresh: fill it from @page */
	bool held;			/* see sp_wrprotect() in merge.c */
	struct anon_vma *av;		/* on success, referenced */
	pgoff_t pgoff;			/* on success, the page's linear index */
};

/*
 * Merge @r->page as @r says, in the mergeable VMA of @addr in @mm: into
 * @r->kpage (a KSM page, or a fresh one to fill), or make it the KSM page
 * of @r->node. mmap_lock is taken for reading around the merge, which
 * takes the page's folio lock and PTE lock (merge.c).
 */
static int sp_merge_at(struct mm_struct *mm, unsigned long addr,
		       struct sp_merge_req *r)
{
	struct vm_area_struct *vma;
	int err = -EFAULT;

	mmap_read_lock(mm);
	vma = sp_mergeable_vma(mm, addr);
	if (!vma)
		goto out;
	if (r->fill)
		err = sp_merge_fresh(vma, r->page, r->kpage, r->held);
	else if (r->kpage)
		err = sp_merge_into(vma, r->page, r->kpage, r->held);
	else
		err = sp_make_ksm(vma, r->page, r->node, r->held);
	if (!err) {
		r->av = vma->anon_vma;
		get_anon_vma(r->av);
		r->pgoff = linear_page_index(vma, addr);
	}
out:
	mmap_read_unlock(mm);
	return err;
}

/* Give the page at @addr of @slot's mm a private copy; mmap_lock read. */
static void sp_unshare_at(struct sp_slot *slot, unsigned long addr)
{
	struct vm_area_struct *vma;

	mmap_read_lock(slot->mm);
	vma = sp_mergeable_vma(slot->mm, addr);
	if (vma)
		sp_unshare(vma, addr);
	mmap_read_unlock(slot->mm);
}

/* The page whose match the current visit counted; under sp_mutex. */
static struct page *sp_counted;

/*
 * May @page, which has an equal page, be merged now? Not while its folio
 * is large and not yet worth splitting (thp.c, DOC: Splitting huge
 * pages). A visit counts its page's match once, however many equal
 * pages it meets.
 */
static bool sp_may_merge(struct page *page)
{
	bool match = sp_counted != page;

	sp_counted = page;
	return sp_thp_worth_split(page_folio(page), match);
}

/*
 * Map the zero page of @addr in place of @page, traced at every attempt
 * with the zero page's pfn; true when merged or the VMA has gone.
 */
static bool sp_merge_zero(struct sp_slot *slot, unsigned long addr,
			  struct page *page, bool held)
{
	struct page *zero = ZERO_PAGE(addr);
	struct vm_area_struct *vma;
	int err = 0;

	mmap_read_lock(slot->mm);
	vma = sp_mergeable_vma(slot->mm, addr);
	if (vma) {
		err = sp_merge_into(vma, page, zero, held);
		trace_ksm_merge_one_page(page_to_pfn(zero), NULL, slot->mm,
					 err);
	}
	mmap_read_unlock(slot->mm);
	return !err;
}

/*
 * An all-zero page becomes the zero page of its address, when so
 * configured: tried only for a page whose hash is the zero page's. The
 * visit is done when it merged or the VMA has gone. Its entry stays, not
 * a candidate, until the next pass's walk finds no page at the address
 * and forgets it; till then ksm_rmap_items in /proc/PID/ksm_stat counts
 * it.
 */
static bool sp_try_zero(struct sp_slot *slot, unsigned long addr,
			struct page *page, bool held, u64 hash)
{
	if (!READ_ONCE(sp_use_zero_pages) ||
	    hash != (sp_zero_hash & SP_HASH_MASK) || !sp_may_merge(page))
		return false;
	return sp_merge_zero(slot, addr, page, held);
}

/* Is @page all zeroes? Read up to its first byte that is not. */
static bool sp_page_is_zero(struct page *page)
{
	void *addr = kmap_local_page(page);
	bool zero = !memchr_inv(addr, 0, PAGE_SIZE);

	kunmap_local(addr);
	return zero;
}

/*
 * A visit under zero_pages_only: an all-zero page becomes the zero page of
 * its address, and nothing is kept of any page, neither hash nor state
 * word, so a page that is not zero costs the read of its first bytes that
 * are not. The merge compares the page in full under write protection, so
 * a page written since it was read is not merged. A state word from before
 * the mode was set is forgotten.
 */
static void sp_visit_zero_only(struct sp_slot *slot, unsigned long addr,
			       struct page *page, void *entry)
{
	if (entry)
		sp_entry_set(slot, addr >> PAGE_SHIFT, NULL);
	if (sp_page_is_zero(page) && sp_may_merge(page))
		sp_merge_zero(slot, addr, page, false);
}

/* Map @kfolio, the KSM folio of @node, in place of @page. */
static bool sp_join(struct sp_slot *slot, unsigned long addr,
		    struct page *page, bool held, struct folio *kfolio,
		    struct sp_knode *node)
{
	struct sp_merge_req r = { .page = page, .kpage = &kfolio->page,
				  .held = held };
	bool linked = false;
	int err;

	err = sp_merge_at(slot->mm, addr, &r);
	trace_ksm_merge_with_ksm_page(kfolio, folio_pfn(kfolio),
				      sp_trace_item(slot, addr), slot->mm, err);
	if (err)
		return false;
	folio_lock(kfolio);
	if (sp_folio_node(kfolio) == node)
		linked = sp_sharer_link(node, slot, addr, r.av, r.pgoff);
	folio_unlock(kfolio);
	if (!linked) {
		/* Mapped but not recorded: take the mapping back. */
		sp_unshare_at(slot, addr);
		put_anon_vma(r.av);
	}
	return linked;
}

/* Are there max_kernel_pages KSM pages already? */
static bool sp_kpages_full(void)
{
	unsigned long max = READ_ONCE(sp_max_kernel_pages);

	return max && sp_stats.shared >= max;
}

/*
 * A KSM page takes one more sharer when it is on the right node and under
 * max_page_sharing. An orphan, with no sharer, takes none: its folio may be
 * on its way out, or poisoned and kept by memory failure for good.
 */
static bool sp_may_share(struct sp_knode *node, int nid)
{
	/* Under hide_merges a join must fail where a page alone would. */
	if (READ_ONCE(ksm_hide_merges) && sp_kpages_full())
		return false;
	if (!sp_across_nodes() && READ_ONCE(node->nid) != nid)
		return false;
	return node->nr_sharers &&
	       node->nr_sharers < READ_ONCE(sp_max_page_sharing);
}

/* The KSM page of chain @head that may take a sharer on @nid, if any. */
static struct sp_knode *sp_chain_pick(struct sp_knode *head, int nid)
{
	struct sp_knode *d;

	if (sp_may_share(head, nid))
		return head;
	hlist_for_each_entry(d, &head->dups, dup)
		if (sp_may_share(d, nid))
			return d;
	return NULL;
}

/*
 * Join an existing KSM page of @slot's domain with the same content, if
 * there is one; @key is the page's index key in that domain. The lookup
 * compares contents only where keys are shared; the merge compares them,
 * write-protected, before it maps the KSM page.
 */
static bool sp_try_stable(struct sp_slot *slot, unsigned long addr,
			  struct page *page, bool held, u64 key)
{
	int nid = page_to_nid(page);
	struct sp_knode *head, *node;
	struct folio *kfolio;
	bool done;

	if (!slot->id)		/* it could not be recorded */
		return false;
	do {
		head = sp_stable_find(&sp_stable, key, slot->dom, page);
		sp_knode_reap();
		if (head && !sp_may_merge(page))
			return false;
		node = head ? sp_chain_pick(head, nid) : NULL;
		if (!node)
			return false;
		/* A stale pick is freed here: look again, with one less. */
		kfolio = sp_node_folio(node, false);
	} while (!kfolio);
	done = (sp_across_nodes() ||
		folio_nid(kfolio) == nid) &&
	       !folio_test_hwpoison(kfolio) &&
	       sp_join(slot, addr, page, held, kfolio, node);
	folio_put(kfolio);
	return done;
}

/* A node that sp_knode_start() allocated and nothing was merged into. */
static void sp_knode_unused(struct sp_knode *node)
{
	kvfree(node->sharers);
	kmem_cache_free(sp_node_cache, node);
}

/*
 * Make @r->page the first page of a new KSM page of key @key, and put the
 * node in the stable table: the page itself, or with @fresh a new frame
 * that it is copied into, which is then @r->kpage, with a reference that
 * the caller puts. The page is mapped but not linked as a sharer.
 * Returns the node, or NULL.
 */
static struct sp_knode *sp_knode_start(struct sp_slot *slot,
				       unsigned long addr,
				       struct sp_merge_req *r, u64 key,
				       bool fresh)
{
	struct folio *folio = NULL;
	struct sp_knode *node;
	int err;

	if (sp_kpages_full())
		return NULL;
	node = kmem_cache_zalloc(sp_node_cache, GFP_KERNEL);
	if (!node)
		return NULL;
	if (!sp_sharers_init(node, 2))
		goto fail;
	node->key = key;
	node->dom = slot->dom;
	node->nid = page_to_nid(r->page);
	r->node = node;
	if (fresh) {
		folio = sp_fresh_folio(slot->mm, r->page, node);
		if (!folio)
			goto fail;
		r->kpage = &folio->page;
		r->fill = true;
	}
	err = sp_merge_at(slot->mm, addr, r);
	/*
	 * The first page of a KSM page is traced as merged into no KSM page,
	 * as ksm_merge_with_ksm_page has always reported it.
	 */
	trace_ksm_merge_with_ksm_page(NULL, page_to_pfn(r->page),
				      sp_trace_item(slot, addr), slot->mm, err);
	if (err) {
		if (folio)
			sp_fresh_abandon(folio);
		goto fail;
	}
	sp_stable_add(&sp_stable, node, r->kpage ?: r->page);
	sp_knode_reap();
	return node;
fail:
	sp_knode_unused(node);
	return NULL;
}

/*
 * Make a KSM page of @page and the equal candidate @tpage at @taddr of
 * @t (whose mm the caller holds): @page itself, or with use_fresh_pages
 * a new frame that both are merged into. @held and @theld say whether
 * each page's hash was taken write-protected (merge.c refuses a page
 * written since). Returns true when this visit is done: merged, or
 * undone after @page became KSM and @tpage could not follow.
 *
 * The two are not compared first: their keyed hashes are equal, and the
 * merge of @tpage compares it in full, write-protected, with what @page
 * became. A candidate written since its hash was taken costs the undoing
 * (a copy of @page), where a compare beforehand would cost every pair a
 * read of both pages.
 */
static bool sp_merge_pair(struct sp_slot *slot, unsigned long addr,
			  struct page *page, bool held, struct sp_slot *t,
			  unsigned long taddr, struct page *tpage, bool theld,
			  u64 key)
{
	bool fresh = READ_ONCE(sp_use_fresh_pages);
	struct sp_merge_req r = { .page = page, .held = held };
	struct sp_merge_req tr = { .page = tpage, .held = theld };
	struct sp_knode *node;
	struct folio *kfolio;
	bool linked;
	int err;

	node = sp_knode_start(slot, addr, &r, key, fresh);
	if (!node)
		return false;
	tr.kpage = r.kpage ?: page;
	err = sp_merge_at(t->mm, taddr, &tr);
	trace_ksm_merge_with_ksm_page(tr.kpage, page_to_pfn(tr.kpage),
				      sp_trace_item(t, taddr), t->mm, err);
	/*
	 * Linked first, the candidate's mapping is the one whose teardown
	 * sp_knode_free() does not trace: the mapping ksm_remove_rmap_item
	 * has always left out. The array has room for both: linking fails
	 * only on the xarray.
	 */
	kfolio = page_folio(tr.kpage);
	folio_lock(kfolio);
	if (!err && !sp_sharer_link(node, t, taddr, tr.av, tr.pgoff)) {
		put_anon_vma(tr.av);
		err = -ENOMEM;
	}
	linked = sp_sharer_link(node, slot, addr, r.av, r.pgoff);
	folio_unlock(kfolio);
	if (err || !linked) {
		/* A KSM page mapped once is no saving: give it back. */
		if (linked)
			sp_sharer_drop(node, slot, addr >> PAGE_SHIFT);
		else
			put_anon_vma(r.av);
		sp_unshare_at(slot, addr);
	}
	if (fresh)
		folio_put(kfolio);
	return true;
}

/*
 * Under hide_merges, a page that held still and found no equal KSM page
 * becomes one by itself, in a fresh frame, as a page that joins one is
 * mapped to a KSM page: so that no view of its own pages tells a process
 * which of them another process's page joined (ksm.h, folio_ksm_hidden()).
 * Later pages of the content join it through the stable table, so no
 * candidate is kept. It counts as a match for its THP, as a join does,
 * so that whether a THP is split does not depend on other processes'
 * pages either. True when this visit is done.
 */
static bool sp_hide_alone(struct sp_slot *slot, unsigned long addr,
			  struct page *page, bool held, u64 key)
{
	struct sp_merge_req r = { .page = page, .held = held };
	struct sp_knode *node;
	struct folio *kfolio;
	bool linked;

	if (!slot->id || !sp_may_merge(page))
		return false;
	node = sp_knode_start(slot, addr, &r, key, true);
	if (!node)
		return false;
	kfolio = page_folio(r.kpage);
	folio_lock(kfolio);
	linked = sp_sharer_link(node, slot, addr, r.av, r.pgoff);
	folio_unlock(kfolio);
	if (!linked) {
		put_anon_vma(r.av);
		sp_unshare_at(slot, addr);
	}
	folio_put(kfolio);
	return true;
}

/*
 * sp_merge_pair() with the KSM page made of the page of a small folio if
 * only the candidate @tpage is one: a KSM page must be a small folio, and
 * the other page then leaves its THP without splitting it (merge.c).
 */
static bool sp_merge_either(struct sp_slot *slot, unsigned long addr,
			    struct page *page, bool held, struct sp_slot *t,
			    unsigned long taddr, struct page *tpage, bool theld,
			    u64 key)
{
	if (folio_test_large(page_folio(page)) &&
	    !folio_test_large(page_folio(tpage)))
		return sp_merge_pair(t, taddr, tpage, theld, slot, addr, page,
				     held, key);
	return sp_merge_pair(slot, addr, page, held, t, taddr, tpage, theld,
			     key);
}

/* What became of a candidate that a probe offered. */
enum sp_pair {
	SP_PAIR_DONE,		/* merged, or undone: this visit is done */
	SP_PAIR_NO,		/* no pair: another content, node, or THP */
	SP_PAIR_GONE,		/* no candidate any more: forget the entry */
};

/*
 * Confirm candidate (@id, @tvpn) for @page: same domain, same hash in its
 * state word, and merge the two (which compares their bytes).
 */
static enum sp_pair sp_pair_with(struct sp_slot *slot, unsigned long addr,
				 struct page *page, bool held, u64 hash,
				 unsigned int id, unsigned long tvpn)
{
	enum sp_pair ret = SP_PAIR_NO;
	struct mm_struct *tmm = NULL;
	struct page *tpage;
	struct sp_slot *t;
	unsigned long st;
	bool other, worth;
	void *e;

	tmm = sp_slot_get(id, slot, &t, &other);
	if (!tmm)
		return other ? SP_PAIR_NO : SP_PAIR_GONE;
	/*
	 * An entry whose page is no candidate now (changed, merged, unmapped)
	 * is stale; one that is a candidate of another hash, offered because
	 * its key has the same low eight bits (all a mark keeps), is not.
	 */
	e = xa_load(&t->pages, tvpn);
	st = xa_is_value(e) ? xa_to_value(e) : 0;
	if (!sp_st_cand(st)) {
		ret = SP_PAIR_GONE;
		goto out;
	}
	if (!sp_st_hash_is(st, hash))
		goto out;
	worth = sp_may_merge(page);
	tpage = sp_get_page_at(tmm, tvpn << PAGE_SHIFT);
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
		if (worth && tpage != page && trylock_page(page)) {
			if (PageTransCompound(page))
				sp_split_locked(page);
			unlock_page(page);
		}
		goto out;
	}
	/*
	 * The candidate's folio counts the match too, whether or not the
	 * page's is worth splitting yet: two THPs of equal pages become
	 * worth it at the same visit, and the walk's rewind then visits
	 * again every page that either refused (thp.c).
	 */
	if (!sp_thp_worth_split(page_folio(tpage), true) || !worth) {
		put_page(tpage);
		goto out;
	}
	if ((sp_across_nodes() ||
	     page_to_nid(tpage) == page_to_nid(page)) &&
	    sp_merge_either(slot, addr, page, held, t, tvpn << PAGE_SHIFT,
			    tpage, sp_st_wp(st), sp_key(slot, hash)))
		ret = SP_PAIR_DONE;
	put_page(tpage);
out:
	mmput_async(tmm);
	return ret;
}

/*
 * Pair with an equal candidate; else become one, and say in *@cand
 * whether the page is in the table: for this pass, or for the passes
 * after it too if @now (a merge on request, which the next request
 * should find whatever passes ksmd began meanwhile). True when this
 * visit is done.
 */
static bool sp_try_candidates(struct sp_slot *slot, unsigned long addr,
			      struct page *page, bool held, bool now,
			      u64 hash, bool *cand)
{
	unsigned long vpn = addr >> PAGE_SHIFT;
	struct sp_probe p;
	unsigned long tvpn;
	unsigned int id;
	bool mine = false;

	*cand = false;
	if (!slot->id)		/* it could not be recorded */
		return false;
	sp_probe_start(&p, &sp_cands, sp_key(slot, hash));
	while (sp_probe_next(&p, &id, &tvpn)) {
		if (id == slot->id && tvpn == vpn) {
			sp_probe_renew(&p, now);
			mine = true;
			continue;
		}
		switch (sp_pair_with(slot, addr, page, held, hash, id, tvpn)) {
		case SP_PAIR_DONE:
			return true;
		case SP_PAIR_GONE:
			sp_probe_forget(&p);
			break;
		case SP_PAIR_NO:
			break;
		}
	}
	*cand = mine || sp_probe_insert(&p, slot->id, vpn, now);
	return false;
}

/*
 * What a page that held still and joined no KSM page does: pair with an
 * equal candidate, or under hide_merges become a KSM page by itself.
 */
static bool sp_try_pairing(struct sp_slot *slot, unsigned long addr,
			   struct page *page, bool held, bool now, u64 hash,
			   bool *cand)
{
	if (!READ_ONCE(ksm_hide_merges))
		return sp_try_candidates(slot, addr, page, held, now, hash,
					 cand);
	*cand = false;
	return sp_hide_alone(slot, addr, page, held, sp_key(slot, hash));
}

/* A KSM page that this mm maps without a sharer: inherited by fork. */
static void sp_adopt(struct sp_slot *slot, unsigned long addr,
		     struct folio *folio)
{
	struct sp_knode *node = sp_folio_node(folio);
	struct anon_vma *av = NULL;
	struct vm_area_struct *vma;
	bool linked = false;
	pgoff_t pgoff = 0;

	if (!node || !slot->id)
		return;
	mmap_read_lock(slot->mm);
	vma = sp_mergeable_vma(slot->mm, addr);
	if (vma) {
		av = vma->anon_vma;
		get_anon_vma(av);
		pgoff = linear_page_index(vma, addr);
	}
	mmap_read_unlock(slot->mm);
	if (!av)
		return;
	folio_lock(folio);
	if (sp_folio_node(folio) == node)
		linked = sp_sharer_link(node, slot, addr, av, pgoff);
	folio_unlock(folio);
	if (!linked)
		put_anon_vma(av);
}

/*
 * The content hash of @page for this visit: from state word @st when the
 * walk found the page clean since that hash was taken (walk.c says why it
 * cannot have changed, and why a mistake costs time, not content), else
 * read from the page.
 */
static u64 sp_visit_hash(struct page *page, unsigned long st,
			 unsigned int how)
{
	if ((how & SP_FOUND_CLEAN) && sp_st_hash(st) != SP_HASH_NONE)
		return sp_st_hash(st);
	return sp_hash_page(page) & SP_HASH_MASK;
}

/*
 * Was the watched page of this visit written since the walk cleaned it at
 * its last visit, and cleaned again by this walk (walk.c)? Then it is
 * taken as changed without being read, and its state word keeps
 * SP_HASH_NONE: a page that keeps changing costs no read of it. One that
 * was written with what it held already loses a pass: time, not content.
 */
static bool sp_written_again(unsigned int how)
{
	unsigned int all = SP_FOUND_SOFT | SP_FOUND_UNSURE | SP_FOUND_WP;

	return (how & all) == all;
}

/*
 * State word @st of a page written since its last visit and cleaned
 * again (sp_written_again()), which smart scan skips at this visit or
 * the batch leaves unvisited.
 */
static unsigned long sp_st_unread(unsigned long st)
{
	st = sp_st_make(SP_HASH_NONE, false, sp_st_age(st), sp_st_skip(st)) |
	     (st & SP_ST_CARRY);
	return sp_st_set_still(sp_st_set_wp(st, true), 0);
}

/*
 * Did the page hold still since its last visit, its hash now @hash and
 * its state word then @st? A page not read then did if the walk cleaned
 * it then and finds it clean now.
 */
static bool sp_held_still(unsigned long st, u64 hash, unsigned int how)
{
	if (sp_st_hash(st) == SP_HASH_NONE)
		return sp_st_wp(st) && (how & (SP_FOUND_CLEAN | SP_FOUND_WP));
	return sp_st_hash_is(st, hash);
}

/* sp_visit() of the page whose entry is @entry. */
static bool sp_visit_page(struct sp_slot *slot, unsigned long addr,
			  struct page *page, unsigned int how, void *entry)
{
	unsigned long vpn = addr >> PAGE_SHIFT;
	struct folio *folio = page_folio(page);
	bool now = how & SP_FOUND_NOW;
	bool skip = false, cand, held, changed, unread;
	unsigned long st;
	u64 hash;

	sp_counted = NULL;
	if (entry && !xa_is_value(entry)) {
		if (folio_test_ksm(folio) && sp_folio_node(folio) == entry)
			return true;
		sp_sharer_drop(entry, slot, vpn);
		entry = NULL;
	}
	if (folio_test_ksm(folio)) {
		sp_adopt(slot, addr, folio);
		return true;
	}
	/* Under estimate nothing merges, not even on request. */
	if (READ_ONCE(sp_estimate)) {
		if (!now)
			sp_est_visit(slot, addr, page, entry);
		return true;
	}
	if (READ_ONCE(sp_zero_pages_only)) {
		sp_visit_zero_only(slot, addr, page, entry);
		return true;
	}
	st = entry ? xa_to_value(entry) : 0;
	if (how & SP_FOUND_UNSURE)
		st = sp_st_written(st, how & SP_FOUND_SOFT);
	else if (how & SP_FOUND_COARSE)
		st = sp_st_set_wp(st, false);
	if (!now)
		st = sp_smart_age(st, &skip);
	unread = !now && sp_written_again(how);
	if (skip) {
		sp_set_state(slot, vpn, unread ? sp_st_unread(st) : st);
		sp_stats.skipped++;
		return false;
	}
	if (!entry)
		how &= ~SP_FOUND_CLEAN;	/* forgotten since the walk */
	hash = unread ? SP_HASH_NONE : sp_visit_hash(page, st, how);
	changed = unread || !entry || !sp_held_still(st, hash, how);
	st = sp_st_set_wp(st, how & (SP_FOUND_CLEAN | SP_FOUND_WP));
	st = sp_st_set_still(st, changed ? 0 :
			     min(sp_st_still(st) + 1, sp_still_cap(st, how)));
	if (!now && changed) {
		/* New or changed, it may be a candidate next pass. */
		sp_cands.want++;
		sp_note_unmerged(slot, vpn, entry, hash, false, st);
		return true;
	}
	held = sp_st_wp(st);
	if (sp_try_zero(slot, addr, page, held, hash))
		cand = false;
	else if (sp_try_stable(slot, addr, page, held, sp_key(slot, hash)) ||
		 sp_try_pairing(slot, addr, page, held, now, hash, &cand))
		return true;
	sp_note_unmerged(slot, vpn, entry, hash, cand, st);
	return true;
}

/**
 * sp_visit - one visit of a page
 * @slot: the slot of the page's mm; ksmd holds sp_mutex, no mmap_lock
 * @addr: the page's address
 * @page: the page, referenced
 * @how: what the walk learnt of it: SP_FOUND_CLEAN, SP_FOUND_WP,
 *	SP_FOUND_UNSURE, SP_FOUND_COARSE or 0, and SP_FOUND_SOFT in a
 *	watched mm;
 *	with SP_FOUND_NOW, a merge on request: the page is looked up as
 *	one that held still, whatever its hash was, and is never skipped
 * @known: the page's entry in @slot's xarray, where the caller knows it
 *	is the entry now (sp_found_entry()); NULL to look it up
 *
 * While the visit runs, changes to the page's own entry leave @slot->gen
 * as it is: they are the visit's, and no other page's entry changes with
 * them.
 *
 * Return: false when smart scan skipped it: then it does not count as
 * scanned.
 */
bool sp_visit(struct sp_slot *slot, unsigned long addr, struct page *page,
	      unsigned int how, void **known)
{
	void *entry;
	bool ret;

	lockdep_assert_held(&sp_mutex);
	entry = known ? *known : xa_load(&slot->pages, addr >> PAGE_SHIFT);
	slot->visiting = (addr >> PAGE_SHIFT) + 1;
	ret = sp_visit_page(slot, addr, page, how, entry);
	slot->visiting = 0;
	return ret;
}

/**
 * sp_unvisited - a page the walk found is left for a later batch
 * @slot: the slot of the page's mm; ksmd holds sp_mutex
 * @addr: the page's address
 * @how: what the walk learnt of it
 *
 * A page written since it was protected for its hash, or in a THP written
 * since, left for a later batch: the write is recorded now, as its visit
 * would have recorded it, so that its state word no longer says clean.
 */
void sp_unvisited(struct sp_slot *slot, unsigned long addr, unsigned int how)
{
	unsigned long vpn = addr >> PAGE_SHIFT;
	unsigned long st;
	void *entry;

	lockdep_assert_held(&sp_mutex);
	if (!(how & (SP_FOUND_UNSURE | SP_FOUND_COARSE)))
		return;
	entry = xa_load(&slot->pages, vpn);
	if (!xa_is_value(entry))
		return;
	st = xa_to_value(entry);
	if (sp_written_again(how))
		st = sp_st_unread(st);
	else if (how & SP_FOUND_UNSURE)
		st = sp_st_written(st, how & SP_FOUND_SOFT);
	else
		st = sp_st_set_wp(st, false);
	if (st != xa_to_value(entry))
		sp_set_state(slot, vpn, st);
}

/*
 * The hash a candidate of state word @st at page @vpn of @t (whose mm
 * the caller holds) was added under: the state word keeps all of it on
 * 64-bit; on 32-bit it keeps 15 bits of the 64 the index uses, and the
 * page is read again. False if the page is gone or no longer has the
 * hash the state word saw (it changed since, and the entry is stale).
 */
static bool sp_cand_hash(struct sp_slot *t, unsigned long vpn,
			 unsigned long st, u64 *hash)
{
	struct page *page;

	if (SP_CLEAN_SKIP) {
		*hash = sp_st_hash(st);
		return true;
	}
	page = sp_get_page_at(t->mm, vpn << PAGE_SHIFT);
	if (!page)
		return false;
	*hash = sp_hash_page(page) & SP_HASH_MASK;
	put_page(page);
	return sp_st_hash_is(st, *hash);
}

/**
 * sp_cand_key_of - the key a candidate entry was added under
 * @loc: the entry's loc
 * @key: the key, on success
 *
 * The candidate table keeps eight bits of a key (index.c); the rest is
 * the hash in the candidate's state word (on 32-bit, the page's hash
 * taken again), in its slot's domain. sp_mutex held: a state word
 * changes only under it.
 *
 * Return: false if the page at @loc is no candidate now, or its mm exits.
 */
bool sp_cand_key_of(u64 loc, u64 *key)
{
	struct mm_struct *mm;
	unsigned long st;
	struct sp_slot *t;
	bool ok, other;
	u64 hash;
	void *e;

	lockdep_assert_held(&sp_mutex);
	mm = sp_slot_get(sp_loc_id(loc), NULL, &t, &other);
	if (!mm)
		return false;
	e = xa_load(&t->pages, sp_loc_vpn(loc));
	st = xa_is_value(e) ? xa_to_value(e) : 0;
	ok = sp_st_cand(st) && sp_cand_hash(t, sp_loc_vpn(loc), st, &hash);
	if (ok)
		*key = sp_key(t, hash);
	mmput_async(mm);
	return ok;
}

#ifdef CONFIG_KSM_VISIT_KUNIT_TEST
#include "tests/visit-kunit.h"
#endif
