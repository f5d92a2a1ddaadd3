// SPDX-License-Identifier: GPL-2.0
/*
 * KSM merge on request: MADV_MERGE merges a range now, in the caller's
 * context, whether ksmd runs or not.
 *
 * ksmd merges a page only once it has seen it hold still over a pass, so
 * that the saving comes passes after the memory was loaded: too late for
 * a host that starts instances from one image and wants the memory back
 * when they start. A request walks its range as ksmd walks an mm (walk.c),
 * SP_GATHER pages at a time, and visits each page as one that held still
 * (SP_FOUND_NOW, visit.c): the page joins an equal KSM page of its merge
 * domain, or pairs with an equal candidate into a new KSM page, or else
 * becomes a candidate itself, for the next request or ksmd to pair with.
 * A page that changes afterwards is copied on write as any KSM page is;
 * and as everywhere, the hash only chooses what to compare: every merge
 * compares the two pages in full with them write-protected (merge.c).
 *
 * The rules are ksmd's: a request merges only while run is 1, as ksmd
 * does (with run 0 it leaves the range mergeable and merges nothing);
 * merge domains, max_page_sharing, max_kernel_pages and use_zero_pages
 * apply as at a visit, and only mergeable VMAs are walked: a request on
 * behalf of another process (process_madvise()) merges only what that
 * process made mergeable itself (ksm_madvise()). The CPU time is the
 * caller's. The request holds sp_mutex for one gather and its visits at a
 * time, as ksmd does, so neither waits for the other longer than that; it
 * stops at a fatal signal (-EINTR), and does nothing while run=2 unmerges
 * everything or memory goes offline (-EAGAIN).
 *
 * What a request adds to the index is bounded by what it tracks: a page's
 * entry in its slot's xarray is charged to the requester's memory cgroup
 * (knode.c), a page is a candidate once however often it is requested
 * (sp_try_candidates()), and the candidate table grows for a request only
 * while it holds no more entries than pages are tracked.
 *
 * Layering (see samepage.h): calls into core.c, domain.c, index.c,
 * visit.c, walk.c.
 */
#include <linux/ksm.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/swap.h>

#include "samepage.h"

/* The slot of @mm, or NULL if it is not registered; sp_mutex held. */
static struct sp_slot *sp_request_slot(struct mm_struct *mm)
{
	struct sp_slot *slot;

	/* Slots are freed under sp_mutex, or by __ksm_exit() with no user. */
	spin_lock(&sp_slots_lock);
	slot = sp_slot_of(mm);
	spin_unlock(&sp_slots_lock);
	return slot;
}

/*
 * Room in the candidate table for @n more pages of a request, keeping
 * the candidates it holds: those of an earlier request must last until
 * the next instance's (index.c, SP_CE_LASTS), and a larger table places
 * each again under its key (sp_cand_key_of()). One gone or changed
 * since is left out. A table with more entries than pages are tracked
 * holds entries of pages gone since, which only a pass of ksmd empties:
 * it does not grow for them.
 */
static void sp_request_room(unsigned long n)
{
	struct sp_cand_table old;
	unsigned long pos = 0;
	unsigned int until;
	u64 loc, key;

	if (sp_cands.used > sp_stats.tracked ||
	    !sp_cand_grow(&sp_cands, n, &old))
		return;
	while (sp_cand_next(&old, &pos, &loc, &until)) {
		if (sp_cand_key_of(loc, &key))
			sp_cand_place(&sp_cands, key, loc, until);
		cond_resched();
	}
	sp_cand_free(&old);
}

/**
 * struct sp_request - a merge on request in progress
 * @mm: the mm whose range is merged
 * @addr: the next address to walk from
 * @end: the end of the range
 * @drain: whether the per-CPU LRU batches still need draining
 * @f: the pages of the batch at hand
 */
struct sp_request {
	struct mm_struct *mm;
	unsigned long addr;
	unsigned long end;
	bool drain;
	struct sp_found f;
};

/*
 * Whether run lets a request merge: 0; -EPERM while run is 0, when the
 * request merges nothing and succeeds (ksm_merge_range()); -EAGAIN during
 * run=2 or while memory goes offline.
 */
static int sp_request_allowed(void)
{
	unsigned long run = READ_ONCE(sp_run);

	if ((run & SP_RUN_UNMERGE) || sp_offline_pending())
		return -EAGAIN;
	return run & SP_RUN_MERGE ? 0 : -EPERM;
}

