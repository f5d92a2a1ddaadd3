// SPDX-License-Identifier: GPL-2.0
/*
 * KSM and large folios: splitting one only when enough of its pages have
 * equal pages elsewhere.
 *
 * Layering (see samepage.h): calls into core.c.
 */

/**
 * DOC: Splitting huge pages
 *
 * Merging a page of a large folio needs the folio split first, and a
 * split THP costs its workload the huge mapping for good: more TLB
 * misses, and khugepaged's work to collapse it again. Mainline splits a
 * THP as soon as one of its 512 pages has an equal page, which is why
 * hosts that run THP ``always`` turn KSM off. Here a large folio is split
 * only once thp_split_min of its pages (64 by default, of 512; in
 * proportion for a folio of another size; 1 is mainline's choice) were
 * found to have an equal page in one pass: a KSM page, a
 * candidate, another of its own pages, or the zero page where
 * use_zero_pages merges into it. Until then its pages are hashed and
 * become candidates as any other, but none is merged, and a page that
 * would pair with one of them is refused.
 *
 * Such matches are counted by folio, from the folio's own visits and
 * from the visits of the pages it refused: a folio visited before its
 * equals in a pass gets their counts, and is split at its next visit.
 * A folio split at a visit has the pages the walk took with it before
 * that one visited again, as small pages (sp_found_split()): those it
 * refused merge in the same pass.
 * A folio may be split once the matches of this pass or of the last one
 * reach the setting. The counts are kept in xarrays, one a folio size
 * for this pass and one for the last, by the folio's pfn over its size:
 * the THPs of a range of memory sit side by side in an xarray's nodes,
 * and the tree is as shallow as the memory allows. When a pass ends the
 * older ones are emptied, which costs what counting in them did. A folio
 * freed and its memory reused for another may lend it a pass's count:
 * one split too early, never content lost.
 *
 * Merging a page into a KSM page (or the zero page) needs no split of
 * its folio, only of the PMD that maps it (merge.c), and a THP whose pages
 * all merge is then freed whole. Only a page that becomes a KSM page
 * itself needs its folio split. A THP whose PMD ksmd split and that is
 * still mapped in part when the pass ends is split then, one THP a hold
 * of sp_mutex, so that the memory of its merged pages comes back without
 * waiting for reclaim.
 *
 * huge_pages_split counts the huge mappings ksmd split to merge their
 * pages (a PMD, or a folio no PMD maps); huge_pages_kept the large folios
 * that had matches in the last pass and stayed whole.
 *
 * All of it runs under sp_mutex.
 */
#include <linux/mm.h>
#include <linux/xarray.h>

#include "samepage.h"

/*
 * Matches by folio, an xarray a folio order (keyed by pfn over size):
 * sp_thp_counts[sp_thp_now] this pass's, the other the last one's.
 */
#define SP_THP_ORDERS	(MAX_PAGE_ORDER + 1)
static struct xarray sp_thp_counts[2][SP_THP_ORDERS] = {
	[0 ... 1] = {
		[0 ... SP_THP_ORDERS - 1] = XARRAY_INIT(sp_thp_counts, 0),
	},
};

static unsigned int sp_thp_now;

/*
 * The last folio found worth splitting in this pass, by pfn and order:
 * the pages of a THP are visited one after another, and once it is worth
 * splitting its further matches in the pass change nothing, so they need
 * no count. A folio freed and reused meanwhile inherits the verdict, as
 * it may a count.
 */
static unsigned long sp_thp_worth_pfn = ULONG_MAX;
static unsigned int sp_thp_worth_order;

/*
 * The THPs whose PMD ksmd split, by pfn: sp_thp_pmd_split[sp_thp_rec]
 * those of this pass, the other those of passes that ended, which ksmd
 * splits one at a time (sp_thp_split_next()).
 */
static struct xarray sp_thp_pmd_split[2] = {
	XARRAY_INIT(sp_thp_pmd_split, 0), XARRAY_INIT(sp_thp_pmd_split, 0),
};

