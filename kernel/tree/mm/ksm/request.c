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
 * The rules are ksmd's: merge domains, max_page_sharing, max_kernel_pages
 * and use_zero_pages apply as at a visit, and only VMAs that
 * MADV_MERGEABLE accepts are walked. The CPU time is the caller's. The
 * request holds sp_mutex for one gather and its visits at a time, as ksmd
 * does, so neither waits for the other longer than that; it stops at a
 * fatal signal (-EINTR), and does nothing while run=2 unmerges everything
 * or memory goes offline (-EAGAIN).
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
 * since is left out.
 */
static void sp_request_room(unsigned long n)
{
	struct sp_cand_table old;
	unsigned long pos = 0;
	unsigned int until;
	u64 loc, key;

	if (!sp_cand_grow(&sp_cands, n, &old))
		return;
	while (sp_cand_next(&old, &pos, &loc, &until)) {
		if (sp_cand_key_of(loc, &key))
			sp_cand_place(&sp_cands, key, loc, until);
		cond_resched();
	}
	sp_cand_free(&old);
}

/*
 * Merge the next pages of [*@addr, @end) of @mm, at most SP_GATHER of
 * them, and move *@addr past them; sp_mutex held. @f is the caller's.
 */
static int sp_request_batch(struct mm_struct *mm, struct sp_found *f,
			    unsigned long *addr, unsigned long end)
{
	unsigned long pages = (end - *addr) >> PAGE_SHIFT;
	struct sp_slot *slot;
	unsigned long next, splits;
	unsigned int i;

	lockdep_assert_held(&sp_mutex);
	if ((READ_ONCE(sp_run) & SP_RUN_UNMERGE) || sp_offline_pending())
		return -EAGAIN;
	/* Not registered: MADV_MERGEABLE found no VMA it could mark. */
	slot = sp_request_slot(mm);
	if (!slot) {
		*addr = end;
		return 0;
	}
	sp_domain_enter(slot);
	sp_request_room(min(pages, get_mm_counter(mm, MM_ANONPAGES)));

	f->slot = slot;
	f->nr = 0;
	f->max = SP_GATHER;
	f->large = NULL;
	f->thp_cleaned = NULL;	/* huge pages are ksmd's to clean */
	if (mmap_read_lock_killable(mm))
		return -EINTR;
	sp_find_in_mm(mm, *addr, end, f);
	mmap_read_unlock(mm);
	*addr = f->nr ? f->addr[f->nr - 1] + PAGE_SIZE : end;

	for (i = 0; i < f->nr; i++) {
		splits = sp_stats.thp_split;
		if (f->page[i])
			sp_visit(slot, f->addr[i], f->page[i],
				 f->how[i] | SP_FOUND_NOW,
				 sp_found_entry(f, i));
		next = sp_found_split(f, i, splits);
		if (next)
			*addr = next;
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
 * Called without mmap_lock, after the range's VMAs were made mergeable
 * as MADV_MERGEABLE makes them.
 *
 * Return: 0 when the range was gone through; -EINTR on a fatal signal;
 * -EAGAIN while run=2 unmerges everything or memory goes offline;
 * -ENOMEM if no memory could be had to start. Pages merged before an
 * error stay merged.
 */
int ksm_merge_range(struct mm_struct *mm, unsigned long start,
		    unsigned long end)
{
	unsigned long addr = start;
	struct sp_found *f;
	int err = 0;

	f = kmalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	/*
	 * Pages just faulted in sit in per-CPU LRU batches, whose references
	 * make merging them fail: a request comes right after the loading,
	 * where ksmd's pass begins with the same drain.
	 */
	lru_add_drain_all();
	while (!err && addr < end) {
		if (fatal_signal_pending(current) ||
		    mutex_lock_killable(&sp_mutex)) {
			err = -EINTR;
			break;
		}
		err = sp_request_batch(mm, f, &addr, end);
		mutex_unlock(&sp_mutex);
		cond_resched();
	}
	kfree(f);
	return err;
}
