// SPDX-License-Identifier: GPL-2.0
/*
 * KSM merge path: the page-table side of merging and unmerging.
 *
 * Merging a page into a KSM page happens in two steps under the page's
 * lock: its PTE is made read-only and clean, after a check that nobody
 * but the page tables (and ksmd) holds the page, which keeps its content
 * still; then, if the content still equals the KSM page's, the PTE is
 * pointed at the KSM page. A later write to it faults and takes a private
 * copy (do_wp_page() never reuses a KSM folio). Unmerging is that fault,
 * requested with FAULT_FLAG_UNSHARE. Both PTE changes of a merge reach
 * secondary MMUs through change_pte (set_pte_at_notify()) as well.
 *
 * Layering (see samepage.h): calls into core.c, index.c, rmap.c, thp.c.
 */
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/huge_mm.h>
#include <linux/mmu_notifier.h>
#include <linux/pagemap.h>
#include <linux/pagewalk.h>
#include <linux/rmap.h>
#include <linux/sched/signal.h>
#include <linux/swap.h>
#include <linux/swapops.h>
#include <asm/tlbflush.h>

#include "../internal.h"
#include "samepage.h"

/**
 * sp_vma_compatible - may this VMA's pages be merged at all?
 * @vma: the VMA
 *
 * Return: true for private anonymous-capable mappings KSM can handle.
 */
bool sp_vma_compatible(struct vm_area_struct *vma)
{
	vm_flags_t refused = VM_SHARED | VM_MAYSHARE | VM_PFNMAP | VM_IO |
			     VM_DONTEXPAND | VM_HUGETLB | VM_MIXEDMAP |
			     VM_DROPPABLE;

#ifdef VM_SAO
	refused |= VM_SAO;
#endif
#ifdef VM_SPARC_ADI
	refused |= VM_SPARC_ADI;
#endif
	return !(vma->vm_flags & refused) && !vma_is_dax(vma);
}

/**
 * sp_mergeable_vma - the mergeable VMA at @addr, if it is still there
 * @mm: the mm, mmap_lock held, possibly exiting
 * @addr: the address
 *
 * Return: the VMA, or NULL if @mm is exiting or @addr is not mergeable.
 */
struct vm_area_struct *sp_mergeable_vma(struct mm_struct *mm,
					unsigned long addr)
{
	struct vm_area_struct *vma;

	if (!atomic_read(&mm->mm_users))
		return NULL;
	vma = vma_lookup(mm, addr);
	if (!vma || !vma->anon_vma || !(vma->vm_flags & VM_MERGEABLE))
		return NULL;
	return vma;
}

/* May a page of @folio be paired: anonymous, not KSM yet, ordinary memory? */
static bool sp_folio_pairable(struct folio *folio)
{
	return folio_test_anon(folio) && !folio_test_ksm(folio) &&
	       !folio_is_zone_device(folio);
}

/*
 * The page mapped at @addr of @vma if it may be paired, referenced, or
 * NULL; mmap_lock held, the PTE lock taken by the folio walk.
 */
static struct page *sp_pairable_page(struct vm_area_struct *vma,
				     unsigned long addr)
{
	struct folio_walk fw;
	struct folio *folio = folio_walk_start(&fw, vma, addr, 0);
	struct page *page;

	if (!folio)
		return NULL;
	page = sp_folio_pairable(folio) ? fw.page : NULL;
	if (page)
		folio_get(folio);
	folio_walk_end(&fw, vma);
	return page;
}

/**
 * sp_get_page_at - the page at an address, if it may be paired
 * @mm: the mm, whose users the caller counts
 * @addr: the address, in a mergeable VMA
 *
 * Takes @mm's mmap_lock for reading, and the PTE lock in the folio walk.
 *
 * Return: the page, referenced, if it is anonymous, not KSM and ordinary
 * memory; else NULL.
 */
struct page *sp_get_page_at(struct mm_struct *mm, unsigned long addr)
{
	struct vm_area_struct *vma;
	struct page *page;

	mmap_read_lock(mm);
	vma = sp_mergeable_vma(mm, addr);
	page = vma ? sp_pairable_page(vma, addr) : NULL;
	mmap_read_unlock(mm);
	return page;
}