/*
 * Pages just faulted in sit in per-CPU LRU batches, whose references make
 * merging them fail, and a request comes right after the loading. A
 * page off the LRU (or isolated for a while) says there may be such
 * batches: the request lets go of what it found, drains every CPU's
 * batches once, and walks the same pages again. Returns whether it did.
 */
static bool sp_request_drain(struct sp_request *r)
{
	struct sp_found *f = &r->f;
	unsigned int i;

	lockdep_assert_held(&sp_mutex);
	if (!r->drain)
		return false;
	for (i = 0; i < f->nr; i++)
		if (f->page[i] && !folio_test_lru(page_folio(f->page[i])))
			break;
	if (i == f->nr)
		return false;
	sp_found_trim(f, 0);
	mutex_unlock(&sp_mutex);
	lru_add_drain_all();
	r->drain = false;
	mutex_lock(&sp_mutex);
	return true;
}

/*
 * Merge the next pages of @r's range, at most SP_GATHER of them, and move
 * @r->addr past them; sp_mutex held, but let go of to drain the LRU
 * batches. Returns 0, or the error that ends the request.
 */
static int sp_request_batch(struct sp_request *r)
{
	struct sp_found *f = &r->f;
	unsigned long next, splits;
	struct sp_slot *slot;
	unsigned int i;
	int err;

	lockdep_assert_held(&sp_mutex);
again:
	err = sp_request_allowed();
	if (err)
		return err;
	/* hide_merges may have been set since the request began. */
	if (READ_ONCE(ksm_hide_merges)) {
		r->addr = r->end;
		return 0;
	}
	/* Not registered: no VMA in the mm was made mergeable. */
	slot = sp_request_slot(r->mm);
	if (!slot) {
		r->addr = r->end;
		return 0;
	}
	sp_domain_enter(slot);

	f->slot = slot;
	f->nr = 0;
	f->max = SP_GATHER;
	f->large = NULL;
	f->thp_cleaned = NULL;	/* huge pages are ksmd's to clean */
	if (mmap_read_lock_killable(r->mm))
		return -EINTR;
	sp_find_in_mm(r->mm, r->addr, r->end, f);
	mmap_read_unlock(r->mm);
	/* sp_mutex was let go: the slot may have gone meanwhile. */
	if (sp_request_drain(r))
		goto again;
	r->addr = f->nr ? f->addr[f->nr - 1] + PAGE_SIZE : r->end;
	sp_request_room(f->nr);

	for (i = 0; i < f->nr; i++) {
		splits = sp_stats.thp_split;
		if (f->page[i])
			sp_visit(slot, f->addr[i], f->page[i],
				 f->how[i] | SP_FOUND_NOW,
				 sp_found_entry(f, i));
		next = sp_found_split(f, i, splits);
		if (next)
			r->addr = next;
		sp_found_put(f, i);
		cond_resched();
	}
	sp_found_trim(f, 0);
	return 0;
}

/**
 * ksm_merge_range - MADV_MERGE: merge the pages of a range now
 * @mm: the mm, whose users the caller counts among
 * @start: start of the range, page-aligned
 * @end: end of the range
 *
 * Called without mmap_lock, after ksm_madvise() made the range's VMAs
 * mergeable, if the caller may.
 *
 * Return: 0 when the range was gone through, or when run is 0 or
 * hide_merges is set (nothing is merged then); -EINTR on a fatal signal;
 * -EAGAIN while run=2 unmerges everything or memory goes offline;
 * -ENOMEM if no memory could be had to start. Pages merged before an
 * error, or before run was set to
 * 0, stay merged.
 */
int ksm_merge_range(struct mm_struct *mm, unsigned long start,
		    unsigned long end)
{
	struct sp_request *r;
	int err = sp_request_allowed();

	/*
	 * Under hide_merges a request leaves the range to ksmd: what it
	 * merged, and how long it took, would tell the caller which of its
	 * pages have an equal page elsewhere.
	 */
	if (READ_ONCE(ksm_hide_merges))
		return 0;
	if (err)
		return err == -EPERM ? 0 : err;
	r = kmalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->mm = mm;
	r->addr = start;
	r->end = end;
	r->drain = true;
	while (!err && r->addr < end) {
		if (fatal_signal_pending(current) ||
		    mutex_lock_killable(&sp_mutex)) {
			err = -EINTR;
			break;
		}
		err = sp_request_batch(r);
		mutex_unlock(&sp_mutex);
		cond_resched();
	}
	kfree(r);
	return err == -EPERM ? 0 : err;
}
