// SPDX-License-Identifier: GPL-2.0
/*
 * KSM walk: finding the pages ksmd visits next, a page table at a
 * time.
 *
 * Finding the next pages: one walk of the cursor's mm, under one hold of
 * its mmap_lock and one of each PTE table's lock, takes a reference on up
 * to SP_GATHER present pages in address order. They are visited after the
 * locks are dropped: each visit copes with a page unmapped or changed
 * meanwhile. So a batch pays one walk setup per SP_GATHER pages rather
 * than one per page.
 *
 * Layering (see samepage.h): calls into core.c, rmap.c.
 */

/**
 * DOC: Clean pages
 *
 * A page that has not been written since its hash was taken need not be
 * read again: the visit takes the hash from the state word. The walk
 * learns that from the page's PTE, which it cleans before the hash is
 * taken (SP_ST_WP in the state word then), in one of two ways:
 *
 * - Watched: the PTE stays writable and only its dirty bit is cleared;
 *   the next store sets it again, in hardware and without a fault on
 *   x86 (on architectures without hardware dirty bits, a minor fault
 *   does). While the PTE is clean, the folio is clean and nothing holds
 *   a reference to it beyond its mappings, the page has not been
 *   written. Only for an mm without a secondary MMU (sp_dirty_tracks()),
 *   and a swap-backed folio outside the swap cache, whose own dirty flag
 *   the walk clears under its lock: reclaim marks such a folio dirty when
 *   it adds it to the swap cache, under that lock, whatever the PTEs say.
 * - Protected: the PTE is write-protected and cleaned, as mprotect()
 *   would do it, and the first write faults. For an mm with a secondary
 *   MMU, which dropped its writable mapping when the walk's mmu_notifier
 *   range began and must fault through the PTE to get it back. The
 *   workload pays for that fault, so a page is protected only once it is
 *   likely to repay it (DOC: Protecting pages).
 *
 * One mmu_notifier range, one hold of the PTE lock and one TLB flush
 * serve the pages of one PTE table. Other writers are seen this way:
 *
 * - get_user_pages() for writing (process_vm_writev(), O_DIRECT reads, a
 *   pin for DMA) holds a reference while it writes: a page with a
 *   reference beyond its mappings when the walk cleans it, or when it
 *   looks at a watched PTE, is read. On a protected PTE the slow path
 *   takes a write fault first, and on a watched one it marks the folio
 *   dirty; most users also mark it dirty when they let go.
 * - A forced write (FOLL_FORCE: /proc/PID/mem, PTRACE_POKEDATA) in a
 *   VMA with VM_WRITE takes a write fault too, but in one without VM_WRITE
 *   and with VM_MAYWRITE it writes an exclusive anonymous page behind its
 *   read-only clean PTE without one (can_follow_write_pte()). Such VMAs
 *   are never trusted: their pages are read at every visit.
 * - userfaultfd's UFFDIO_COPY, UFFDIO_ZEROPAGE and UFFDIO_MOVE install a
 *   new PTE, dirty, or a zero page, which is not scanned.
 * - Only ksmd itself cleans such a PTE again, when a merge write-protects
 *   the page; a merge of a page that was written since its hash is
 *   refused without touching the PTE (merge.c).
 *
 * So a clean PTE says the page was not written through it since the walk
 * cleaned it, and no writer the walk could see held it; it does not say
 * the page holds what it held. Between two visits the page behind a clean
 * PTE can change unseen when
 *
 * - it is written, swapped out and swapped in again by a read fault:
 *   do_swap_page() maps it clean, and writable when the process owns it
 *   alone (a device with SWP_SYNCHRONOUS_IO, zram, reads it into a folio
 *   that never enters the swap cache);
 * - a write pin is taken by gup_fast() on a watched PTE (which dirties
 *   neither the PTE nor the folio), written through and let go of with
 *   unpin_user_pages(), which does not dirty the folio either: an
 *   io_uring fixed buffer registered, read into and unregistered;
 * - mremap() moves another page onto the address.
 *
 * Such a page keeps a stale hash until it is read again. That costs time,
 * never content: the hash only picks what to compare, and every merge
 * compares the pages in full with the page write-protected and locked
 * (merge.c). And it is read again within a bounded number of passes: a
 * clean page is read anyway at each visit in a pass whose number, plus
 * the page's vpn, is a multiple of SP_RECHECK. Without smart scan that is
 * one pass in SP_RECHECK; with it, the visits of a page that holds still
 * come once in at most nine passes, and nine is prime to SP_RECHECK, so
 * one of any SP_RECHECK such visits in a row is a recheck: at most
 * 9 * SP_RECHECK passes.
 */