static unsigned int sp_thp_rec;

/*
 * An entry is an xarray value: the matches counted (saturating), and
 * above them how many the folio needs, which its size sets; 31 bits in
 * all, as a value entry holds on 32-bit.
 */
#define SP_THP_COUNT_BITS	16
#define SP_THP_COUNT_MAX	GENMASK(SP_THP_COUNT_BITS - 1, 0)
#define SP_THP_NEED_MAX		GENMASK(14, 0)

static unsigned long sp_thp_matches(struct xarray *xa, unsigned long key)
{
	void *e = xa_load(xa, key);

	return xa_is_value(e) ? xa_to_value(e) & SP_THP_COUNT_MAX : 0;
}

/* The matches that make @folio worth splitting: see thp_split_min. */
static unsigned long sp_thp_need(struct folio *folio)
{
	unsigned long need = READ_ONCE(sp_thp_split_min);

	need = DIV_ROUND_UP(need * folio_nr_pages(folio), SP_THP_SPLIT_MAX);
	return min_t(unsigned long, need, SP_THP_NEED_MAX);
}

/**
 * sp_thp_worth_split - may a large folio be split to merge its pages?
 * @folio: the folio
 * @match: count one more of its pages with an equal page first
 *
 * A count that finds no memory for its entry is lost: that only delays
 * the split.
 *
 * Return: true for a small folio, or once the folio's matches in this
 * pass or the last reached thp_split_min, which counts for 512 pages: a
 * folio of another size needs as many in proportion, at least one.
 */
bool sp_thp_worth_split(struct folio *folio, bool match)
{
	unsigned int order = folio_order(folio);
	unsigned long key = folio_pfn(folio) >> order, n, need;
	struct xarray *now, *last;

	lockdep_assert_held(&sp_mutex);
	if (!order)
		return true;
	if (folio_pfn(folio) == sp_thp_worth_pfn && order == sp_thp_worth_order)
		return true;
	need = sp_thp_need(folio);
	if (need <= 1 || WARN_ON_ONCE(order >= SP_THP_ORDERS))
		return true;
	now = &sp_thp_counts[sp_thp_now][order];
	last = &sp_thp_counts[!sp_thp_now][order];
	n = sp_thp_matches(now, key);
	if (match && n < need) {
		n++;
		xa_store(now, key, xa_mk_value(need << SP_THP_COUNT_BITS | n),
			 GFP_KERNEL);
	}
	if (n < need && sp_thp_matches(last, key) < need)
		return false;
	sp_thp_worth_pfn = folio_pfn(folio);
	sp_thp_worth_order = order;
	return true;
}

/**
 * sp_thp_mapped_in_part - ksmd split the PMD that mapped a THP
 * @folio: the THP, locked
 *
 * A THP that is still mapped in part at the end of the pass is split then.
 * Losing the record, for want of memory, leaves that to reclaim.
 */
void sp_thp_mapped_in_part(struct folio *folio)
{
	lockdep_assert_held(&sp_mutex);
	xa_store(&sp_thp_pmd_split[sp_thp_rec], folio_pfn(folio),
		 xa_mk_value(0), GFP_KERNEL);
}

/*
 * Split the THP at @pfn if it is still one, anonymous, and mapped by PTEs
 * in part: the pages ksmd merged away from it come back to the allocator.
 * The memory may have been freed and reused since: then another such
 * folio may be split, which reclaim would have done.
 */
static void sp_thp_split_rest(unsigned long pfn)
{
	struct page *page = pfn_to_online_page(pfn);
	struct folio *folio;

	if (!page)
		return;
	folio = page_folio(page);
	if (!folio_try_get(folio))
		return;
	if (folio_test_large(folio) && folio_pfn(folio) == pfn &&
	    folio_test_anon(folio) && folio_mapped(folio) &&
	    !folio_entire_mapcount(folio) &&
	    folio_mapcount(folio) < folio_nr_pages(folio) &&
	    folio_trylock(folio)) {
		split_folio(folio);
		folio_unlock(folio);
	}
	folio_put(folio);
}