/* Is the page at @addr mapped from KSM: a KSM folio or KSM's zero page? */
static bool sp_maps_ksm(struct vm_area_struct *vma, unsigned long addr)
{
	struct folio_walk fw;
	struct folio *folio;
	bool ksm = false;

	folio = folio_walk_start(&fw, vma, addr, FW_MIGRATION | FW_ZEROPAGE);
	if (!folio)
		return false;
	if (!folio_test_large(folio) && fw.level == FW_LEVEL_PTE)
		ksm = folio_test_ksm(folio) || is_ksm_zero_pte(fw.pte);
	folio_walk_end(&fw, vma);
	return ksm;
}

/*
 * Give @addr a private copy of the KSM page it maps: @mapped says a walk
 * just saw it map one, so the first fault needs no look first. The
 * unshare fault may back out on a race; unless @once, try until the
 * address no longer maps a KSM page. SIGBUS and SIGSEGV mean the mapping
 * went away, which unmapped the KSM page as well.
 */
static int sp_unshare_from(struct vm_area_struct *vma, unsigned long addr,
			   bool mapped, bool once)
{
	const vm_fault_t stop = VM_FAULT_OOM | VM_FAULT_SIGBUS |
				VM_FAULT_SIGSEGV;
	vm_fault_t ret;

	while (mapped || sp_maps_ksm(vma, addr)) {
		mapped = false;
		cond_resched();
		ret = handle_mm_fault(vma, addr,
				      FAULT_FLAG_UNSHARE | FAULT_FLAG_REMOTE,
				      NULL);
		if (ret & VM_FAULT_OOM)
			return -ENOMEM;
		if ((ret & stop) || once)
			break;
	}
	return 0;
}

/**
 * sp_unshare - give @addr a private copy of the KSM page it maps
 * @vma: the VMA, mmap_lock held
 * @addr: the address
 *
 * Return: 0, or -ENOMEM if no copy could be had.
 */
int sp_unshare(struct vm_area_struct *vma, unsigned long addr)
{
	return sp_unshare_from(vma, addr, false, false);
}

/* Does this PTE map KSM: a KSM folio (or one migrating), or the zero page? */
static bool sp_pte_is_ksm(struct vm_area_struct *vma, unsigned long addr,
			  pte_t pte)
{
	struct page *page;
	swp_entry_t entry;

	if (pte_present(pte)) {
		if (is_ksm_zero_pte(pte))
			return true;
		page = vm_normal_page(vma, addr, pte);
		return page && folio_test_ksm(page_folio(page));
	}
	if (pte_none(pte))
		return false;
	entry = pte_to_swp_entry(pte);
	return is_migration_entry(entry) &&
	       folio_test_ksm(pfn_swap_entry_folio(entry));
}

/* KSM mappings found by one walk: unshared after it. */
#define SP_UNSHARE_BATCH	32

struct sp_ksm_found {
	unsigned int nr;
	unsigned long addr[SP_UNSHARE_BATCH];
};

/*
 * A page walk that gathers the addresses of PTEs mapping KSM, and stops
 * when it has a batch of them; THPs are skipped.
 */
static int sp_ksm_pmd_entry(pmd_t *pmdp, unsigned long addr,
			    unsigned long end, struct mm_walk *walk)
{
	struct sp_ksm_found *found = walk->private;
	pte_t *start, *ptep;
	spinlock_t *ptl;	/* the PTE table's lock */
	int ret = 0;

	walk->action = ACTION_CONTINUE;
	if (pmd_trans_huge(pmdp_get_lockless(pmdp)))
		return 0;
	start = pte_offset_map_lock(walk->mm, pmdp, addr, &ptl);
	if (!start)
		return 0;
	for (ptep = start; addr < end && !ret; ptep++, addr += PAGE_SIZE) {
		if (sp_pte_is_ksm(walk->vma, addr, ptep_get(ptep))) {
			found->addr[found->nr++] = addr;
			ret = found->nr == SP_UNSHARE_BATCH;
		}
	}
	pte_unmap_unlock(start, ptl);
	return ret;
}

static const struct mm_walk_ops sp_ksm_walk_ops = {
	.pmd_entry = sp_ksm_pmd_entry,
	.walk_lock = PGWALK_RDLOCK,
};

/*
 * Unshare each address of @found, which a walk just saw map KSM: with
 * @once, one fault each; else until it no longer maps KSM.
 */
static int sp_unshare_batch(struct vm_area_struct *vma,
			    struct sp_ksm_found *found, bool once)
{
	unsigned int i;
	int err;

