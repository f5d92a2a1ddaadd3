// SPDX-License-Identifier: GPL-2.0
/*
 * KSM rmap side: what the rest of mm asks of a KSM folio. Finding
 * the folio of a node, walking every mapping of a KSM folio (reclaim,
 * migration, page_idle, DAMON), following it when migration moves it,
 * deciding whether a swapped-in page needs a private copy, and finding
 * the processes to signal when it is poisoned.
 *
 * Layering (see samepage.h): calls into core.c.
 */
#include <linux/ksm.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/rmap.h>
#include <linux/sched/signal.h>
#include <linux/swap.h>

#include "../internal.h"
#include "samepage.h"

/**
 * sp_folio_node - the node of a KSM folio
 * @folio: the folio
 *
 * Return: the node, or NULL if @folio is not KSM or lost its node.
 */
struct sp_knode *sp_folio_node(struct folio *folio)
{
	unsigned long m = (unsigned long)READ_ONCE(folio->mapping);

	if ((m & PAGE_MAPPING_FLAGS) != PAGE_MAPPING_KSM)
		return NULL;
	return (struct sp_knode *)(m & ~PAGE_MAPPING_FLAGS);
}

/**
 * sp_folio_set_node - turn a locked anonymous folio into a KSM folio
 * @folio: the folio, locked
 * @node: its node, or NULL to leave it KSM without one
 */
void sp_folio_set_node(struct folio *folio, struct sp_knode *node)
{
	WRITE_ONCE(folio->mapping,
		   (void *)((unsigned long)node | PAGE_MAPPING_KSM));
}

static inline void *sp_node_mapping(struct sp_knode *node)
{
	return (void *)((unsigned long)node | PAGE_MAPPING_KSM);
}

/*
 * Take a reference on the folio behind @pfn if it still belongs to @node.
 * A zero refcount is either a folio being freed (the node is stale) or one
 * frozen by migration or swapcache removal; while the folio is in the swap
 * cache it may still be ours, so wait for the freeze to end.
 */
static struct folio *sp_try_get(struct sp_knode *node, unsigned long pfn)
{
	struct folio *folio = pfn_folio(pfn);

	for (;;) {
		if (READ_ONCE(folio->mapping) != sp_node_mapping(node))
			return NULL;
		if (folio_try_get(folio))
			break;
		if (!folio_test_swapcache(folio))
			return NULL;
		cpu_relax();
	}
	if (READ_ONCE(folio->mapping) == sp_node_mapping(node))
		return folio;
	folio_put(folio);
	return NULL;
}

/**
 * sp_node_folio_try - get the KSM folio of a node
 * @node: the node; the caller holds sp_mutex
 * @lock: also lock the folio
 *
 * Return: the folio, referenced (and locked if asked), or NULL when it
 * has gone (every mapping of it was unmapped or copied on write): the
 * node is then stale, and the caller is to free it.
 */
struct folio *sp_node_folio_try(struct sp_knode *node, bool lock)
{
	struct folio *folio;
	unsigned long pfn;

	lockdep_assert_held(&sp_mutex);
	for (;;) {
		pfn = READ_ONCE(node->kpfn);
		folio = sp_try_get(node, pfn);
		if (folio && lock) {
			folio_lock(folio);
			if (READ_ONCE(folio->mapping) != sp_node_mapping(node)) {
				folio_unlock(folio);
				folio_put(folio);
				folio = NULL;
			}
		}
		if (folio)
			return folio;
		/* Pairs with the barrier in folio_migrate_ksm(). */
		smp_rmb();
		if (READ_ONCE(node->kpfn) == pfn)
			return NULL;
	}
}

/*
 * The linear indexes of the VMAs of @sh's anon_vma that may map its page:
 * the page's own for a linear sharer, every one for another.
 */
static void sp_sharer_span(const struct sp_sharer *sh, pgoff_t *first,
			   pgoff_t *last)
{
	*first = 0;
	*last = ULONG_MAX;
	if (sp_sharer_linear(sh))
		*first = *last = sp_loc_addr(sh->loc) >> PAGE_SHIFT;
}

