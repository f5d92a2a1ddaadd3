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

/**
 * DOC: Opt-in
 *
 * A process merges all its memory (MMF_VM_MERGE_ANY: every VMA that can
 * be merged is made mergeable, now and as it is mapped) when the first of
 * these that has a say says so:
 *
 * - the process itself, through prctl(PR_SET_MEMORY_MERGE): its choice,
 *   1 or 0, stands against every setting below, and is inherited through
 *   fork and exec (MMF_VM_MERGE_OPTED). 0 is the opt-out from the others;
 * - the nearest memory cgroup, from the process's own up, whose memory.ksm
 *   says 1 or 0 rather than "default". A value written without
 *   CAP_SYS_RESOURCE is delegated: the owner of a delegated subtree may
 *   write memory.ksm of the cgroups it created (cgroup v2 gives it their
 *   files; the delegation root's stay its delegator's). A delegated 1
 *   covers only the writer's own processes, those whose user and group
 *   ids are all the writer's and that are dumpable (not a set-user-ID
 *   program it started), and a 0 above it, of either kind, overrides it;
 *   the others go on to the cgroups above. A delegated 0 covers every
 *   process;
 * - the host: /sys/kernel/mm/ksm/merge_all, 0 by default.
 *
 * When a setting changes, every process it covers is worked out again at
 * once, by the writer; so is one that maps a new VMA without merging
 * everything (which also catches a process forked while a setting was
 * being applied). A process that moves to another memory cgroup, or that
 * clone3() starts in one with an mm of its own (CLONE_INTO_CGROUP without
 * CLONE_VM: an mm follows the cgroup of its owner), is worked out again
 * soon after, by a work item (ksm_policy_moved()), or at its next new VMA
 * if that comes first. A setting that turns a process's merging off stops
 * its new VMAs from being made mergeable, as the prctl does, but unmerges
 * nothing: only the prctl's 0 does that.
 */
#define pr_fmt(fmt) "ksm: " fmt

#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/jump_label_ratelimit.h>
#include <linux/ksm.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/percpu-rwsem.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/sched/coredump.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/security.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>
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

/* Merge all of @mm, now and as it maps more; mmap_lock held for writing. */
static int sp_merge_any_on(struct mm_struct *mm)
{
	int err;

	if (test_bit(MMF_VM_MERGE_ANY, &mm->flags))
		return 0;
	err = sp_enter_once(mm);
	if (err)
		return err;
	set_bit(MMF_VM_MERGE_ANY, &mm->flags);
	sp_mark_all(mm);
	return 0;
}

/* Host-wide opt-in: /sys/kernel/mm/ksm/merge_all. */
static bool sp_merge_all;

/*
 * On while some setting of DOC: Opt-in may decide for a process: merge_all
 * is 1, or a memory cgroup's memory.ksm is not "default" (one count each).
 * Off, every process that did not choose merges nothing of itself, and
 * neither a new VMA nor a cgroup move needs the settings looked up. It
 * turns off HZ after its last count goes, so that whoever may write
 * memory.ksm (a delegated cgroup's owner) cannot have the kernel's code
 * patched more than once a second.
 */
static DEFINE_STATIC_KEY_DEFERRED_FALSE(sp_policy_used, HZ);

/*
 * Taken by the writers of the settings, so that each change and the count
 * it takes or gives back on sp_policy_used are one step: the count never
 * goes below what the settings say.
 */
static DEFINE_MUTEX(sp_policy_lock);

static void sp_policy_get(void)
{
	lockdep_assert_held(&sp_policy_lock);
	static_branch_deferred_inc(&sp_policy_used);
}

static void sp_policy_put(void)
{
	lockdep_assert_held(&sp_policy_lock);
	static_branch_slow_dec_deferred(&sp_policy_used);
}