/**
 * DOC: Protecting pages
 *
 * A watched page costs its writer nothing but a TLB refill, so it is
 * watched from its first visit on. One found written since it was
 * cleaned is cleaned again at once, and its visit takes it as changed
 * without reading it (visit.c): a page that keeps changing is never read,
 * and one that stops is read at the first visit that finds it clean.
 *
 * A protected page costs its writer a minor fault at its next write (and
 * under KVM an EPT or NPT fault in the guest), which mainline's ksmd
 * never causes. It saves ksmd one read of the page at each visit while
 * the page holds still. So a page is protected only once it is likely to
 * hold still for long enough to repay the fault:
 *
 * - never at its first visit, nor while it changes: a page must be found
 *   unchanged at protect_after_scans visits in a row first (2 by
 *   default), so a page written at least every other pass is never
 *   protected and its writer never faults;
 * - a protected page written before it stayed clean for
 *   SP_PROTECT_PAYBACK visits backs off: it waits twice as many still
 *   visits the next time, and after a third back-off it is never
 *   protected again. One written later than that repaid its fault, and
 *   comes one level back;
 * - protect_after_scans=0 cleans nothing more, in either way: every page
 *   is read at every visit, as mainline does.
 *
 * So a writer with any write period takes at most three faults a page
 * more than without ksmd, beyond those repaid by reads saved; the cost
 * falls on ksmd, which runs at nice 5, rather than on the application
 * the host exists for.
 */

/**
 * DOC: Clean huge pages
 *
 * A PMD-mapped THP is found a walk at a time, its subpages sharing one
 * reference and one hold of the PMD's lock, and it is cleaned as a
 * whole: in a watched mm (DOC: Clean pages) the walk that starts at its
 * first subpage clears the PMD's dirty bit and the folio's, leaving it
 * writable, when either is set. A store anywhere in the 2 MiB sets the
 * bit again, so one clean PMD vouches for all 512 subpages: a subpage
 * whose hash was taken clean is not read while its PMD stays clean.
 *
 * The PMD cannot say which subpage was written, so cleaning a dirty PMD
 * vouches for none of the hashes taken before: ksmd remembers the THP it
 * cleaned (sp_cursor.thp_cleaned) and reads each of its subpages at
 * their visits in that pass, as SP_FOUND_COARSE, which also takes the
 * trust from a subpage that smart scan skips; those read while the PMD
 * stays clean are trusted after. Only ksmd cleans a PMD, and only from a
 * THP's first subpage, so every cleaning is followed by that pass's
 * visits of all its subpages; a merge on request reads them all. A THP
 * split after it was cleaned has its PTEs clean, and its subpages are
 * read in that pass the same way. A THP whose PMD alone was split, to
 * merge some of its pages (merge.c), stays a large folio mapped by PTEs,
 * each of which took the PMD's dirty bit: a clean one goes on vouching
 * for its subpage as the PMD did (sp_split_state()). The walk never
 * cleans such a PTE itself, so a subpage written since is read at every
 * visit until its folio is split. A protected mm (with a secondary MMU)
 * reads the subpages of its THPs at every visit: write-protecting a PMD
 * would cost its writer a fault for 512 pages.
 */
#include <linux/hugetlb.h>
#include <linux/mm.h>
#include <linux/mm_inline.h>
#include <linux/mmu_notifier.h>
#include <linux/pagewalk.h>
#include <linux/swapops.h>

#include <asm/tlbflush.h>

#include "samepage.h"

/*
 * A clean page is read anyway at one visit in this many: a power of two,
 * prime to the nine passes between two reads of a page smart scan skips
 * (visit.c), so that a recheck falls on one of its reads (DOC: Clean
 * pages).
 */
#define SP_RECHECK	16
static_assert((SP_RECHECK & (SP_RECHECK - 1)) == 0);