	for (i = 0; i < found->nr; i++) {
		if (fatal_signal_pending(current))
			return -ERESTARTSYS;
		err = sp_unshare_from(vma, found->addr[i], true, once);
		if (err)
			return err;
	}
	return 0;
}

/**
 * sp_unshare_range - unshare every KSM page mapped in a range of a VMA
 * @vma: the VMA, mmap_lock held
 * @start: first address
 * @end: end of the range
 *
 * A page walk finds the KSM mappings, a batch at a time, so that the cost
 * follows the pages mapped rather than the size of the range; each is
 * then faulted once without being looked up again, and one more walk of
 * the batch's range finds those whose fault backed out.
 *
 * Return: 0, -ENOMEM, or -ERESTARTSYS when a fatal signal is pending.
 */
int sp_unshare_range(struct vm_area_struct *vma, unsigned long start,
		     unsigned long end)
{
	struct sp_ksm_found found;
	unsigned long first;
	bool more;
	int err;

	if (!vma->anon_vma)
		return 0;
	do {
		found.nr = 0;
		more = walk_page_range_vma(vma, start, end, &sp_ksm_walk_ops,
					   &found) > 0;
		if (!found.nr)
			break;
		first = found.addr[0];
		start = found.addr[found.nr - 1] + PAGE_SIZE;
		err = sp_unshare_batch(vma, &found, true);
		/*
		 * A fault may back out on a race: one more walk of the
		 * batch's range finds what is still KSM, for the slow way.
		 */
		if (!err) {
			found.nr = 0;
			walk_page_range_vma(vma, first, start,
					    &sp_ksm_walk_ops, &found);
			err = sp_unshare_batch(vma, &found, false);
		}
		if (err)
			return err;
	} while (more && start < end);
	return 0;
}

/* Would a PTE need changing before @page behind it may be shared? */
static bool sp_pte_needs_protect(struct mm_struct *mm, struct page *page,
				 pte_t pte)
{
	return pte_write(pte) || pte_dirty(pte) || PageAnonExclusive(page) ||
	       mm_tlb_flush_pending(mm);
}

/*
 * The references to @folio when nothing but its mappings, the swap cache
 * (one a page) and ksmd's one reference holds it. Of a large folio, every
 * mapping of any of its pages holds one and counts in its mapcount: a pin
 * on any of its pages shows.
 */
static int sp_refs_expected(struct folio *folio)
{
	int refs = folio_mapcount(folio) + 1;

	if (folio_test_swapcache(folio))
		refs += folio_nr_pages(folio);
	return refs;
}

/*
 * With the PTE lock held: clear the PTE of @page (flushing the TLB, so that
 * GUP-fast cannot take a new reference), check that the references to its
 * folio are the page tables', the swap cache's and ours alone, then put the
 * PTE back read-only and clean. A pinned or otherwise busy page gets its
 * PTE back unchanged.
 */
static int sp_protect_locked(struct page_vma_mapped_walk *pvmw,
			     struct folio *folio, struct page *page,
			     pte_t *ptev)
{
	struct vm_area_struct *vma = pvmw->vma;
	bool exclusive = PageAnonExclusive(page);
	pte_t was, now;

	flush_cache_page(vma, pvmw->address, page_to_pfn(page));
	was = ptep_clear_flush(vma, pvmw->address, pvmw->pte);
	/* Counted once the PTE is gone: no new mapping can appear now. */
	if (folio_ref_count(folio) != sp_refs_expected(folio) ||
	    (exclusive && folio_try_share_anon_rmap_pte(folio, page))) {
		set_pte_at(vma->vm_mm, pvmw->address, pvmw->pte, was);
		return -EBUSY;
	}
	if (pte_dirty(was))
		folio_mark_dirty(folio);
	now = pte_wrprotect(pte_mkclean(was));
	set_pte_at_notify(vma->vm_mm, pvmw->address, pvmw->pte, now);
	*ptev = now;
	return 0;
}

/*
 * Does @pte, cleaned by the walk (watched or protected, walk.c) when the
 * page's hash was taken, say the page was written since? Dirty, or
 * writable in an mm whose writes the dirty bit does not tell.
 */
static bool sp_written_since(struct mm_struct *mm, pte_t pte)
{
	return pte_dirty(pte) || (pte_write(pte) && !sp_dirty_tracks(mm));
}