#ifdef CONFIG_MEMCG
/**
 * struct sp_memcg_setting - what a memory cgroup's memory.ksm says
 * @merge: KSM_MEMCG_OFF or KSM_MEMCG_ON
 * @delegated: written without CAP_SYS_RESOURCE, by the owner of a
 *	delegated subtree (DOC: Opt-in)
 * @uid: the writer's fsuid, when @delegated
 * @gid: the writer's fsgid, when @delegated
 * @rcu: frees the setting once no reader can see it
 */
struct sp_memcg_setting {
	enum ksm_memcg_merge merge;
	bool delegated;
	kuid_t uid;
	kgid_t gid;
	struct rcu_head rcu;
};

/*
 * The settings of the memory cgroups whose memory.ksm is not "default",
 * by mem_cgroup_id(): erased when one says "default" again or goes
 * offline, before its id can be reused. Read under RCU; sp_policy_lock
 * serializes the writers.
 */
static DEFINE_XARRAY(sp_memcg_merge);

/*
 * Is @mm a process of the writer of the delegated @s: its owner's user
 * and group ids all the writer's, as ptrace requires of an unprivileged
 * tracer, and its mm dumpable, as a program its user started is (not
 * after exec of a set-user-ID, set-group-ID or file-capability program)?
 * An mm that is not its owner's yet (exec, before the new program's
 * credentials are in force) is not; ksm_exec_creds() asks again. Under
 * RCU.
 */
static bool sp_memcg_covers(const struct sp_memcg_setting *s,
			    struct mm_struct *mm, struct task_struct *owner)
{
	const struct cred *cred = __task_cred(owner);

	if (READ_ONCE(owner->mm) != mm ||
	    get_dumpable(mm) != SUID_DUMP_USER)
		return false;
	return uid_eq(cred->uid, s->uid) && uid_eq(cred->euid, s->uid) &&
	       uid_eq(cred->suid, s->uid) && gid_eq(cred->gid, s->gid) &&
	       gid_eq(cred->egid, s->gid) && gid_eq(cred->sgid, s->gid);
}

/*
 * What the memory cgroups of @mm's owner say (DOC: Opt-in): the nearest
 * setting decides, but a delegated 1 only for the processes it covers,
 * and any 0 above it overrides it.
 */
static int sp_memcg_says(struct mm_struct *mm)
{
	int says = KSM_MEMCG_DEFAULT;
	struct sp_memcg_setting *s;
	struct task_struct *owner;
	struct mem_cgroup *memcg;

	rcu_read_lock();
	owner = rcu_dereference(mm->owner);
	memcg = owner ? mem_cgroup_from_task(owner) : NULL;
	for (; memcg; memcg = parent_mem_cgroup(memcg)) {
		s = xa_load(&sp_memcg_merge, mem_cgroup_id(memcg));
		if (!s)
			continue;
		if (!s->delegated || s->merge == KSM_MEMCG_OFF) {
			says = s->merge;
			break;
		}
		if (sp_memcg_covers(s, mm, owner))
			says = KSM_MEMCG_ON;
	}
	rcu_read_unlock();
	return says;
}
#else
static int sp_memcg_says(struct mm_struct *mm)
{
	return KSM_MEMCG_DEFAULT;
}
#endif

/* Should @mm merge everything, by the settings (see DOC: Opt-in)? */
static bool sp_policy_wants(struct mm_struct *mm)
{
	if (!static_branch_unlikely(&sp_policy_used.key))
		return false;
	switch (sp_memcg_says(mm)) {
	case KSM_MEMCG_ON:
		return true;
	case KSM_MEMCG_OFF:
		return false;
	}
	return READ_ONCE(sp_merge_all);
}

/* Would sp_policy_apply() change whether @mm merges everything? */
static bool sp_policy_stale(struct mm_struct *mm)
{
	if (test_bit(MMF_VM_MERGE_OPTED, &mm->flags))
		return false;
	return sp_policy_wants(mm) != test_bit(MMF_VM_MERGE_ANY, &mm->flags);
}