static bool sp_scannable(struct page *page)
{
	struct folio *folio = page_folio(page);

	return folio_test_anon(folio) && !folio_is_zone_device(folio);
}

/*
 * The entry of @vpn in the slot's xarray, from @xas where the walk of a
 * page table left it: the next page of the table is one step on, not a
 * descent from the root. Under RCU and sp_mutex, which every change to
 * the xarray holds.
 */
static void *sp_entry_at(struct xa_state *xas, unsigned long vpn)
{
	if (xas->xa_index + 1 == vpn && xas->xa_node != XAS_RESTART)
		return xas_next(xas);
	xas_set(xas, vpn);
	return xas_load(xas);
}

/*
 * May the walk trust a clean read-only PTE of @vma, and protect its pages
 * to that end? Not in a shadow stack, nor where a forced write needs no
 * fault (see DOC: Clean pages). Asked once a PTE table.
 */
static bool sp_vma_clean_skip(struct vm_area_struct *vma)
{
	return SP_CLEAN_SKIP && !(vma->vm_flags & VM_SHADOW_STACK) &&
	       (vma->vm_flags & (VM_WRITE | VM_MAYWRITE)) != VM_MAYWRITE;
}

/*
 * Can writes to @folio, mapped by a writable PTE, be told by that PTE's
 * dirty bit and the folio's own? Not if the folio is in the swap cache,
 * nor if something holds it beyond its mappings and @extra references: a
 * get_user_pages() reference writes without setting the dirty bit.
 */
static bool sp_folio_watchable(struct folio *folio, int extra)
{
	return folio_test_swapbacked(folio) && !folio_test_swapcache(folio) &&
	       folio_ref_count(folio) == folio_mapcount(folio) + extra;
}

/*
 * Does the walk clean or protect pages at all? Not with
 * protect_after_scans=0, nor under zero_pages_only, whose visits keep no
 * state word for a clean page to save a read of, nor under estimate,
 * which changes no page table.
 */
static bool sp_cleans_pages(void)
{
	return READ_ONCE(sp_protect_after) && !READ_ONCE(sp_zero_pages_only) &&
	       !READ_ONCE(sp_estimate);
}

/*
 * What the walk knows of the small page at @addr, mapped by @pte (PTE
 * lock held) to @folio in a VMA where sp_vma_clean_skip(), with @e its
 * entry; @watch: sp_dirty_tracks() of the mm, which adds
 * SP_FOUND_SOFT. SP_FOUND_CLEAN, SP_FOUND_WP (clean, but read anyway), or
 * SP_FOUND_WANT: a page to clean before it is hashed (DOC: Protecting
 * pages). A page cleaned at its last visit and written since is
 * SP_FOUND_UNSURE: it may have changed. A watched one is cleaned again
 * now, and its visit takes it as changed without reading it; a protected
 * one waits until it holds still (DOC: Protecting pages). One that was
 * not read at its last visit has no hash to keep: it is read.
 */
static u8 sp_clean_state(void *e, pte_t pte, unsigned long addr,
			 struct folio *folio, bool watch)
{
	unsigned long vpn = addr >> PAGE_SHIFT;
	u8 soft = watch ? SP_FOUND_SOFT : 0;
	unsigned long st;

	if (e && !xa_is_value(e))
		return 0;
	st = e ? xa_to_value(e) : 0;
	if (sp_st_wp(st)) {
		if (!pte_dirty(pte) &&
		    (!pte_write(pte) ||
		     (watch && !folio_test_dirty(folio) &&
		      sp_folio_watchable(folio, 0))))
			return soft | (sp_st_hash(st) != SP_HASH_NONE &&
				       (vpn + sp_stats.full_scans) % SP_RECHECK ?
				       SP_FOUND_CLEAN : SP_FOUND_WP);
		if (watch && sp_cleans_pages())
			return soft | SP_FOUND_UNSURE | SP_FOUND_WANT;
		return soft | SP_FOUND_UNSURE;
	}
	if (!sp_cleans_pages())
		return soft;
	if (watch)
		return soft | SP_FOUND_WANT;
	return e && sp_protect_due(st) ? SP_FOUND_WANT : 0;
}

