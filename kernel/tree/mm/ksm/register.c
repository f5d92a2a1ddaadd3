// SPDX-License-Identifier: GPL-2.0
/*
 * KSM registration: the entry points of include/linux/ksm.h through which
 * mms and VMAs ask for merging (madvise, prctl, fork, exec, exit), and
 * boot. The top of mm/ksm/: nothing in it calls into this file.
 *
 * An mm is registered (has a struct sp_slot, MMF_VM_MERGEABLE set) from its
 * first MADV_MERGEABLE or PR_SET_MEMORY_MERGE on, and is inherited through
 * fork. ksmd unregisters it when a pass finds it exited or without any
 * mergeable VMA; __ksm_exit() does it at once when ksmd knows no page of
 * it and is not looking at it.
 *
 * Layering (see samepage.h): calls into core.c, domain.c, hotplug.c,
 * index.c, knode.c, ksmd.c, merge.c, sysfs.c.
 */
#define pr_fmt(fmt) "ksm: " fmt

#include <linux/ksm.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/sched/coredump.h>
#include <linux/sched/mm.h>
#include <linux/xarray.h>

#include "../internal.h"
#include "samepage.h"

#include <trace/events/ksm.h>

/**
 * __ksm_enter - register an mm for merging
 * @mm: the mm
 *
 * Return: 0 or -ENOMEM.
 */
int __ksm_enter(struct mm_struct *mm)
{
	struct sp_slot *slot;
	bool was_empty;
	int err;

	slot = sp_slot_alloc(mm);
	if (!slot)
		return -ENOMEM;
	sp_domain_register(slot);
	mmgrab(mm);

	spin_lock(&sp_slots_lock);
	was_empty = list_empty(&sp_slots);
	/*
	 * Just before the cursor, where the pass in progress has been
	 * already: a new mm waits for the next pass, so that a fork
	 * followed at once by exec costs ksmd nothing. At the end of the
	 * list between passes, and during run=2, whose walk must not miss
	 * it.
	 */
	if (sp_cur.slot && !(READ_ONCE(sp_run) & SP_RUN_UNMERGE))
		err = sp_slot_link(slot, &sp_cur.slot->list);
	else
		err = sp_slot_link(slot, &sp_slots);
	spin_unlock(&sp_slots_lock);
	if (err) {
		sp_slot_discard(slot);
		sp_slot_free(slot);
		return err;
	}

	set_bit(MMF_VM_MERGEABLE, &mm->flags);
	if (was_empty)
		wake_up_interruptible(&sp_thread_wait);
	trace_ksm_enter(mm);
	return 0;
}

/**
 * __ksm_exit - an mm that was registered is being torn down
 * @mm: the mm; mm_users is zero
 */
void __ksm_exit(struct mm_struct *mm)
{
	struct sp_slot *slot;
	bool easy = false;

	spin_lock(&sp_slots_lock);
	slot = sp_slot_of(mm);
	if (slot && slot != sp_cur.slot) {
		xa_lock(&slot->pages);
		easy = xa_empty(&slot->pages);
		xa_unlock(&slot->pages);
		if (easy) {
			sp_slot_unlink(slot);
		} else if (sp_cur.slot) {
			/* Let ksmd clean up soon: right after the cursor. */
			list_move(&slot->list, &sp_cur.slot->list);
		}
	}
	spin_unlock(&sp_slots_lock);

	if (easy) {
		clear_bit(MMF_VM_MERGE_ANY, &mm->flags);
		clear_bit(MMF_VM_MERGEABLE, &mm->flags);
		sp_slot_free(slot);
	} else if (slot) {
		/* ksmd may be in this mm: let it leave before teardown. */
		mmap_write_lock(mm);
		mmap_write_unlock(mm);
	}
	trace_ksm_exit(mm);
}

static int sp_enter_once(struct mm_struct *mm)
{
	if (test_bit(MMF_VM_MERGEABLE, &mm->flags))
		return 0;
	return __ksm_enter(mm);
}

/* Mark @vma mergeable if it can be; mmap_lock held for writing. */
static void sp_vma_set(struct vm_area_struct *vma)
{
	if (!(vma->vm_flags & VM_MERGEABLE) && sp_vma_compatible(vma))
		vm_flags_set(vma, VM_MERGEABLE);
}

/* Unshare @vma's KSM pages and clear its mergeable flag. */
static int sp_vma_clear(struct vm_area_struct *vma)
{
	int err;

	if (!(vma->vm_flags & VM_MERGEABLE))
		return 0;
	if (vma->anon_vma) {
		vma_start_write(vma);
		err = sp_unshare_range(vma, vma->vm_start, vma->vm_end);
		if (err)
			return err;
	}
	vm_flags_clear(vma, VM_MERGEABLE);
	return 0;
}