/*
 * Make the PTE of @page, of a locked anonymous folio mapped by PTEs in
 * @vma, read-only, so that its content can be compared and shared. *@ptev
 * gets the PTE.
 * @held says the page's hash was taken while ksmd had its PTE clean
 * (walk.c): a PTE written since says that hash no longer holds, and the
 * merge is refused (-EAGAIN), the PTE left as it is. Cleaning it here
 * would let the walk take the page for one that held still, with the old
 * hash; left dirty, it is read at its next visit.
 */
static int sp_wrprotect(struct vm_area_struct *vma, struct folio *folio,
			struct page *page, pte_t *ptev, bool held)
{
	/* The walk of the one page, not of the folio's first mapped one. */
	struct page_vma_mapped_walk pvmw = {
		.pfn = page_to_pfn(page),
		.nr_pages = 1,
		.pgoff = folio_pgoff(folio) + folio_page_idx(folio, page),
		.vma = vma,
	};
	struct mmu_notifier_range range;
	int err = -EFAULT;

	pvmw.address = page_address_in_vma(page, vma);
	if (pvmw.address == -EFAULT)
		return -EFAULT;
	mmu_notifier_range_init(&range, MMU_NOTIFY_CLEAR, 0, vma->vm_mm,
				pvmw.address, pvmw.address + PAGE_SIZE);
	mmu_notifier_invalidate_range_start(&range);
	if (page_vma_mapped_walk(&pvmw)) {
		if (pvmw.pte) {
			*ptev = ptep_get(pvmw.pte);
			err = 0;
			if (held && sp_written_since(vma->vm_mm, *ptev))
				err = -EAGAIN;
			else if (sp_pte_needs_protect(vma->vm_mm, page, *ptev))
				err = sp_protect_locked(&pvmw, folio, page,
							ptev);
		}
		page_vma_mapped_walk_done(&pvmw);
	}
	mmu_notifier_invalidate_range_end(&range);
	return err;
}

/* The PTE that will map @kpage at @addr in place of @old. */
static pte_t sp_new_pte(struct vm_area_struct *vma, unsigned long addr,
			struct page *kpage, pte_t old)
{
	struct folio *kfolio = page_folio(kpage);
	unsigned long pfn = page_to_pfn(kpage);
	pte_t pte;

	if (is_zero_pfn(pfn)) {
		/* The dirty bit marks a zero page that KSM put there. */
		pte = pte_mkdirty(pte_mkspecial(pfn_pte(pfn,
							vma->vm_page_prot)));
		ksm_map_zero_page(vma->vm_mm);
		dec_mm_counter(vma->vm_mm, MM_ANONPAGES);
	} else {
		folio_get(kfolio);
		folio_add_anon_rmap_pte(kfolio, kpage, vma, addr, RMAP_NONE);
		pte = ksm_hidden_pte(kfolio, mk_pte(kpage, vma->vm_page_prot));
	}
	return pte_soft_dirty(old) ? pte_mksoft_dirty(pte) : pte;
}

/* The PMD of @addr if it maps a page table (not a THP, not absent). */
static pmd_t *sp_pte_table(struct mm_struct *mm, unsigned long addr)
{
	pmd_t *pmd = mm_find_pmd(mm, addr);
	pmd_t val;

	if (!pmd)
		return NULL;
	val = pmdp_get_lockless(pmd);
	return pmd_present(val) && !pmd_trans_huge(val) ? pmd : NULL;
}

/*
 * Point the read-only PTE @expect that maps @page in @vma at @kpage
 * instead, and drop @page's mapping. Fails if the PTE changed meanwhile.
 */
static int sp_replace(struct vm_area_struct *vma, struct page *page,
		      struct page *kpage, pte_t expect)
{
	struct mm_struct *mm = vma->vm_mm;
	struct folio *folio = page_folio(page);
	struct mmu_notifier_range range;
	unsigned long addr;
	spinlock_t *ptl;	/* the PTE table's lock */
	pte_t *ptep;
	pmd_t *pmd;
	int err = -EFAULT;