/*
 * Take @page, of @folio (@large if it is), whose entry is @entry; 1
 * (which ends the walk) once @f is full. The pages of a
 * large folio share one reference, taken with the first of them (@f->large),
 * and have the walk to themselves: splitting the folio, which making a KSM
 * page of one of them needs, fails while ksmd holds more than one
 * reference to it, and so does write-protecting one to merge it.
 */
static int sp_found_add(struct sp_found *f, struct page *page,
			struct folio *folio, bool large, unsigned long addr,
			u16 how, void *entry)
{
	if (likely(!large)) {
		if (unlikely(f->large) && f->nr)
			return 1;
		folio_get(folio);
	} else if (folio != f->large) {
		if (f->nr)
			return 1;
		folio_get(folio);
		f->large = folio;
	}
	f->page[f->nr] = page;
	f->addr[f->nr] = addr;
	f->how[f->nr] = how;
	f->entry[f->nr] = entry;
	return ++f->nr == f->max;
}

/**
 * sp_found_trim - let go of the pages found from the @i-th on
 * @f: the pages found
 * @i: the first page to let go: a later walk finds it again
 */
void sp_found_trim(struct sp_found *f, unsigned int i)
{
	while (f->nr > i)
		sp_found_put(f, --f->nr);
	if (!f->nr && f->large) {
		folio_put(f->large);
		f->large = NULL;
	}
}

/*
 * Record @addr without a page: SP_FOUND_MERGED, a PTE that maps the KSM
 * page its entry names, which needs nothing at its visit but to be
 * counted, so that ksmd holds no reference on KSM pages while it visits
 * the pages before them; SP_FOUND_AWAY, a migration entry, whose page is
 * coming back, so that what is recorded of it is not forgotten (which
 * would wait for the page's lock, holding a reference that fails the
 * migration). Migration and compaction give up on a page with a reference
 * they cannot account for.
 */
static int sp_found_nopage(struct sp_found *f, unsigned long addr, u16 how)
{
	f->page[f->nr] = NULL;
	f->addr[f->nr] = addr;
	f->how[f->nr] = how;
	f->entry[f->nr] = NULL;
	return ++f->nr == f->max;
}

static bool sp_migrating(pte_t pte)
{
	return !pte_none(pte) && is_migration_entry(pte_to_swp_entry(pte));
}

/* Does @folio belong to the node its mapping's entry @e names? */
static bool sp_maps_recorded(void *e, struct folio *folio)
{
	struct sp_knode *node = sp_folio_node(folio);

	return node && e == node;
}

/*
 * Write-protect and clean the PTE at @ptep (PTE lock held) if it still
 * maps @page; true if it did and *@flush is now due. Any dirtiness goes
 * to the folio, as try_to_unmap_one() and folio_clear_dirty_for_io()
 * hand it on: reclaim frees a clean folio of the swap cache without
 * writing it.
 */
static bool sp_protect_pte(struct vm_area_struct *vma, pte_t *ptep,
			   unsigned long addr, struct page *page, bool *flush)
{
	pte_t old = ptep_get(ptep), pte;

	if (!pte_present(old) || pte_pfn(old) != page_to_pfn(page))
		return false;
	if (!pte_write(old) && !pte_dirty(old) &&
	    !mm_tlb_flush_pending(vma->vm_mm))
		return true;
	old = ptep_modify_prot_start(vma, addr, ptep);
	if (pte_dirty(old))
		folio_mark_dirty(page_folio(page));
	pte = pte_mkclean(pte_wrprotect(old));
	ptep_modify_prot_commit(vma, addr, ptep, old, pte);
	*flush = true;
	return true;
}

/*
 * Clean the PTE at @ptep (PTE lock held), leaving it writable, if it
 * still maps @page and its folio can be watched; true if it did and
 * *@flush is now due. The folio's own dirty flag is cleared with it, under
 * the folio's lock: add_to_swap() takes that lock and marks the folio
 * dirty once it is in the swap cache, so reclaim still writes it out. A
 * read-only PTE is protected instead, as it already is.
 */