/**
 * sp_thp_offline - memory went offline: forget the THPs recorded in it
 * @start: its first pfn
 * @end: the pfn after it
 *
 * Their memory map may be gone by the end of the pass.
 */
void sp_thp_offline(unsigned long start, unsigned long end)
{
	struct xarray *xa;
	unsigned long pfn;
	void *e;

	lockdep_assert_held(&sp_mutex);
	for (xa = sp_thp_pmd_split; xa < sp_thp_pmd_split + 2; xa++)
		xa_for_each_range(xa, pfn, e, start, end - 1)
			xa_erase(xa, pfn);
}

/*
 * The THPs whose PMD this pass split are to be split once what they have
 * left mapped is known: their records join those of earlier passes that
 * ksmd has not split yet, O(1) unless some are left.
 */
static void sp_thp_split_later(void)
{
	struct xarray *rec = &sp_thp_pmd_split[sp_thp_rec];
	struct xarray *later = &sp_thp_pmd_split[!sp_thp_rec];
	unsigned long pfn;
	void *e;

	if (xa_empty(later)) {
		sp_thp_rec = !sp_thp_rec;
		return;
	}
	xa_for_each(rec, pfn, e) {
		if (xa_err(xa_store(later, pfn, e, GFP_KERNEL)))
			break;	/* left to reclaim, as in sp_thp_mapped_in_part() */
		cond_resched();
	}
	xa_destroy(rec);
}

/**
 * sp_thp_split_next - split one THP that a past pass left mapped in part
 *
 * One split at a time, so that ksmd lets go of sp_mutex between them.
 *
 * Return: false when none is left.
 */
bool sp_thp_split_next(void)
{
	struct xarray *xa = &sp_thp_pmd_split[!sp_thp_rec];
	unsigned long pfn = 0;

	lockdep_assert_held(&sp_mutex);
	if (!xa_find(xa, &pfn, ULONG_MAX, XA_PRESENT))
		return false;
	xa_erase(xa, pfn);
	sp_thp_split_rest(pfn);
	return true;
}

/**
 * sp_thp_pass_end - a pass ended: its counts become the last pass's
 *
 * Leaves the THPs ksmd left mapped in part to sp_thp_split_next(), counts
 * the folios with matches kept whole (huge_pages_kept), and empties the
 * counts of the pass before.
 */
void sp_thp_pass_end(void)
{
	unsigned long key, v, kept = 0;
	unsigned int order;
	void *e;

	lockdep_assert_held(&sp_mutex);
	sp_thp_split_later();
	sp_thp_worth_pfn = ULONG_MAX;
	for (order = 1; order < SP_THP_ORDERS; order++) {
		xa_for_each(&sp_thp_counts[sp_thp_now][order], key, e) {
			v = xa_to_value(e);
			kept += (v & SP_THP_COUNT_MAX) <
				v >> SP_THP_COUNT_BITS;
			cond_resched();
		}
		xa_destroy(&sp_thp_counts[!sp_thp_now][order]);
	}
	sp_stats.thp_kept = kept;
	sp_thp_now = !sp_thp_now;
}

/**
 * sp_thp_forget - drop every count: run=2 unmerged everything
 */
void sp_thp_forget(void)
{
	unsigned int order;

	lockdep_assert_held(&sp_mutex);
	for (order = 1; order < SP_THP_ORDERS; order++) {
		xa_destroy(&sp_thp_counts[0][order]);
		xa_destroy(&sp_thp_counts[1][order]);
	}
	xa_destroy(&sp_thp_pmd_split[0]);
	xa_destroy(&sp_thp_pmd_split[1]);
	sp_thp_worth_pfn = ULONG_MAX;
	sp_stats.thp_kept = 0;
}

#ifdef CONFIG_KSM_VISIT_KUNIT_TEST
#include "tests/thp-kunit.h"
#endif