/*
 * Work out again whether @mm merges everything, unless its process chose
 * for itself; mmap_lock held for writing. Turning it off unmerges nothing.
 * An mm that cannot be registered now is tried again at its next VMA.
 */
static void sp_policy_apply(struct mm_struct *mm)
{
	mmap_assert_write_locked(mm);
	if (test_bit(MMF_VM_MERGE_OPTED, &mm->flags))
		return;
	if (sp_policy_wants(mm))
		sp_merge_any_on(mm);
	else
		clear_bit(MMF_VM_MERGE_ANY, &mm->flags);
}

/*
 * Work out again whether the process of @task merges everything, after a
 * setting that covers it changed: by the writer of the setting, which
 * waits for the mmap_lock, killably.
 */
static void sp_policy_update(struct task_struct *task)
{
	struct mm_struct *mm = get_task_mm(task);

	if (!mm)
		return;
	if (!mmap_write_lock_killable(mm)) {
		sp_policy_apply(mm);
		mmap_write_unlock(mm);
	}
	mmput(mm);
}

/* The longest wait, in jiffies, between two tries of a moved process. */
#define SP_POLICY_RETRY_MAX	HZ

/**
 * struct sp_policy_work - a moved process's policy, to work out again
 * @dwork: runs sp_policy_work()
 * @mm: the process's mm, mmgrab()bed, with MMF_VM_MERGE_QUEUED set
 * @delay: jiffies before the next try
 */
struct sp_policy_work {
	struct delayed_work dwork;
	struct mm_struct *mm;
	unsigned long delay;
};

/*
 * Apply the policy to a moved process's mm once its mmap_lock can be had
 * for writing at once: whoever holds it may hold it for long (a fault on a
 * file whose server does not answer), and a worker waiting for it would
 * keep the pool's other work waiting too. So it tries, and tries again
 * later, backing off up to SP_POLICY_RETRY_MAX, until the mm exits.
 */
static void sp_policy_work(struct work_struct *work)
{
	struct sp_policy_work *pw = container_of(to_delayed_work(work),
						 struct sp_policy_work, dwork);
	struct mm_struct *mm = pw->mm;

	if (mmget_not_zero(mm)) {
		if (!mmap_write_trylock(mm)) {
			mmput(mm);
			pw->delay = clamp(pw->delay * 2, 1UL,
					  (unsigned long)SP_POLICY_RETRY_MAX);
			queue_delayed_work(system_unbound_wq, &pw->dwork,
					   pw->delay);
			return;
		}
		/*
		 * A move from here on queues the work again. A full barrier:
		 * the cgroup read next is one such a move has set, or the
		 * move sees the bit clear.
		 */
		test_and_clear_bit(MMF_VM_MERGE_QUEUED, &mm->flags);
		sp_policy_apply(mm);
		mmap_write_unlock(mm);
		mmput(mm);
	}
	mmdrop(mm);
	kfree(pw);
}

/*
 * Queue the work item that applies the policy to @mm, unless one is
 * queued already; the caller's mmgrab() goes to it, or is dropped.
 */
static void sp_policy_queue(struct mm_struct *mm)
{
	struct sp_policy_work *pw;

	if (test_and_set_bit(MMF_VM_MERGE_QUEUED, &mm->flags))
		goto drop;
	pw = kmalloc(sizeof(*pw), GFP_KERNEL);
	if (!pw) {
		clear_bit(MMF_VM_MERGE_QUEUED, &mm->flags);
		goto drop;
	}
	pw->mm = mm;
	pw->delay = 0;
	INIT_DELAYED_WORK(&pw->dwork, sp_policy_work);
	queue_delayed_work(system_unbound_wq, &pw->dwork, 0);
	return;
drop:
	mmdrop(mm);
}

/*
 * Would a move change whether @mm merges everything? Told exactly when
 * its mmap_lock can be had for reading at once, since whoever works the
 * policy out holds it for writing; else assumed, and the work item tells.
 */