/**
 * ksm_add_vma - a new VMA of a merge-any process becomes mergeable
 * @vma: the VMA; mmap_lock held for writing
 */
void ksm_add_vma(struct vm_area_struct *vma)
{
	if (test_bit(MMF_VM_MERGE_ANY, &vma->vm_mm->flags))
		sp_vma_set(vma);
}

/* Mark every VMA of @mm that can be merged as mergeable. */
static void sp_mark_all(struct mm_struct *mm)
{
	struct vm_area_struct *vma;
	struct vma_iterator vmi;

	vma_iter_init(&vmi, mm, 0);
	for_each_vma(vmi, vma)
		sp_vma_set(vma);
}

/* Unmerge and unmark every VMA of @mm. */
static int sp_clear_all(struct mm_struct *mm)
{
	struct vm_area_struct *vma;
	struct vma_iterator vmi;
	int err = 0;

	vma_iter_init(&vmi, mm, 0);
	for_each_vma(vmi, vma) {
		err = sp_vma_clear(vma);
		if (err)
			break;
	}
	return err;
}

/**
 * ksm_enable_merge_any - PR_SET_MEMORY_MERGE 1: merge all of @mm
 * @mm: the caller's mm; mmap_lock held for writing
 *
 * Return: 0 or -ENOMEM.
 */
int ksm_enable_merge_any(struct mm_struct *mm)
{
	int err = 0;

	if (!test_bit(MMF_VM_MERGE_ANY, &mm->flags)) {
		err = sp_enter_once(mm);
		if (!err) {
			set_bit(MMF_VM_MERGE_ANY, &mm->flags);
			sp_mark_all(mm);
		}
	}
	return err;
}

/**
 * ksm_disable_merge_any - PR_SET_MEMORY_MERGE 0
 * @mm: the caller's mm; mmap_lock held for writing
 *
 * Return: 0, or the error of unmerging; the process is then left with
 * every VMA mergeable, as it was.
 */
int ksm_disable_merge_any(struct mm_struct *mm)
{
	int err = 0;

	if (test_bit(MMF_VM_MERGE_ANY, &mm->flags)) {
		err = sp_clear_all(mm);
		if (err)
			sp_mark_all(mm);
		else
			clear_bit(MMF_VM_MERGE_ANY, &mm->flags);
	}
	return err;
}

/**
 * ksm_disable - stop all merging in @mm
 * @mm: the mm; mmap_lock held for writing
 *
 * Return: 0, or the error of unmerging.
 */
int ksm_disable(struct mm_struct *mm)
{
	mmap_assert_write_locked(mm);
	/* Merge-any implies registered; either way nothing stays merged. */
	if (test_bit(MMF_VM_MERGE_ANY, &mm->flags))
		return ksm_disable_merge_any(mm);
	return test_bit(MMF_VM_MERGEABLE, &mm->flags) ? sp_clear_all(mm) : 0;
}

/**
 * ksm_madvise - MADV_MERGEABLE and MADV_UNMERGEABLE on part of a VMA
 * @vma: the VMA; mmap_lock held for writing
 * @start: start of the range
 * @end: end of the range
 * @advice: the advice
 * @vm_flags: the VMA's new flags, updated here
 *
 * Return: 0 or an error.
 */
int ksm_madvise(struct vm_area_struct *vma, unsigned long start,
		unsigned long end, int advice, unsigned long *vm_flags)
{
	int err;

	switch (advice) {
	case MADV_MERGEABLE:
		if ((*vm_flags & VM_MERGEABLE) || !sp_vma_compatible(vma))
			return 0;
		err = sp_enter_once(vma->vm_mm);
		if (err)
			return err;
		*vm_flags |= VM_MERGEABLE;
		return 0;
	case MADV_UNMERGEABLE:
		if (!(*vm_flags & VM_MERGEABLE))
			return 0;
		if (vma->anon_vma) {
			vma_start_write(vma);
			err = sp_unshare_range(vma, start, end);
			if (err)
				return err;
		}
		*vm_flags &= ~VM_MERGEABLE;
		return 0;
	}
	return 0;
}
EXPORT_SYMBOL_GPL(ksm_madvise);

static int __init sp_init(void)
{
	int err;

	sp_domain_init();
	sp_knode_init();
	err = sp_core_init();
	if (!err)
		err = sp_index_init();
	if (!err)
		err = sp_scan_init();
	if (!err)
		err = sp_hotplug_init();
	if (!err)
		err = sp_sysfs_init();
	if (err)
		pr_err("cannot start: %d\n", err);
	return err;
}
subsys_initcall(sp_init);
