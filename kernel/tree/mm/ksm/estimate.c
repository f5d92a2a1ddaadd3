// SPDX-License-Identifier: GPL-2.0
/*
 * KSM estimate: with /sys/kernel/mm/ksm/estimate set, ksmd counts what
 * merging would save and merges nothing.
 *
 * Its visits find what a merging visit finds, by the same rules (a page
 * is looked up once its hash held still over two visits; merge domains
 * apply), but stop short of every change to the page: nothing is
 * write-protected, copied or mapped, and the walk cleans no PTE
 * (walk.c), so every visit reads its page. A page whose hash equals the
 * zero page's (with use_zero_pages), a KSM page's, or a candidate's of
 * this pass is counted as one that would merge; a candidate is counted
 * too when a page first matches it. Each pass counts afresh, so a page
 * that changes is counted by what it holds at the next visits.
 *
 * Under zero_pages_only only all-zero pages are counted. A merge on
 * request merges nothing while estimate is set, and counts nothing.
 *
 * A match is by hash alone: pages are not compared, and 46 bits of keyed
 * hash make a wrong count a matter of luck. Where a merge would do less
 * than the count says, the estimate is high: a page in a huge page that
 * too few matches would split (thp_split_min), a page on another NUMA
 * node with merge_across_nodes 0, or sharers past max_page_sharing, which
 * would start another KSM page.
 *
 * The figures of a pass are shown once it is complete, added to what is
 * merged already: the system's from sp_est_shown, a process's from its
 * slot (by pass parity, so that ending a pass costs nothing per slot),
 * summed over a cgroup by memcontrol.c.
 *
 * Layering (see samepage.h): calls into core.c, index.c, knode.c, merge.c.
 */
#include <linux/ksm.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>

#include "samepage.h"

/*
 * The figures of the last complete pass, shown while estimate is set,
 * and those of the pass under way; ksmd's, under sp_mutex.
 */
struct sp_est_figures sp_est_shown;
static struct sp_est_figures sp_est_now;

/* Passes ended, never reset: the number of the pass under way. */
static unsigned long sp_est_passes;

/* Count one more page of @slot's mm that would merge, in this pass. */
static void sp_est_add(struct sp_slot *slot)
{
	unsigned int i = sp_est_passes & 1;

	lockdep_assert_held(&sp_mutex);
	if (slot->est_pass[i] != sp_est_passes) {
		WRITE_ONCE(slot->est[i], 0);
		WRITE_ONCE(slot->est_pass[i], sp_est_passes);
	}
	WRITE_ONCE(slot->est[i], slot->est[i] + 1);
}

/* The pages of @slot's mm that the last complete pass counted. */
static unsigned long sp_est_pages(struct sp_slot *slot)
{
	unsigned long last = READ_ONCE(sp_est_passes) - 1;
	unsigned int i = last & 1;

	return READ_ONCE(slot->est_pass[i]) == last ?
	       READ_ONCE(slot->est[i]) : 0;
}

/*
 * Is @page, which may be mapped more than once, the page at @vpn of @mm
 * too, a frame the two share since fork, whose merge would save nothing?
 */
static bool sp_est_same_frame(struct mm_struct *mm, unsigned long vpn,
			      struct page *page)
{
	struct page *tpage;
	bool same;

	if (!folio_likely_mapped_shared(page_folio(page)))
		return false;
	tpage = sp_get_page_at(mm, vpn << PAGE_SHIFT);
	same = tpage == page;
	if (tpage)
		put_page(tpage);
	return same;
}

/* What a candidate that a probe offered is to the page looked up. */
enum sp_est_hit {
	SP_EST_MATCH,	/* a candidate of the same hash and domain */
	SP_EST_NO,	/* another hash, domain or the same frame */
	SP_EST_GONE,	/* no candidate any more: forget the entry */
};

/*
 * Is candidate (@id, @tvpn) one that @page, of hash @hash in @slot's
 * domain, would merge with? A frame two mms share since fork would save
 * nothing: it is looked at only when @page is mapped more than once. The
 * candidate is counted at its first match of the pass, which its state
 * word records.
 */
static enum sp_est_hit sp_est_match(struct sp_slot *slot, struct page *page,
				    u64 hash, unsigned int id,
				    unsigned long tvpn)
{
	enum sp_est_hit ret = SP_EST_NO;
	struct mm_struct *tmm;
	struct sp_slot *t;
	unsigned long st;
	bool other;
	void *e;

	tmm = sp_slot_get(id, slot, &t, &other);
	if (!tmm)
		return other ? SP_EST_NO : SP_EST_GONE;
	e = xa_load(&t->pages, tvpn);
	st = xa_is_value(e) ? xa_to_value(e) : 0;
	if (!sp_st_cand(st))
		ret = SP_EST_GONE;
	else if (sp_st_hash_is(st, hash) &&
		 !sp_est_same_frame(tmm, tvpn, page))
		ret = SP_EST_MATCH;
	if (ret == SP_EST_MATCH && !(st & SP_ST_MATCHED)) {
		sp_set_state(t, tvpn, st | SP_ST_MATCHED);
		sp_est_add(t);
		sp_est_now.shared++;
	}
	mmput_async(tmm);
	return ret;
}

/*
 * Count @page, of hash @hash at @vpn of @slot, if a candidate of this
 * pass matches it; else make it one. Whether it is a candidate now.
 */