static bool sp_policy_moved_stale(struct mm_struct *mm)
{
	bool stale = true;

	if (mmap_read_trylock(mm)) {
		stale = sp_policy_stale(mm);
		mmap_read_unlock(mm);
	}
	return stale;
}

/**
 * ksm_policy_moved - a task moved to another memory cgroup
 * @task: the task
 *
 * Called by the memory controller's attach callback, under cgroup_mutex
 * and cgroup_threadgroup_rwsem, which every fork and exit waits for, and
 * by ksm_policy_forked(): so nothing here waits for an mm. If the move
 * changes whether the task's process merges everything (DOC: Opt-in), a
 * work item applies the change once the mm's mmap_lock is free; one queued
 * already for the mm does it. A fork, an exec or a new VMA meanwhile works
 * the change out for itself (__ksm_fork_policy(), __ksm_execve(),
 * ksm_add_vma()). If no memory can be had for the work item, only a
 * policy that merges everything is taken up, at the next new VMA.
 */
void ksm_policy_moved(struct task_struct *task)
{
	struct mm_struct *mm;

	if (!static_branch_unlikely(&sp_policy_used.key))
		return;
	task_lock(task);
	mm = task->mm;
	if (mm && !(task->flags & PF_KTHREAD) &&
	    !test_bit(MMF_VM_MERGE_QUEUED, &mm->flags))
		mmgrab(mm);
	else
		mm = NULL;
	task_unlock(task);
	if (!mm)
		return;
	/* The task cannot exit while cgroup_threadgroup_rwsem is held. */
	if (sp_policy_moved_stale(mm))
		sp_policy_queue(mm);
	else
		mmdrop(mm);
}

/**
 * __ksm_fork_policy - fork while a moved parent's policy is still queued
 * @mm: the child's mm, its VMAs copied; mmap_lock held for writing
 * @oldmm: the parent's mm, with MMF_VM_MERGE_QUEUED; mmap_lock held for
 *	writing
 *
 * The child took the parent's flags and VMA flags from before the move:
 * the parent's policy is applied now, and the child follows it, as it
 * would have, had the parent's work item run before the fork.
 */
void __ksm_fork_policy(struct mm_struct *mm, struct mm_struct *oldmm)
{
	mmap_assert_write_locked(oldmm);
	mmap_assert_write_locked(mm);
	sp_policy_apply(oldmm);
	if (test_bit(MMF_VM_MERGE_ANY, &oldmm->flags))
		sp_merge_any_on(mm);
	else
		clear_bit(MMF_VM_MERGE_ANY, &mm->flags);
}

/**
 * __ksm_execve - exec's new mm: merge all of it if the policy says so
 * @mm: the new mm, with no VMA yet; mmap_lock held for writing
 *
 * The mm took its flags from the old one, which a move may have left to
 * a work item still queued: the policy is worked out again, for the
 * cgroup the process is in now.
 *
 * Return: 0 or -ENOMEM.
 */
int __ksm_execve(struct mm_struct *mm)
{
	mmap_assert_write_locked(mm);
	if (static_branch_unlikely(&sp_policy_used.key))
		sp_policy_apply(mm);
	if (test_bit(MMF_VM_MERGE_ANY, &mm->flags))
		return sp_enter_once(mm);
	return 0;
}

/**
 * ksm_exec_creds - exec's new credentials are in force
 * @mm: the new mm, the caller's own now
 *
 * __ksm_execve() worked the policy out before the new program's
 * credentials were known, and so without the delegated settings, which
 * cover only their writer's processes (a set-user-ID program started in a
 * delegated cgroup is not one). Now they are known, it is worked out
 * again. A delegated setting that a cgroup move's work item applied in
 * between, with the credentials from before, is taken back: the VMAs are
 * unmarked, and whatever of the new stack was merged in that time
 * unmerged (if that fails, for want of memory, the process keeps merging).
 */