static bool sp_watch_pte(struct vm_area_struct *vma, pte_t *ptep,
			 unsigned long addr, struct page *page, bool *flush)
{
	struct folio *folio = page_folio(page);
	pte_t old = ptep_get(ptep);
	bool done = false;

	if (!pte_present(old) || pte_pfn(old) != page_to_pfn(page))
		return false;
	if (!pte_write(old))
		return sp_protect_pte(vma, ptep, addr, page, flush);
	if (!sp_folio_watchable(folio, 1) || !folio_trylock(folio))
		return false;
	if (!folio_test_swapcache(folio)) {
		old = ptep_modify_prot_start(vma, addr, ptep);
		ptep_modify_prot_commit(vma, addr, ptep, old, pte_mkclean(old));
		folio_clear_dirty(folio);
		*flush = done = true;
	}
	folio_unlock(folio);
	return done;
}

/*
 * No reference to @page but its mappings', the swap cache's and ksmd's:
 * nothing pinned it to write through. Read after the TLB flush, which a
 * concurrent get_user_pages_fast() either finishes before or sees the
 * PTE changed and lets go.
 */
static bool sp_unpinned(struct page *page)
{
	struct folio *folio = page_folio(page);

	return folio_ref_count(folio) ==
	       folio_mapcount(folio) + folio_test_swapcache(folio) + 1;
}

/*
 * Leave PTE table @table one writable PTE if it has one (PTE lock held):
 * khugepaged and MADV_COLLAPSE collapse only a range that has one
 * (__collapse_huge_page_isolate() refuses one without: SCAN_PAGE_RO), and
 * protecting pages that are not merged must not keep a range from
 * collapsing. So when every writable PTE of the table is one the walk
 * wants protected, the first of those stays as it is (and is read at
 * every visit that smart scan does not skip).
 */
static void sp_leave_one_writable(pte_t *table, struct sp_found *f,
				  unsigned int first, unsigned int last)
{
	unsigned long addr = f->addr[first] & PMD_MASK;
	unsigned int i = first, keep = f->nr;
	pte_t *ptep;
	pte_t pte;

	for (ptep = table; ptep < table + PTRS_PER_PTE;
	     ptep++, addr += PAGE_SIZE) {
		while (i <= last && f->addr[i] < addr)
			i++;
		pte = ptep_get(ptep);
		if (!pte_present(pte) || !pte_write(pte))
			continue;
		if (i > last || f->addr[i] != addr ||
		    !(f->how[i] & SP_FOUND_WANT)) {
			keep = f->nr;
			break;
		}
		if (keep == f->nr)
			keep = i;
	}
	if (keep < f->nr)
		f->how[keep] &= ~SP_FOUND_WANT;
}

/*
 * Clean the pages @f->page[@from..] of the PTE table at @pmdp that the
 * walk wants cleaned, watched or protected as @watch says, under one
 * mmu_notifier range and one TLB flush; each that is cleaned and unpinned
 * is marked SP_FOUND_WP.
 */
static void sp_protect_table(struct mm_walk *walk, pmd_t *pmdp,
			     struct sp_found *f, unsigned int from, bool watch)
{
	struct mmu_notifier_range range;
	unsigned int i, first = f->nr, last = 0;
	u8 done[SP_GATHER], nr = 0;
	unsigned long start, end;
	pte_t *ptep, *base;
	bool flush = false, ok;
	spinlock_t *ptl;	/* the PTE table's lock */

	for (i = from; i < f->nr; i++) {
		if (!(f->how[i] & SP_FOUND_WANT))
			continue;
		first = min(first, i);
		last = i;
	}
	if (first == f->nr)
		return;
	start = f->addr[first];
	end = f->addr[last] + PAGE_SIZE;
	mmu_notifier_range_init(&range, MMU_NOTIFY_PROTECTION_PAGE, 0,
				walk->mm, start, end);
	mmu_notifier_invalidate_range_start(&range);
	base = pte_offset_map_lock(walk->mm, pmdp, start, &ptl);
	if (base) {
		if (!watch)
			sp_leave_one_writable(base - pte_index(start), f,
					      first, last);
		for (i = first; i <= last; i++) {
			if (!(f->how[i] & SP_FOUND_WANT))
				continue;
			ptep = base + ((f->addr[i] - start) >> PAGE_SHIFT);
			ok = watch ? sp_watch_pte(walk->vma, ptep, f->addr[i],
						  f->page[i], &flush) :
				     sp_protect_pte(walk->vma, ptep, f->addr[i],
						    f->page[i], &flush);
			if (ok)
				done[nr++] = i;
		}
		if (flush)
			flush_tlb_range(walk->vma, start, end);
		pte_unmap_unlock(base, ptl);
	}
	mmu_notifier_invalidate_range_end(&range);
	for (i = 0; i < nr; i++)
		if (sp_unpinned(f->page[done[i]]))
			f->how[done[i]] |= SP_FOUND_WP;
	for (i = first; i <= last; i++)
		f->how[i] &= ~SP_FOUND_WANT;
}