static bool sp_est_candidates(struct sp_slot *slot, unsigned long vpn,
			      struct page *page, u64 hash)
{
	struct sp_probe p;
	unsigned long tvpn;
	unsigned int id;
	bool mine = false;

	sp_probe_start(&p, &sp_cands, sp_key(slot, hash));
	while (sp_probe_next(&p, &id, &tvpn)) {
		if (id == slot->id && tvpn == vpn) {
			sp_probe_renew(&p, false);
			mine = true;
			continue;
		}
		switch (sp_est_match(slot, page, hash, id, tvpn)) {
		case SP_EST_MATCH:
			sp_est_add(slot);
			sp_est_now.sharing++;
			return mine;
		case SP_EST_GONE:
			sp_probe_forget(&p);
			break;
		case SP_EST_NO:
			break;
		}
	}
	return mine || sp_probe_insert(&p, slot->id, vpn, false);
}

/*
 * Count @page, whose hash @hash held still since the last visit, if it
 * would merge: into the zero page, a KSM page of its domain or a
 * candidate. Whether it is a candidate now.
 */
static bool sp_est_count(struct sp_slot *slot, unsigned long vpn,
			 struct page *page, u64 hash)
{
	struct sp_knode *head;

	bool zero_only = READ_ONCE(sp_zero_pages_only);

	if ((zero_only || READ_ONCE(sp_use_zero_pages)) &&
	    hash == (sp_zero_hash & SP_HASH_MASK)) {
		sp_est_add(slot);
		sp_est_now.zero++;
		return false;
	}
	if (zero_only || !slot->id)	/* or it could not be recorded */
		return false;
	head = sp_stable_find(&sp_stable, sp_key(slot, hash), slot->dom, page);
	sp_knode_reap();
	if (head) {
		sp_est_add(slot);
		sp_est_now.sharing++;
		return false;
	}
	return sp_est_candidates(slot, vpn, page, hash);
}

/**
 * sp_est_visit - the visit of a page under estimate
 * @slot: the slot of the page's mm; ksmd holds sp_mutex, no mmap_lock
 * @addr: the page's address
 * @page: the page, referenced, not KSM
 * @entry: its entry in @slot's xarray, a state word or NULL
 *
 * The page is read and counted (see above); its state word keeps the new
 * hash and whether it is a candidate, and says that the hash was not
 * taken write-protected. Its smart-scan age and protection history stay:
 * no visit is skipped under estimate, so that each pass counts every
 * page.
 */
void sp_est_visit(struct sp_slot *slot, unsigned long addr,
		  struct page *page, void *entry)
{
	unsigned long vpn = addr >> PAGE_SHIFT;
	unsigned long st = entry ? xa_to_value(entry) : 0;
	u64 hash = sp_hash_page(page) & SP_HASH_MASK;
	bool cand = false;
	void *new;

	lockdep_assert_held(&sp_mutex);
	if (entry && sp_st_hash_is(st, hash))
		cand = sp_est_count(slot, vpn, page, hash);
	else
		sp_cands.want++;	/* it may be looked up next pass */
	st &= ~(SP_ST_HASH_MASK | SP_ST_CAND | SP_ST_WP | SP_ST_MATCHED);
	new = xa_mk_value(st | (hash & SP_ST_HASH_MASK) |
			  (cand ? SP_ST_CAND : 0));
	if (new != entry)
		sp_entry_set(slot, vpn, new);
}

/**
 * sp_est_pass_end - show what the pass that ends counted
 *
 * O(1): the slots' figures are told apart by pass number.
 */
void sp_est_pass_end(void)
{
	lockdep_assert_held(&sp_mutex);
	WRITE_ONCE(sp_est_shown.shared, sp_est_now.shared);
	WRITE_ONCE(sp_est_shown.sharing, sp_est_now.sharing);
	WRITE_ONCE(sp_est_shown.zero, sp_est_now.zero);
	sp_est_now = (struct sp_est_figures){};
	WRITE_ONCE(sp_est_passes, sp_est_passes + 1);
}

/**
 * ksm_estimated_pages - the pages of @mm that would be merged
 * @mm: the mm
 *
 * Return: what ksm_merging_pages and ksm_zero_pages of @mm would add up
 * to once all that estimate's last complete pass found merges: what is
 * merged now, and what the pass counted besides.
 */
unsigned long ksm_estimated_pages(struct mm_struct *mm)
{
	unsigned long n = READ_ONCE(mm->ksm_merging_pages) +
			  max(mm_ksm_zero_pages(mm), 0L);
	struct sp_slot *slot;

	spin_lock(&sp_slots_lock);
	slot = sp_slot_of(mm);
	if (slot)
		n += sp_est_pages(slot);
	spin_unlock(&sp_slots_lock);
	return n;
}

/**
 * ksm_estimating - whether estimate is set
 *
 * /proc/PID/ksm_stat and memory.ksm_stat show the estimate only then;
 * never under hide_merges, where it would tell a process which of its
 * pages have an equal page elsewhere.
 *
 * Return: true while /sys/kernel/mm/ksm/estimate is 1 and hide_merges 0.
 */
bool ksm_estimating(void)
{
	return READ_ONCE(sp_estimate) && !READ_ONCE(ksm_hide_merges);
}