	addr = page_address_in_vma(page, vma);
	if (addr == -EFAULT)
		return -EFAULT;
	pmd = sp_pte_table(mm, addr);
	if (!pmd)
		return -EFAULT;
	mmu_notifier_range_init(&range, MMU_NOTIFY_CLEAR, 0, mm, addr,
				addr + PAGE_SIZE);
	mmu_notifier_invalidate_range_start(&range);
	ptep = pte_offset_map_lock(mm, pmd, addr, &ptl);
	if (ptep && pte_same(ptep_get(ptep), expect)) {
		pte_t pte = sp_new_pte(vma, addr, kpage, expect);

		VM_WARN_ON_ONCE_PAGE(PageAnonExclusive(page), page);
		flush_cache_page(vma, addr, pte_pfn(expect));
		ptep_clear_flush(vma, addr, ptep);
		set_pte_at_notify(mm, addr, ptep, pte);
		folio_remove_rmap_pte(folio, page, vma);
		if (!folio_mapped(folio))
			folio_free_swap(folio);
		folio_put(folio);
		err = 0;
	}
	if (ptep)
		pte_unmap_unlock(ptep, ptl);
	mmu_notifier_invalidate_range_end(&range);
	return err;
}

/**
 * sp_split_locked - split the large folio of @page, which is locked
 * @page: the page, referenced
 *
 * The split counts in huge_pages_split if it takes a huge mapping with it:
 * a folio a PMD still maps, or one no PMD can map (whose PMD ksmd never
 * splits).
 *
 * Return: 0, @page's new folio locked, or the error of split_huge_page().
 */
int sp_split_locked(struct page *page)
{
	struct folio *folio = page_folio(page);
	bool huge = !folio_test_pmd_mappable(folio) ||
		    folio_entire_mapcount(folio);
	int err = split_huge_page(page);

	if (!err)
		sp_stats.thp_split += huge;
	return err;
}

/*
 * Lock the folio of @page, splitting a large one; on success the (now
 * small) folio is locked and returned.
 */
static struct folio *sp_lock_small(struct page *page)
{
	struct folio *folio = page_folio(page);

	if (!folio_test_anon(folio) || !folio_trylock(folio))
		return NULL;
	if (folio_test_large(folio)) {
		if (sp_split_locked(page)) {
			folio_unlock(folio);
			return NULL;
		}
		folio = page_folio(page);
	}
	return folio;
}

/*
 * May THP @folio, mapped by PMD @pmd in @mm, lose its huge mapping so
 * that one of its pages can merge? Not while something beyond its
 * mappings holds it, a pin for DMA say, which would refuse the merge
 * after the split as well and leave the THP split for nothing (-EBUSY);
 * nor, with @held, when the PMD says a store came after the page's hash
 * was taken (-EAGAIN, as sp_wrprotect() says of a PTE).
 */
static int sp_pmd_may_split(struct mm_struct *mm, struct folio *folio,
			    pmd_t pmd, bool held)
{
	if (folio_ref_count(folio) != sp_refs_expected(folio))
		return -EBUSY;
	if (held &&
	    (pmd_dirty(pmd) || (pmd_write(pmd) && !sp_dirty_tracks(mm))))
		return -EAGAIN;
	return 0;
}

/*
 * Lock the folio of @page into *@foliop, to point @page's PTE in @vma
 * elsewhere; @held as for sp_wrprotect(). A large folio stays whole: only
 * its PMD mapping in @vma, if that is how @vma maps it, is split into
 * PTEs (counted in huge_pages_split). The pages merged away leave it one
 * by one; once the last has gone it is freed whole, and splitting it,
 * which would walk the rmap of each of its pages, was never needed. One
 * left mapped in part waits on the deferred split queue, as after a
 * munmap() of part of it, until ksmd splits it at the end of the pass
 * (thp.c) or reclaim does.
 *
 * Return: 0 with the folio locked, or an error with nothing changed.
 */
static int sp_lock_mapped(struct vm_area_struct *vma, struct page *page,
			  bool held, struct folio **foliop)
{
	struct folio *folio = page_folio(page);
	unsigned long addr;
	pmd_t *pmd, val;
	int err;

	if (!folio_test_anon(folio) || !folio_trylock(folio))
		return -EBUSY;
	*foliop = folio;
	if (!folio_test_pmd_mappable(folio) || !folio_entire_mapcount(folio))
		return 0;
	addr = page_address_in_vma(page, vma);
	pmd = addr == -EFAULT ? NULL : mm_find_pmd(vma->vm_mm, addr);
	if (!pmd)
		return 0;
	val = pmdp_get_lockless(pmd);
	if (!pmd_trans_huge(val) || pmd_folio(val) != folio)
		return 0;
	err = sp_pmd_may_split(vma->vm_mm, folio, val, held);
	if (err) {
		folio_unlock(folio);
		return err;
	}
	__split_huge_pmd(vma, pmd, addr, false, folio);
	sp_stats.thp_split++;
	sp_thp_mapped_in_part(folio);
	return 0;
}

