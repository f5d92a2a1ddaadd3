// SPDX-License-Identifier: GPL-2.0
/*
 * ksmd: the thread, its passes and batches, and run=2.
 *
 * ksmd walks the registered mms in list order, and in each the present
 * anonymous pages of its mergeable VMAs in address order, pages_to_scan
 * pages a batch: gathered a page table at a time (walk.c), each visited
 * (visit.c). One walk over every mm is a pass; full_scans counts them.
 * Addresses where no page is found any more are forgotten as the walk
 * passes them (knode.c). Everything ksmd does is under sp_mutex.
 *
 * Layering (see samepage.h): calls into advisor.c, core.c, domain.c,
 * estimate.c, index.c, knode.c, merge.c, pressure.c, thp.c, visit.c,
 * walk.c.
 */
#include <linux/freezer.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/swap.h>

#include "../internal.h"
#include "samepage.h"

#include <trace/events/ksm.h>

static bool sp_should_run(void)
{
	return (READ_ONCE(sp_run) & SP_RUN_MERGE) && !list_empty(&sp_slots) &&
	       !sp_offline_pending();
}

/* ksmd's, under sp_mutex: too big for its stack. */
static struct sp_found sp_found;

/* Start a pass; false when no mm is registered. */
static bool sp_pass_begin(void)
{
	struct sp_slot *first;

	if (list_empty(&sp_slots))
		return false;
	sp_advisor_pass_begin();
	trace_ksm_start_scan(sp_stats.full_scans, sp_stats.tracked);
	sp_cand_reset(&sp_cands);
	/*
	 * Pages in per-CPU LRU batches hold references that block merging.
	 * Draining them waits for every CPU: the cursor is set only after,
	 * so that an mm registered meanwhile is appended to the list and
	 * scanned in this pass, not put before the cursor to wait for the
	 * next one.
	 */
	lru_add_drain_all();
	spin_lock(&sp_slots_lock);
	first = list_first_entry_or_null(&sp_slots, struct sp_slot, list);
	sp_cur.slot = first;
	sp_cur.addr = 0;
	sp_cur.saw_vma = false;
	sp_cur.thp_cleaned = 0;
	spin_unlock(&sp_slots_lock);
	return first;
}

/* End a pass: ksm_stop_scan carries its number, full_scans before it. */
static void sp_pass_end(void)
{
	sp_advisor_pass_end();
	sp_thp_pass_end();
	sp_est_pass_end();
	trace_ksm_stop_scan(sp_stats.full_scans, sp_stats.tracked);
	sp_stats.full_scans++;
}

/* Has @mm a mergeable VMA now? Its mmap_lock held. */
static bool sp_mm_mergeable(struct mm_struct *mm)
{
	VMA_ITERATOR(vmi, mm, 0);
	struct vm_area_struct *vma;

	mmap_assert_locked(mm);
	for_each_vma(vmi, vma)
		if (vma->vm_flags & VM_MERGEABLE)
			return true;
	return false;
}

/* Move the cursor to the slot after @slot, or between passes. */
static void sp_cursor_past(struct sp_slot *slot)
{
	lockdep_assert_held(&sp_slots_lock);
	sp_cur.slot = list_is_last(&slot->list, &sp_slots) ? NULL :
		      list_next_entry(slot, list);
	sp_cur.addr = 0;
	sp_cur.saw_vma = false;
	sp_cur.thp_cleaned = 0;
}

/*
 * Is the rest of @slot passed over, under pressure_only, its mm
 * not short of memory (pressure.c)? Not an exited mm's: what ksmd knows
 * of it is forgotten as ever.
 */
static bool sp_passes_over(struct sp_slot *slot)
{
	if (!READ_ONCE(sp_pressure_only) ||
	    !atomic_read(&slot->mm->mm_users) || !sp_pressure_skips(slot->mm))
		return false;
	spin_lock(&sp_slots_lock);
	sp_cursor_past(slot);
	spin_unlock(&sp_slots_lock);
	return true;
}