/* Did this pass clean the dirty PMD of the THP at @haddr (walk @f)? */
static bool sp_thp_cleaned(const struct sp_found *f, unsigned long haddr)
{
	return f->thp_cleaned && *f->thp_cleaned == (haddr | 1);
}

#ifdef CONFIG_TRANSPARENT_HUGEPAGE
/*
 * Whether PMD @pmd of THP @folio vouches that no subpage was written
 * since it was cleaned: as a PTE does (sp_clean_state()), the folio
 * referenced by its mappings only.
 */
static bool sp_pmd_clean(pmd_t pmd, struct folio *folio)
{
	return !pmd_dirty(pmd) &&
	       (!pmd_write(pmd) ||
		(!folio_test_dirty(folio) && sp_folio_watchable(folio, 0)));
}

/*
 * Clean the PMD at @pmdp, THP @folio at @haddr of @vma, which the walk
 * holds one reference to, as sp_watch_pte() and sp_protect_pte() clean a
 * PTE: a writable one stays writable, its dirtiness dropped with the
 * folio's under the folio lock; a read-only one hands its dirtiness to
 * the folio. The PMD is made invalid meanwhile, as change_huge_pmd()
 * does, so that no store sets its dirty bit unseen, and the TLB flushed.
 * True if it did.
 */
static bool sp_watch_pmd(struct vm_area_struct *vma, pmd_t *pmdp,
			 unsigned long haddr, struct folio *folio)
{
	struct mmu_notifier_range range;
	bool done = false, write;
	spinlock_t *ptl;	/* the PMD's lock */
	pmd_t old;

	if (!folio_trylock(folio))
		return false;
	mmu_notifier_range_init(&range, MMU_NOTIFY_PROTECTION_PAGE, 0,
				vma->vm_mm, haddr, haddr + HPAGE_PMD_SIZE);
	mmu_notifier_invalidate_range_start(&range);
	ptl = pmd_lock(vma->vm_mm, pmdp);
	old = pmdp_get(pmdp);
	if (!pmd_present(old) || !pmd_trans_huge(old) ||
	    pmd_folio(old) != folio)
		goto unlock;
	write = pmd_write(old);
	if (write && (folio_test_swapcache(folio) ||
		      !sp_folio_watchable(folio, 1)))
		goto unlock;
	old = pmdp_invalidate_ad(vma, haddr, pmdp);
	if (write)
		folio_clear_dirty(folio);
	else if (pmd_dirty(old))
		folio_mark_dirty(folio);
	set_pmd_at(vma->vm_mm, haddr, pmdp, pmd_mkclean(old));
	flush_pmd_tlb_range(vma, haddr, haddr + HPAGE_PMD_SIZE);
	done = true;
unlock:
	spin_unlock(ptl);
	mmu_notifier_invalidate_range_end(&range);
	folio_unlock(folio);
	return done;
}
#else
static bool sp_pmd_clean(pmd_t pmd, struct folio *folio)
{
	return false;
}

static bool sp_watch_pmd(struct vm_area_struct *vma, pmd_t *pmdp,
			 unsigned long haddr, struct folio *folio)
{
	return false;
}
#endif

/*
 * What the walk knows of the subpage at @addr of a THP whose PMD is
 * clean (@clean) or not, @e its entry (DOC: Clean huge pages).
 */
static u16 sp_huge_state(struct sp_found *f, void *e, unsigned long addr,
			 bool clean)
{
	unsigned long vpn = addr >> PAGE_SHIFT;

	if (sp_thp_cleaned(f, addr & PMD_MASK))
		return SP_FOUND_SOFT | SP_FOUND_COARSE | (clean ? SP_FOUND_WP : 0);
	if (!clean)
		return SP_FOUND_SOFT | SP_FOUND_COARSE;
	if (!xa_is_value(e) || !sp_st_wp(xa_to_value(e)) ||
	    !((vpn + sp_stats.full_scans) % SP_RECHECK))
		return SP_FOUND_SOFT | SP_FOUND_WP;
	return SP_FOUND_SOFT | SP_FOUND_CLEAN;
}