void ksm_exec_creds(struct mm_struct *mm)
{
	if (!static_branch_unlikely(&sp_policy_used.key) ||
	    test_bit(MMF_VM_MERGE_OPTED, &mm->flags))
		return;
	mmap_write_lock(mm);
	if (sp_policy_wants(mm))
		sp_merge_any_on(mm);
	else if (test_bit(MMF_VM_MERGE_ANY, &mm->flags) && !sp_clear_all(mm))
		clear_bit(MMF_VM_MERGE_ANY, &mm->flags);
	mmap_write_unlock(mm);
}

/* Every process, after merge_all changed: O(processes), once a write. */
static void sp_policy_sweep(void)
{
	struct task_struct *task;
	struct pid *pid;
	int nr = 1;

	while (!fatal_signal_pending(current)) {
		rcu_read_lock();
		pid = find_ge_pid(nr, &init_pid_ns);
		task = pid ? pid_task(pid, PIDTYPE_TGID) : NULL;
		if (task)
			get_task_struct(task);
		if (pid)
			nr = pid_nr(pid) + 1;
		rcu_read_unlock();
		if (!pid)
			break;
		if (task) {
			sp_policy_update(task);
			put_task_struct(task);
		}
		cond_resched();
	}
}

#ifdef CONFIG_MEMCG
static int sp_policy_task(struct task_struct *task, void *unused)
{
	sp_policy_update(task);
	return fatal_signal_pending(current);
}

/**
 * ksm_memcg_get - what a memory cgroup's memory.ksm says
 * @memcg: the memory cgroup
 *
 * Return: an enum ksm_memcg_merge.
 */
int ksm_memcg_get(struct mem_cgroup *memcg)
{
	struct sp_memcg_setting *s;
	int merge;

	rcu_read_lock();
	s = xa_load(&sp_memcg_merge, mem_cgroup_id(memcg));
	merge = s ? s->merge : KSM_MEMCG_DEFAULT;
	rcu_read_unlock();
	return merge;
}

/*
 * Record @new (NULL for "default") as memory.ksm of @memcg, with its count
 * on sp_policy_used; @new is freed if it cannot be.
 */
static int sp_memcg_store(struct mem_cgroup *memcg,
			  struct sp_memcg_setting *new)
{
	unsigned long id = mem_cgroup_id(memcg);
	struct sp_memcg_setting *old;
	int err = 0;

	mutex_lock(&sp_policy_lock);
	old = xa_load(&sp_memcg_merge, id);
	if (!new) {
		if (old) {
			xa_erase(&sp_memcg_merge, id);
			sp_policy_put();
		}
		goto out;
	}
	/* Counted before it can be seen. */
	if (!old)
		sp_policy_get();
	err = xa_err(xa_store(&sp_memcg_merge, id, new, GFP_KERNEL));
	if (err) {
		if (!old)
			sp_policy_put();
		kfree(new);
		old = NULL;
	}
out:
	mutex_unlock(&sp_policy_lock);
	if (old)
		kfree_rcu(old, rcu);
	return err;
}

/**
 * ksm_memcg_set - write a memory cgroup's memory.ksm
 * @memcg: the memory cgroup, not the root
 * @merge: an enum ksm_memcg_merge
 * @cred: the writer's credentials, those the file was opened with
 *
 * A writer without CAP_SYS_RESOURCE, as PR_SET_MEMORY_MERGE requires (the
 * owner of a delegated subtree, to whom the file's mode lets it write),
 * makes a delegated setting (DOC: Opt-in). Every process of @memcg and
 * its descendants is worked out again.
 *
 * Return: 0 or -ENOMEM.
 */
int ksm_memcg_set(struct mem_cgroup *memcg, int merge,
		  const struct cred *cred)
{
	struct sp_memcg_setting *s = NULL;
	int err;

	if (merge != KSM_MEMCG_DEFAULT) {
		s = kmalloc(sizeof(*s), GFP_KERNEL);
		if (!s)
			return -ENOMEM;
		s->merge = merge;
		s->delegated = security_capable(cred, &init_user_ns,
						CAP_SYS_RESOURCE,
						CAP_OPT_NOAUDIT) != 0;
		s->uid = cred->fsuid;
		s->gid = cred->fsgid;
	}
	err = sp_memcg_store(memcg, s);
	if (!err)
		mem_cgroup_scan_tasks(memcg, sp_policy_task, NULL);
	return err;
}