/*
 * Done with the cursor's slot (its mm's mmap_lock held, dropped here):
 * move on, and unregister the mm if it exited or has no mergeable VMA
 * left (a process that asked for merge-any keeps its slot).
 *
 * The pass's walk of the mm took several holds of its mmap_lock, and a
 * VMA made mergeable behind the cursor between two of them was not seen;
 * MADV_MERGEABLE did not register the mm again, finding it registered.
 * So an mm is unregistered only when this hold, the last, finds no
 * mergeable VMA in the whole mm, as mainline's one walk from address 0
 * under one hold does.
 */
static void sp_slot_done(struct sp_slot *slot)
{
	struct mm_struct *mm = slot->mm;
	bool gone = !atomic_read(&mm->mm_users) ||
		    (!sp_cur.saw_vma && !test_bit(MMF_VM_MERGE_ANY, &mm->flags) &&
		     !sp_mm_mergeable(mm));

	/*
	 * Everything is done before mmap_lock is dropped: holding it keeps a
	 * racing MADV_MERGEABLE from finding the mm still registered, and an
	 * exiting mm's teardown waits for it.
	 */
	if (gone) {
		sp_forget_all(slot);
		clear_bit(MMF_VM_MERGEABLE, &mm->flags);
	}
	spin_lock(&sp_slots_lock);
	sp_cursor_past(slot);
	if (gone)
		sp_slot_unlink(slot);
	spin_unlock(&sp_slots_lock);
	mmap_read_unlock(mm);
	if (gone)
		sp_slot_free(slot);
}

/*
 * Entries one gather may forget. Forgetting costs less than a visit, but
 * an mm that exited or unmapped much of what ksmd tracked must not hold
 * sp_mutex for all of it at once: sp_scan_batch() lets go of it between
 * gathers.
 */
#define SP_FORGET_MAX	4096

/*
 * Gather the next pages to visit into sp_found, referenced, at most @max;
 * false at the end of a pass. Entries of addresses where the walk found no
 * page are forgotten on the way, at most SP_FORGET_MAX: when there are
 * more, the gather ends there, with the pages before them or none. An
 * exited mm is forgotten whole, in bounded steps too: its merged pages,
 * then its xarray a range at a time (sp_forget_some()).
 */
static bool sp_gather(struct sp_slot **slotp, unsigned int max)
{
	unsigned int i, budget = SP_FORGET_MAX;
	struct sp_found *f = &sp_found;
	struct sp_slot *slot;
	unsigned long stop;

	if (!sp_cur.slot && !sp_pass_begin())
		return false;
	while ((slot = sp_cur.slot)) {
		if (sp_passes_over(slot))
			continue;
		if (!sp_cur.addr)
			sp_domain_enter(slot);
		mmap_read_lock(slot->mm);
		*slotp = slot;
		f->slot = slot;
		f->nr = 0;
		f->max = max;
		f->thp_cleaned = &sp_cur.thp_cleaned;
		if (!atomic_read(&slot->mm->mm_users)) {
			if (sp_forget_some(slot, &budget)) {
				sp_slot_done(slot);
				continue;
			}
			mmap_read_unlock(slot->mm);
			return true;
		}
		if (sp_find_in_mm(slot->mm, sp_cur.addr, ULONG_MAX, f))
			sp_cur.saw_vma = true;
		for (i = 0; i < f->nr; i++) {
			stop = sp_forget(slot, sp_cur.addr, f->addr[i], &budget);
			if (stop != f->addr[i]) {
				sp_found_trim(f, i);
				break;
			}
			sp_cur.addr = f->addr[i] + PAGE_SIZE;
		}
		/*
		 * f->gen stays the walk's: forgetting a page can free a stale
		 * node, and with it erase the entries of pages found here.
		 */
		if (!f->nr) {
			stop = sp_forget(slot, sp_cur.addr, ULONG_MAX, &budget);
			if (stop == ULONG_MAX) {
				sp_slot_done(slot);
				continue;
			}
			sp_cur.addr = stop;
		}
		mmap_read_unlock(slot->mm);
		return true;
	}
	sp_pass_end();
	return false;
}