/*
 * May the walk @f clean the subpages of the THPs of @walk's VMA? Only
 * ksmd's walk of a watched mm whose VMA it may trust, unless
 * sp_cleans_pages() says no.
 */
static bool sp_huge_watch(struct sp_found *f, struct mm_walk *walk)
{
	return f->thp_cleaned && sp_vma_clean_skip(walk->vma) &&
	       sp_dirty_tracks(walk->mm) && sp_cleans_pages();
}

/*
 * What the walk knows of a page of a large folio mapped by PTE @pte, as of
 * a THP whose PMD ksmd split to merge some of its pages (merge.c): its
 * PTE took the PMD's dirtiness, so a clean one goes on vouching for the
 * hash taken under the clean PMD, as sp_pmd_clean() does. The walk never
 * cleans such a PTE itself: one written since is read at every visit.
 */
static u16 sp_split_state(struct sp_found *f, struct mm_walk *walk, void *e,
			  pte_t pte, unsigned long addr, struct folio *folio)
{
	bool clean;

	if (!sp_huge_watch(f, walk))
		return 0;
	clean = !pte_dirty(pte) &&
		(!pte_write(pte) ||
		 (!folio_test_dirty(folio) &&
		  sp_folio_watchable(folio, folio == f->large)));
	return sp_huge_state(f, e, addr, clean);
}

/*
 * Take the subpages of the PMD-mapped THP @folio from @addr to @end, PMD
 * lock held; *@clean_now: the walk starts at its first subpage and its
 * PMD is to be cleaned.
 */
static int sp_found_huge(struct sp_found *f, struct mm_walk *walk,
			 pmd_t pmd, struct folio *folio, unsigned long addr,
			 unsigned long end, bool *clean_now)
{
	unsigned long haddr = addr & PMD_MASK;
	XA_STATE(xas, &f->slot->pages, 0);
	bool watch = sp_huge_watch(f, walk);
	bool clean = watch && sp_pmd_clean(pmd, folio);
	struct page *page;
	int ret = 0;
	void *e;

	*clean_now = watch && !clean && addr == haddr;
	rcu_read_lock();
	for (; addr < end && !ret; addr += PAGE_SIZE) {
		page = folio_page(folio, (addr - haddr) >> PAGE_SHIFT);
		e = sp_entry_at(&xas, addr >> PAGE_SHIFT);
		ret = sp_found_add(f, page, folio, true, addr, watch ?
				   sp_huge_state(f, e, addr, clean) : 0, e);
	}
	rcu_read_unlock();
	return ret;
}

/*
 * The subpages of a PMD-mapped THP, from @addr to @end; -EAGAIN if the
 * PMD was split meanwhile.
 */
static int sp_pmd_huge(pmd_t *pmdp, unsigned long addr, unsigned long end,
		       struct mm_walk *walk)
{
	spinlock_t *ptl = pmd_lock(walk->mm, pmdp);	/* the PMD's lock */
	pmd_t pmd = pmdp_get(pmdp);
	struct sp_found *f = walk->private;
	unsigned int from = f->nr, i;
	struct folio *folio = NULL;
	bool clean_now = false;
	struct page *page;
	int ret = -EAGAIN;	/* split meanwhile: look at the PTEs */

	if (pmd_present(pmd) && pmd_trans_huge(pmd)) {
		ret = 0;
		page = vm_normal_page_pmd(walk->vma, addr & PMD_MASK, pmd);
		if (page && sp_scannable(page)) {
			folio = page_folio(page);
			ret = sp_found_huge(f, walk, pmd, folio, addr, end,
					    &clean_now);
		}
	}
	spin_unlock(ptl);
	if (!clean_now || f->nr == from ||
	    !sp_watch_pmd(walk->vma, pmdp, addr & PMD_MASK, folio))
		return ret;
	*f->thp_cleaned = (addr & PMD_MASK) | 1;
	for (i = from; i < f->nr; i++)
		f->how[i] = SP_FOUND_SOFT | SP_FOUND_COARSE |
			    (sp_unpinned(f->page[i]) ? SP_FOUND_WP : 0);
	return ret;
}