/**
 * sp_make_ksm - turn an anonymous page into a KSM page
 * @vma: its VMA, mmap_lock held
 * @page: the page, referenced
 * @node: the new KSM page's node, not yet in the stable table, with no
 *        sharer linked: its key, dom and nid filled in and its sharers
 *        array allocated (sp_sharers_init())
 * @held: the page's hash was taken with its PTE clean (see sp_wrprotect())
 *
 * Once the page is write-protected, @node gets the folio's pfn and becomes
 * its node: from then on rmap walks of the folio go through @node.
 *
 * Return: 0, or an error when the page is busy or changed.
 */
int sp_make_ksm(struct vm_area_struct *vma, struct page *page,
		struct sp_knode *node, bool held)
{
	struct folio *folio = sp_lock_small(page);
	pte_t pte;
	int err;

	if (!folio)
		return -EBUSY;
	err = sp_wrprotect(vma, folio, page, &pte, held);
	if (!err) {
		node->kpfn = folio_pfn(folio);
		sp_folio_set_node(folio, node);
		folio_mark_accessed(folio);
		/* Clean pages are dropped by reclaim: make sure it swaps. */
		if (!folio_test_dirty(folio))
			folio_mark_dirty(folio);
	}
	folio_unlock(folio);
	return err;
}

/**
 * sp_merge_into - map KSM page @kpage in place of @page
 * @vma: the VMA of @page, mmap_lock held
 * @page: an anonymous page, referenced
 * @kpage: the KSM page (or the zero page), referenced
 * @held: the page's hash was taken with its PTE clean (see sp_wrprotect())
 *
 * Return: 0 when merged, or an error when busy, changed or different.
 */
int sp_merge_into(struct vm_area_struct *vma, struct page *page,
		  struct page *kpage, bool held)
{
	struct folio *folio;
	pte_t pte;
	int err;

	if (page == kpage)
		return 0;
	err = sp_lock_mapped(vma, page, held, &folio);
	if (err)
		return err;
	err = sp_wrprotect(vma, folio, page, &pte, held);
	if (!err)
		err = sp_pages_same(page, kpage) ?
		      sp_replace(vma, page, kpage, pte) : -EAGAIN;
	folio_unlock(folio);
	return err;
}

/**
 * sp_merge_fresh - fill fresh KSM page @kpage from @page, map it instead
 * @vma: the VMA of @page, mmap_lock held
 * @page: an anonymous page, referenced
 * @kpage: a KSM page from sp_fresh_folio(), mapped nowhere, off the LRU
 * @held: the page's hash was taken with its PTE clean (see sp_wrprotect())
 *
 * The copy is taken once @page is write-protected, so it is exact and
 * needs no compare, as none is needed when @page itself becomes the KSM
 * page. The KSM page goes on the LRU filled, before it is mapped.
 *
 * Return: 0 when merged, or an error when @page is busy or changed.
 */
int sp_merge_fresh(struct vm_area_struct *vma, struct page *page,
		   struct page *kpage, bool held)
{
	struct folio *folio;
	pte_t pte;
	int err;

	err = sp_lock_mapped(vma, page, held, &folio);
	if (err)
		return err;
	err = sp_wrprotect(vma, folio, page, &pte, held);
	if (!err) {
		copy_highpage(kpage, page);
		folio_add_lru(page_folio(kpage));
		err = sp_replace(vma, page, kpage, pte);
	}
	folio_unlock(folio);
	return err;
}

/**
 * sp_pages_same - may two pages be merged, holding the same content?
 * @a: a page
 * @b: another page
 *
 * Where the architecture keeps more than the bytes with a page (arm64's
 * MTE tags), memcmp_pages() knows whether it may be shared; elsewhere the
 * bytes decide.
 *
 * Return: true if equal.
 */
bool sp_pages_same(struct page *a, struct page *b)
{
	if (IS_ENABLED(CONFIG_ARM64_MTE))
		return pages_identical(a, b);
	return !sp_page_cmp(a, b);
}