/*
 * Where @vma, found in @sh's span, would map the page, or -EFAULT. A
 * linear sharer's index finds it wherever mremap() moved the VMA; these
 * are the addresses rmap_walk_anon() computes (vma_address()).
 */
static unsigned long sp_sharer_addr(const struct sp_sharer *sh,
				    struct vm_area_struct *vma)
{
	unsigned long addr = sp_loc_addr(sh->loc);

	if (sp_sharer_linear(sh))
		return vma_address(vma, addr >> PAGE_SHIFT, 1);
	if (addr < vma->vm_start || addr >= vma->vm_end)
		return -EFAULT;
	return addr;
}

/*
 * Visit the VMAs that map the KSM page through @sh's anon_vma: on the
 * first round only the sharer's own mm, on the second the others, which
 * forked from it since ksmd last looked. Returns false to end the walk.
 */
static bool sp_walk_sharer(struct folio *folio, struct sp_sharer *sh,
			   struct rmap_walk_control *rwc, bool others)
{
	struct mm_struct *mm = sp_sharer_slot(sh)->mm;
	struct anon_vma *av = sp_sharer_av(sh);
	struct anon_vma_chain *avc;
	bool go_on = true;
	pgoff_t first, last;
	unsigned long addr;

	if (!anon_vma_trylock_read(av)) {
		if (rwc->try_lock) {
			rwc->contended = true;
			return false;
		}
		anon_vma_lock_read(av);
	}
	sp_sharer_span(sh, &first, &last);
	anon_vma_interval_tree_foreach(avc, &av->rb_root, first, last) {
		struct vm_area_struct *vma = avc->vma;
		bool own = vma->vm_mm == mm;

		cond_resched();
		addr = sp_sharer_addr(sh, vma);
		if (addr == -EFAULT || own == others)
			continue;
		if (rwc->invalid_vma && rwc->invalid_vma(vma, rwc->arg))
			continue;
		if (!rwc->rmap_one(folio, vma, addr, rwc->arg) ||
		    (rwc->done && rwc->done(folio))) {
			go_on = false;
			break;
		}
	}
	anon_vma_unlock_read(av);
	return go_on;
}

/**
 * rmap_walk_ksm - call @rwc->rmap_one on every mapping of a KSM folio
 * @folio: the KSM folio, locked
 * @rwc: what to do with each mapping
 */
void rmap_walk_ksm(struct folio *folio, struct rmap_walk_control *rwc)
{
	struct sp_knode *node;
	struct sp_sharer *sh;
	int round;

	VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(folio), folio);
	node = sp_folio_node(folio);
	if (!node)
		return;
	for (round = 0; round < 2; round++)
		for (sh = sp_sharer_next(node, node->sharers); sh;
		     sh = sp_sharer_next(node, sh + 1)) {
			cond_resched();
			if (!sp_walk_sharer(folio, sh, rwc, round))
				return;
		}
}

#ifdef CONFIG_MIGRATION
/**
 * folio_migrate_ksm - follow a KSM folio to its new place
 * @newfolio: the copy, locked, already given @folio's mapping
 * @folio: the old folio, locked
 */
void folio_migrate_ksm(struct folio *newfolio, struct folio *folio)
{
	struct sp_knode *node = sp_folio_node(folio);

	VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(newfolio), newfolio);
	VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(folio), folio);
	VM_WARN_ON_ONCE_FOLIO(newfolio->mapping != folio->mapping, newfolio);
	if (!node)
		return;
	VM_WARN_ON_ONCE_FOLIO(node->kpfn != folio_pfn(folio), folio);
	WRITE_ONCE(node->kpfn, folio_pfn(newfolio));
	/* Merges stay within a node when asked: follow the folio there. */
	WRITE_ONCE(node->nid, folio_nid(newfolio));
	/*
	 * sp_node_folio_try() must find the new pfn before it can find the old
	 * folio no longer pointing at the node.
	 */
	smp_wmb();
	sp_folio_set_node(folio, NULL);
}
#endif

/*
 * A swapped-in anonymous folio may be mapped as it is when it is KSM with
 * its node (and KSM is not unmerging everything), or when it still belongs
 * to this VMA's anon_vma at this address; otherwise the faulting process
 * needs a copy of its own.
 */