/**
 * ksm_memcg_offline - a memory cgroup goes offline, with no process left
 * @memcg: the memory cgroup
 */
void ksm_memcg_offline(struct mem_cgroup *memcg)
{
	sp_memcg_store(memcg, NULL);
}

/**
 * ksm_policy_forked - a new task, maybe in another memory cgroup
 * @task: the child, not running yet
 *
 * Called by the memory controller's fork callback, under
 * cgroup_threadgroup_rwsem (and cgroup_mutex, for CLONE_INTO_CGROUP),
 * which keeps both tasks in their cgroups while they are compared.
 * A child with an mm of its own took its parent's flags with it; clone3()
 * with CLONE_INTO_CGROUP may have put it in another cgroup, where the
 * policy can differ: such a child is treated as moved there
 * (ksm_policy_moved()). A child that shares its parent's mm (CLONE_VM)
 * changes nothing, since an mm follows the cgroup of its owner.
 */
void ksm_policy_forked(struct task_struct *task)
{
	bool moved;

	percpu_rwsem_assert_held(&cgroup_threadgroup_rwsem);
	if (!static_branch_unlikely(&sp_policy_used.key))
		return;
	rcu_read_lock();
	moved = mem_cgroup_from_task(task) != mem_cgroup_from_task(current);
	rcu_read_unlock();
	if (moved)
		ksm_policy_moved(task);
}
#endif

/**
 * ksm_add_vma - a new VMA of a merge-any process becomes mergeable
 * @vma: the VMA; mmap_lock held for writing
 *
 * A process that a move's work item has yet to reach gets its new policy
 * here, with the lock the work item waits for: its new VMAs follow the
 * cgroup it is in now.
 */
void ksm_add_vma(struct vm_area_struct *vma)
{
	struct mm_struct *mm = vma->vm_mm;

	if (test_bit(MMF_VM_MERGE_QUEUED, &mm->flags))
		sp_policy_apply(mm);
	else if (!test_bit(MMF_VM_MERGE_ANY, &mm->flags) &&
		 !test_bit(MMF_VM_MERGE_OPTED, &mm->flags) &&
		 sp_policy_wants(mm))
		sp_merge_any_on(mm);
	if (test_bit(MMF_VM_MERGE_ANY, &mm->flags))
		sp_vma_set(vma);
}

/**
 * ksm_enable_merge_any - PR_SET_MEMORY_MERGE 1: merge all of @mm
 * @mm: the caller's mm; mmap_lock held for writing
 *
 * The choice then stands against every setting of DOC: Opt-in.
 *
 * Return: 0 or -ENOMEM.
 */
int ksm_enable_merge_any(struct mm_struct *mm)
{
	int err = sp_merge_any_on(mm);

	if (!err)
		set_bit(MMF_VM_MERGE_OPTED, &mm->flags);
	return err;
}

/**
 * ksm_disable_merge_any - PR_SET_MEMORY_MERGE 0
 * @mm: the caller's mm; mmap_lock held for writing
 *
 * Unmerges and unmarks every VMA; the choice then stands against every
 * setting of DOC: Opt-in.
 *
 * Return: 0, or the error of unmerging; the process is then left with
 * every VMA mergeable, as it was.
 */
int ksm_disable_merge_any(struct mm_struct *mm)
{
	int err = 0;

	if (test_bit(MMF_VM_MERGE_ANY, &mm->flags)) {
		err = sp_clear_all(mm);
		if (err) {
			sp_mark_all(mm);
			return err;
		}
		clear_bit(MMF_VM_MERGE_ANY, &mm->flags);
	}
	set_bit(MMF_VM_MERGE_OPTED, &mm->flags);
	return 0;
}