static int sp_pmd_entry(pmd_t *pmdp, unsigned long addr, unsigned long end,
			struct mm_walk *walk)
{
	pmd_t pmd = pmdp_get_lockless(pmdp);
	struct sp_found *f = walk->private;
	unsigned int from = f->nr;
	pte_t *start, *ptep;
	struct folio *folio;
	struct page *page;
	spinlock_t *ptl;	/* the PTE table's lock */
	XA_STATE(xas, &f->slot->pages, 0);
	bool skip = sp_vma_clean_skip(walk->vma);
	bool watch = sp_dirty_tracks(walk->mm);
	bool thp_cleaned = sp_thp_cleaned(f, addr & PMD_MASK);
	bool ksm, large;
	int ret = 0;
	void *e;
	u16 how;

	if (!pmd_present(pmd))
		return 0;
	if (pmd_trans_huge(pmd)) {
		ret = sp_pmd_huge(pmdp, addr, end, walk);
		if (ret != -EAGAIN)
			return ret;
		ret = 0;
	}
	start = pte_offset_map_lock(walk->mm, pmdp, addr, &ptl);
	if (!start)
		return 0;
	rcu_read_lock();
	for (ptep = start; addr < end && !ret; ptep++, addr += PAGE_SIZE) {
		pte_t pte = ptep_get(ptep);

		if (!pte_present(pte)) {
			if (sp_migrating(pte))
				ret = sp_found_nopage(f, addr, SP_FOUND_AWAY);
			continue;
		}
		page = vm_normal_page(walk->vma, addr, pte);
		if (!page || !sp_scannable(page))
			continue;
		folio = page_folio(page);
		e = sp_entry_at(&xas, addr >> PAGE_SHIFT);
		ksm = folio_test_ksm(folio);
		if (ksm && sp_maps_recorded(e, folio)) {
			ret = sp_found_nopage(f, addr, SP_FOUND_MERGED);
			continue;
		}
		large = folio_test_large(folio);
		if (!skip || ksm)
			how = 0;
		else if (large)
			how = sp_split_state(f, walk, e, pte, addr, folio);
		else
			how = sp_clean_state(e, pte, addr, folio, watch);
		if (thp_cleaned && (how & (SP_FOUND_CLEAN | SP_FOUND_WP)))
			how = (how & ~SP_FOUND_CLEAN) | SP_FOUND_WP |
			      SP_FOUND_COARSE;
		ret = sp_found_add(f, page, folio, large, addr, how, e);
	}
	rcu_read_unlock();
	pte_unmap_unlock(start, ptl);
	sp_protect_table(walk, pmdp, f, from, watch);
	return ret;
}

static const struct mm_walk_ops sp_walk_ops = {
	.pmd_entry = sp_pmd_entry,
	.walk_lock = PGWALK_RDLOCK,
};

/**
 * sp_find_in_mm - gather the next pages of an mm
 * @mm: the mm; mmap_lock held for reading
 * @from: the address to start at
 * @to: the address to end at
 * @f: where the pages go, each referenced; @f->nr pages, at most @f->max,
 *     with what the walk learnt of each in @f->how and its entry in
 *     @f->entry, good while @f->gen is @f->slot's (sp_found_entry())
 *
 * The walk ends at @to or when @f is full.
 *
 * Return: whether the walk met a mergeable VMA.
 */
bool sp_find_in_mm(struct mm_struct *mm, unsigned long from,
		   unsigned long to, struct sp_found *f)
{
	VMA_ITERATOR(vmi, mm, from);
	struct vm_area_struct *vma;
	bool saw_vma = false;

	lockdep_assert_held(&sp_mutex);
	for_each_vma_range(vmi, vma, to) {
		if (!(vma->vm_flags & VM_MERGEABLE))
			continue;
		saw_vma = true;
		if (!vma->anon_vma)
			continue;
		if (walk_page_range_vma(vma, max(from, vma->vm_start),
					min(to, vma->vm_end), &sp_walk_ops,
					f) > 0)
			break;
		if (!atomic_read(&mm->mm_users))
			break;
	}
	f->gen = f->slot->gen;
	return saw_vma;
}