static bool sp_swapin_fits(struct folio *folio, struct vm_area_struct *vma,
			   unsigned long addr)
{
	struct anon_vma *av;

	if (folio_test_ksm(folio))
		return sp_folio_node(folio) &&
		       !(READ_ONCE(sp_run) & SP_RUN_UNMERGE);
	av = folio_anon_vma(folio);
	if (!av)
		return true;
	return folio->index == linear_page_index(vma, addr) &&
	       av->root == vma->anon_vma->root;
}

/**
 * ksm_might_need_to_copy - a swapped-in folio, or a private copy of it
 * @folio: the folio found in the swap cache, locked
 * @vma: the faulting VMA
 * @addr: the faulting address
 *
 * Return: @folio when it can be mapped here, a new locked copy, NULL when
 * no memory could be had for a copy, or ERR_PTR(-EHWPOISON).
 */
struct folio *ksm_might_need_to_copy(struct folio *folio,
				     struct vm_area_struct *vma,
				     unsigned long addr)
{
	struct folio *copy;

	/* A hidden KSM page is copied at any access (ksm_hidden_pte()). */
	if (folio_test_large(folio) ||
	    (sp_swapin_fits(folio, vma, addr) && !folio_ksm_hidden(folio)))
		return folio;
	if (PageHWPoison(folio_page(folio, 0)))
		return ERR_PTR(-EHWPOISON);
	if (!folio_test_uptodate(folio))
		return folio;	/* do_swap_page() reports the I/O error */

	copy = vma_alloc_folio(GFP_HIGHUSER_MOVABLE, 0, vma, addr, false);
	if (!copy)
		return NULL;
	if (mem_cgroup_charge(copy, vma->vm_mm, GFP_KERNEL))
		goto drop;
	if (copy_mc_user_highpage(folio_page(copy, 0), folio_page(folio, 0),
				  addr, vma)) {
		folio_put(copy);
		return ERR_PTR(-EHWPOISON);
	}
	folio_set_dirty(copy);
	__folio_mark_uptodate(copy);
	__folio_set_locked(copy);
#ifdef CONFIG_SWAP	/* the event exists only with swap */
	count_vm_event(KSM_SWPIN_COPY);
#endif
	return copy;
drop:
	folio_put(copy);
	return NULL;
}

#ifdef CONFIG_MEMORY_FAILURE
/*
 * Queue every task whose mm maps @sh's page, through a VMA of @sh's span,
 * for a SIGBUS: the walk collect_procs_anon() makes for an anonymous page.
 */
static void sp_collect_sharer(struct sp_sharer *sh, struct page *page,
			      struct list_head *to_kill, int force_early)
{
	struct anon_vma *av = sp_sharer_av(sh);
	struct anon_vma_chain *avc;
	struct task_struct *tsk, *t;
	pgoff_t first, last;
	unsigned long addr;

	sp_sharer_span(sh, &first, &last);
	anon_vma_lock_read(av);
	rcu_read_lock();
	for_each_process(tsk) {
		t = task_early_kill(tsk, force_early);
		if (!t)
			continue;
		anon_vma_interval_tree_foreach(avc, &av->rb_root, first, last) {
			if (avc->vma->vm_mm != t->mm)
				continue;
			addr = sp_sharer_addr(sh, avc->vma);
			if (addr != -EFAULT)
				add_to_kill_ksm(t, page, avc->vma, to_kill,
						addr);
		}
	}
	rcu_read_unlock();
	anon_vma_unlock_read(av);
}

/**
 * collect_procs_ksm - the processes to signal for a poisoned KSM page
 * @folio: the KSM folio, locked
 * @page: the poisoned page
 * @to_kill: list the tasks are added to
 * @force_early: kill early whatever the tasks asked for
 */
void collect_procs_ksm(struct folio *folio, struct page *page,
		       struct list_head *to_kill, int force_early)
{
	struct sp_knode *node = sp_folio_node(folio);
	struct sp_sharer *sh;

	if (!node)
		return;
	for (sh = sp_sharer_next(node, node->sharers); sh;
	     sh = sp_sharer_next(node, sh + 1))
		sp_collect_sharer(sh, page, to_kill, force_early);
}
#endif