/**
 * ksm_disable - stop all merging in @mm, for good
 * @mm: the mm; mmap_lock held for writing
 *
 * Return: 0, or the error of unmerging.
 */
int ksm_disable(struct mm_struct *mm)
{
	int err = 0;

	mmap_assert_write_locked(mm);
	/* Merge-any implies registered; either way nothing stays merged. */
	if (test_bit(MMF_VM_MERGE_ANY, &mm->flags))
		return ksm_disable_merge_any(mm);
	if (test_bit(MMF_VM_MERGEABLE, &mm->flags))
		err = sp_clear_all(mm);
	/* And no setting of DOC: Opt-in brings merging back. */
	if (!err)
		set_bit(MMF_VM_MERGE_OPTED, &mm->flags);
	return err;
}

/**
 * ksm_madvise - MADV_MERGEABLE, MADV_UNMERGEABLE and MADV_MERGE on part
 *	of a VMA
 * @vma: the VMA; mmap_lock held for writing
 * @start: start of the range
 * @end: end of the range
 * @advice: the advice
 * @vm_flags: the VMA's new flags, updated here
 *
 * MADV_MERGE marks the range as MADV_MERGEABLE does when the caller
 * advises its own mm. On behalf of another process (process_madvise())
 * it marks nothing: what that process made mergeable itself, or its
 * PR_SET_MEMORY_MERGE made so, is all a request merges there, so that its
 * choices, PR_SET_MEMORY_MERGE 0 among them, stand.
 *
 * Return: 0 or an error.
 */
int ksm_madvise(struct vm_area_struct *vma, unsigned long start,
		unsigned long end, int advice, unsigned long *vm_flags)
{
	int err;

	mmap_assert_write_locked(vma->vm_mm);
	switch (advice) {
	case MADV_MERGE:
		if (vma->vm_mm != current->mm)
			return 0;
		fallthrough;
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

static ssize_t merge_all_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(sp_merge_all));
}

static ssize_t merge_all_store(struct kobject *kobj,
			       struct kobj_attribute *attr, const char *buf,
			       size_t count)
{
	unsigned int v;

	if (kstrtouint(buf, 10, &v) || v > 1)
		return -EINVAL;
	mutex_lock(&sp_policy_lock);
	if (v && !sp_merge_all)
		sp_policy_get();
	if (!v && sp_merge_all)
		sp_policy_put();
	WRITE_ONCE(sp_merge_all, v);
	mutex_unlock(&sp_policy_lock);
	sp_policy_sweep();
	return count;
}

/* In /sys/kernel/mm/ksm beside sysfs.c's files: its sweep is this file's. */
static struct kobj_attribute sp_merge_all_attr = __ATTR_RW(merge_all);

/*
 * Boot. Should a step fail, what the steps before it set up is undone, and
 * KSM stays off: no mm can register (sp_slot_alloc()), and run is 0, which
 * keeps merge requests out (run starts at 1 without sysfs).
 */
static int __init sp_init(void)
{
	int err;

	sp_domain_init();
	sp_knode_init();
	err = sp_core_init();
	if (err)
		goto out;
	err = sp_index_init();
	if (err)
		goto out_core;
	err = sp_hotplug_init();
	if (err)
		goto out_index;
	err = sp_scan_init();
	if (err)
		goto out_hotplug;
	err = sp_sysfs_init();
	if (err)
		goto out_scan;
	err = sysfs_add_file_to_group(mm_kobj, &sp_merge_all_attr.attr, "ksm");
	if (err)
		goto out_sysfs;
	return 0;

out_sysfs:
	sp_sysfs_exit();
out_scan:
	sp_scan_exit();
out_hotplug:
	sp_hotplug_exit();
out_index:
	sp_index_exit();
out_core:
	sp_core_exit();
out:
	WRITE_ONCE(sp_run, SP_RUN_STOP);
	pr_err("cannot start: %d\n", err);
	return err;
}
subsys_initcall(sp_init);