/* Visit the @i-th page found; whether it counts as scanned. */
static bool sp_visit_one(struct sp_slot *slot, struct sp_found *f,
			 unsigned int i)
{
	if (f->how[i] & SP_FOUND_AWAY)
		return false;
	if (f->how[i] & SP_FOUND_MERGED)
		return true;
	return sp_visit(slot, f->addr[i], f->page[i], f->how[i],
			sp_found_entry(f, i));
}

/*
 * Visit the gathered pages, each reference dropped after its visit (a
 * page visited later may pair with it, and merging wants no extra
 * reference on it); when ksmd must freeze, the cursor goes back to the
 * first page not visited. Returns the budget left.
 */
static unsigned int sp_visit_found(struct sp_slot *slot, unsigned int budget)
{
	struct sp_found *f = &sp_found;
	unsigned long next, splits;
	unsigned int i;

	for (i = 0; i < f->nr; i++) {
		splits = sp_stats.thp_split;
		if (!budget || freezing(current)) {
			sp_cur.addr = min(sp_cur.addr, f->addr[i]);
			if (f->page[i])
				sp_unvisited(slot, f->addr[i], f->how[i]);
		} else if (sp_visit_one(slot, f, i)) {
			sp_stats.scanned++;
			budget--;
		}
		next = sp_found_split(f, i, splits);
		if (next)
			sp_cur.addr = min(sp_cur.addr, next);
		sp_found_put(f, i);
		cond_resched();
	}
	sp_found_done(f);
	return budget;
}

/* Let go of sp_mutex for a moment, for those who wait for it. */
static void sp_mutex_yield(void)
{
	mutex_unlock(&sp_mutex);
	cond_resched();
	mutex_lock(&sp_mutex);
}

/*
 * Between gathers, nothing is held but sp_mutex and the cursor: let the
 * others that wait for sp_mutex (a sysfs store, run=2, memory going
 * offline) in, so that none waits for more than one gather. Returns
 * whether the batch may go on.
 */
static bool sp_let_others_in(void)
{
	sp_mutex_yield();
	return sp_should_run();
}

static void sp_scan_batch(unsigned int budget)
{
	struct sp_slot *slot;

	while (budget && !freezing(current)) {
		if (!sp_gather(&slot, min_t(unsigned int, budget, SP_GATHER)))
			return;
		budget = sp_visit_found(slot, budget);
		if (!sp_let_others_in())
			return;
	}
}

/*
 * Unshare every KSM page mapped in @mm's mergeable VMAs, as
 * MADV_UNMERGEABLE does, without sp_mutex. Returns 0 or the error that
 * stopped it.
 */
static int sp_unshare_mm(struct mm_struct *mm)
{
	VMA_ITERATOR(vmi, mm, 0);
	struct vm_area_struct *vma;
	int err = 0;

	mmap_read_lock(mm);
	if (!atomic_read(&mm->mm_users))
		goto out;	/* exiting: its teardown unmaps them */
	for_each_vma(vmi, vma) {
		if (!(vma->vm_flags & VM_MERGEABLE))
			continue;
		err = sp_unshare_range(vma, vma->vm_start, vma->vm_end);
		if (err)
			break;
	}
out:
	mmap_read_unlock(mm);
	return err;
}

/**
 * sp_unmerge_all - run=2: unshare every KSM page and forget every page
 *
 * Called with sp_mutex held, and the writers of run kept out. Each mm
 * is unshared without sp_mutex, as MADV_UNMERGEABLE would, then
 * forgotten SP_FORGET_MAX entries at a time, with sp_mutex let go between
 * (and between mms), so that memory going offline or a settings write
 * waits for a gather's worth of work, however large the mms. Slots of
 * exited mms are freed on the way. Nothing merges meanwhile: ksmd does
 * not scan, run having no merge bit, and the cursor's slot, which keeps
 * __ksm_exit() from freeing it, is this function's.
 *
 * Return: 0, or the error that stopped it (-ENOMEM, -ERESTARTSYS).
 */
int sp_unmerge_all(void)
{
	unsigned int budget;
	struct sp_slot *slot;
	int err = 0;

	lockdep_assert_held(&sp_mutex);
	spin_lock(&sp_slots_lock);
	sp_cur.slot = list_first_entry_or_null(&sp_slots, struct sp_slot, list);
	spin_unlock(&sp_slots_lock);
	while (!err && (slot = sp_cur.slot)) {
		mutex_unlock(&sp_mutex);
		err = sp_unshare_mm(slot->mm);
		mutex_lock(&sp_mutex);
		for (;;) {
			budget = SP_FORGET_MAX;
			if (sp_forget_some(slot, &budget))
				break;
			sp_mutex_yield();
		}
		mmap_read_lock(slot->mm);
		sp_cur.saw_vma = true;	/* keep live slots registered */
		sp_slot_done(slot);
		sp_mutex_yield();
	}
	spin_lock(&sp_slots_lock);
	sp_cur.slot = NULL;
	spin_unlock(&sp_slots_lock);
	sp_stable_for_each(&sp_stable, sp_release_orphan);
	sp_thp_forget();
	sp_stats.full_scans = 0;
	return err;
}

/*
 * Between batches: sleep sleep_millisecs (a new value takes effect at
 * once), or, with nothing to do, until there is. With sleep_millisecs 0
 * the wait returns at once: without a reschedule point, a batch of
 * pages_to_scan 0 would then never let the CPU go, on a kernel without
 * preemption, and work queued on it (an LRU drain) would wait for good.
 */
static void sp_idle(void)
{
	unsigned int ms = sp_pressure_idle_ms(READ_ONCE(sp_sleep_ms));

	if (!sp_should_run())
		wait_event_freezable(sp_thread_wait,
				     kthread_should_stop() || sp_should_run());
	else
		wait_event_freezable_timeout(sp_thread_wait,
					     kthread_should_stop() ||
					     sp_pressure_idle_ms(READ_ONCE(sp_sleep_ms)) != ms,
					     msecs_to_jiffies(ms));
	cond_resched();
}

/*
 * Split what ended passes left of the THPs whose PMDs they split, one THP
 * a hold of sp_mutex; not while ksmd must hold no page (memory going
 * offline, run other than 1): the rest waits for a later batch.
 */
static void sp_split_left(void)
{
	while (sp_should_run() && !freezing(current) && sp_thp_split_next())
		sp_mutex_yield();
}

/*
 * Whether ksmd scans now, and in *@pages how many pages: pages_to_scan,
 * or under pressure_only as much of it as memory pressure asks for; none
 * (it stands down) while no mm is short.
 */
static bool sp_batch_pages(unsigned int *pages)
{
	*pages = READ_ONCE(sp_pages_to_scan);
	if (!READ_ONCE(sp_pressure_only))
		return true;
	*pages = sp_pressure_budget(*pages, sp_cur.slot);
	return *pages;
}

static int sp_ksmd(void *unused)
{
	unsigned int pages;

	set_user_nice(current, 5);
	set_freezable();
	do {
		scoped_guard(mutex, &sp_mutex) {
			if (sp_should_run() && sp_batch_pages(&pages)) {
				sp_scan_batch(pages);
				sp_split_left();
				sp_sweep(pages);
			}
		}
		sp_idle();
	} while (!kthread_should_stop());
	return 0;
}

static struct task_struct *sp_ksmd_task;

/**
 * sp_scan_init - start ksmd
 *
 * Return: 0 or the error from kthread_run().
 */
int __init sp_scan_init(void)
{
	struct task_struct *t = kthread_run(sp_ksmd, NULL, "ksmd");

	if (IS_ERR(t))
		return PTR_ERR(t);
	sp_ksmd_task = t;
	return 0;
}

/**
 * sp_scan_exit - stop ksmd, when boot fails further on
 */
void __init sp_scan_exit(void)
{
	kthread_stop(sp_ksmd_task);
	sp_ksmd_task = NULL;
}
