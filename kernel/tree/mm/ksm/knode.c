// SPDX-License-Identifier: GPL-2.0
/*
 * KSM nodes and sharers: what ksmd records of a page, and its
 * lifecycle. The entry of each tracked page in its slot's xarray (a state
 * word, or the node of the KSM page it maps), and the counters that follow
 * the entries; a sharer added to and taken off its KSM page's node; a node
 * freed with its folio, released as an orphan, or found stale by the
 * sweep.
 *
 * All of it runs under sp_mutex; a node's sharers change only with its
 * KSM folio locked, or once the folio is gone.
 *
 * Layering (see samepage.h): calls into core.c, fresh.c, index.c, rmap.c.
 */
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/rmap.h>
#include <linux/slab.h>

#include "samepage.h"

#include <trace/events/ksm.h>

/*
 * Entries that point to a node carry this mark, so that forgetting a slot
 * visits only its merged pages (sp_forget_some()).
 */
#define SP_XA_MERGED	XA_MARK_0

static bool sp_entry_cand(const void *entry)
{
	return xa_is_value(entry) && sp_st_cand(xa_to_value(entry));
}

/* Account for the entry of a page going from @old to @new. */
static void sp_account(struct sp_slot *slot, void *old, void *new)
{
	if (!old) {
		sp_stats.tracked++;
		slot->mm->ksm_rmap_items++;
	} else if (sp_entry_cand(old)) {
		sp_stats.unshared--;
		slot->cands--;
	}
	if (!new) {
		sp_stats.tracked--;
		slot->mm->ksm_rmap_items--;
	} else if (sp_entry_cand(new)) {
		sp_stats.unshared++;
		slot->cands++;
	}
}

/**
 * sp_entry_set - set what ksmd knows of a page
 * @slot: the page's slot
 * @vpn: its virtual page number
 * @new: a state word (xarray value), the node of the KSM page it maps, or
 *       NULL to forget the page
 *
 * Done under the xarray's lock: once the last entry of an exiting mm's
 * slot is gone, __ksm_exit() may free the slot, and nothing here touches
 * it after that. The xarray's nodes are charged to the memory cgroup of
 * the task that stores: none for ksmd, the requester's for a merge on
 * request, which pays for the pages it has tracked.
 *
 * Return: false if the entry could not be stored (no memory).
 */
bool sp_entry_set(struct sp_slot *slot, unsigned long vpn, void *new)
{
	XA_STATE(xas, &slot->pages, vpn);
	void *old;

	lockdep_assert_held(&sp_mutex);
	if (vpn + 1 != slot->visiting)
		slot->gen++;
	do {
		xas_lock(&xas);
		old = xas_store(&xas, new);
		if (!xas_error(&xas)) {
			/* A store of NULL clears the marks itself. */
			if (new && xa_is_value(new))
				xas_clear_mark(&xas, SP_XA_MERGED);
			else if (new)
				xas_set_mark(&xas, SP_XA_MERGED);
			sp_account(slot, old, new);
		}
		xas_unlock(&xas);
	} while (xas_nomem(&xas, GFP_KERNEL_ACCOUNT));
	return !xas_error(&xas);
}

/**
 * sp_set_state - remember a page that is not merged
 * @slot: the page's slot
 * @vpn: its virtual page number
 * @st: its state word
 */
void sp_set_state(struct sp_slot *slot, unsigned long vpn, unsigned long st)
{
	lockdep_assert_held(&sp_mutex);
	sp_entry_set(slot, vpn, xa_mk_value(st));
}

/*
 * A node's sharers: an open-addressed table in one array of cap entries,
 * a power of two. Each sharer sits at the home that the keyed hash of its
 * loc gives, or after it with no empty entry (loc 0: no slot has id 0)
 * between, so that linking, finding and unlinking a sharer each cost
 * O(1) expected however many sharers the node has.
 *
 * The hash is multiply-add under a key drawn at boot, so that a user who
 * picks the addresses of its pages cannot know their homes, then mixed:
 * the high half folded into the low, and multiplied again. Alone,
 * multiply-add-shift (a universal family, but not one linear probing is
 * safe with) maps a grid of locs, such as a fork's children (consecutive
 * slot ids, each at the same consecutive pages), to a lattice whose
 * clusters depend on the key: from 4 to 12 probes a removal over ten
 * keys, simulating the bench's fork-and-kill, where the mixed hash took
 * 5.0 with every key. It costs two multiplications, where an unlink
 * hashes every sharer it moves back.
 *
 * A table of up to SP_SHARERS_DENSE entries may fill up (a node of two
 * sharers, the most common, keeps two entries); a larger one grows at
 * three quarters full and shrinks at an eighth (sp_sharers_trim()), so
 * resizing, which rehashes every sharer, costs O(1) amortized.
 */
#define SP_SHARERS_DENSE	4

static u64 sp_sharer_mul __ro_after_init;
static u64 sp_sharer_add __ro_after_init;

static unsigned int sp_sharer_home(const struct sp_knode *node, u64 loc)
{
	u64 h = loc * sp_sharer_mul + sp_sharer_add;

	h ^= h >> 32;
	h *= sp_sharer_mul;
	return h >> (64 - ilog2(node->cap));
}

/* Put @sh at its place in @node's table, which has room; folio locked. */
static void sp_sharer_place(struct sp_knode *node, const struct sp_sharer *sh)
{
	unsigned int i = sp_sharer_home(node, sh->loc);

	while (node->sharers[i].loc)
		i = (i + 1) & (node->cap - 1);
	node->sharers[i] = *sh;
}

/* Move @node's sharers to a new table of @cap entries; folio locked. */
static bool sp_sharers_resize(struct sp_knode *node, unsigned int cap)
{
	struct sp_sharer *old = node->sharers;
	unsigned int i, old_cap = node->cap;

	node->sharers = kvcalloc(cap, sizeof(*old), GFP_KERNEL | __GFP_NOWARN);
	if (!node->sharers) {
		node->sharers = old;
		return false;
	}
	node->cap = cap;
	for (i = 0; i < old_cap; i++)
		if (old[i].loc)
			sp_sharer_place(node, &old[i]);
	kvfree(old);
	return true;
}

/* Would one more sharer overfill @node's table? */
static bool sp_sharers_full(const struct sp_knode *node)
{
	if (node->cap <= SP_SHARERS_DENSE)
		return node->nr_sharers == node->cap;
	return (node->nr_sharers + 1) * 4 > node->cap * 3;
}

/*
 * Shrink @node's table once it is an eighth full, at once to the size its
 * sharers fill from a quarter to a half (or SP_SHARERS_DENSE). Amortized
 * over the sharers removed since the last resize, that is at most one
 * rehash and eight entries scanned a removal, and a third of a rehash and
 * under three entries when the sharers drain steadily (halving at an
 * eighth, as the table did, costs the worst case all the way down).
 * Folio locked.
 */
static void sp_sharers_trim(struct sp_knode *node)
{
	unsigned int cap = SP_SHARERS_DENSE;

	if (node->cap <= SP_SHARERS_DENSE || node->nr_sharers > node->cap / 8)
		return;
	if (node->nr_sharers > SP_SHARERS_DENSE / 2)
		cap = roundup_pow_of_two(2 * node->nr_sharers);
	sp_sharers_resize(node, cap);
}

/* The sharer of @loc in @node's table, or NULL. */
static struct sp_sharer *sp_sharer_find(struct sp_knode *node, u64 loc)
{
	unsigned int i = sp_sharer_home(node, loc), n;

	if (!loc)
		return NULL;

	for (n = 0; n < node->cap; n++) {
		if (node->sharers[i].loc == loc)
			return &node->sharers[i];
		if (!node->sharers[i].loc)
			break;
		i = (i + 1) & (node->cap - 1);
	}
	return NULL;
}

/*
 * Empty entry @hole of @node's table, and close the gap it leaves: each
 * sharer after it, up to the next empty entry, whose home is not between
 * the hole and itself moves back into the hole, which moves on to where
 * it was. Folio locked.
 */
static void sp_sharer_remove(struct sp_knode *node, unsigned int hole)
{
	unsigned int mask = node->cap - 1, i = hole, home;

	node->sharers[hole].loc = 0;
	for (;;) {
		i = (i + 1) & mask;
		if (!node->sharers[i].loc)
			break;
		home = sp_sharer_home(node, node->sharers[i].loc);
		if (((i - home) & mask) < ((i - hole) & mask))
			continue;
		node->sharers[hole] = node->sharers[i];
		node->sharers[i].loc = 0;
		hole = i;
	}
}

/**
 * sp_knode_init - choose the key of the sharer tables' hash
 */
void __init sp_knode_init(void)
{
	sp_sharer_mul = get_random_u64() | 1;
	sp_sharer_add = get_random_u64();
}

/**
 * sp_sharers_init - give a new node room for its first sharers
 * @node: the node, not yet a KSM page's, its table empty
 * @cap: how many, a power of two, two or more
 *
 * Return: false if there is no memory for them.
 */
bool sp_sharers_init(struct sp_knode *node, unsigned int cap)
{
	return sp_sharers_resize(node, cap);
}

/**
 * sp_sharer_link - record a mapping of a KSM page
 * @node: the KSM page's node; its folio locked
 * @slot: the slot of the mapping's mm
 * @addr: the mapping's address
 * @av: the anon_vma of its VMA, referenced: the reference goes to the
 *      sharer, or stays the caller's on failure
 * @pgoff: the page's linear index in that VMA (linear_page_index())
 *
 * Return: false if the slot has no id, or the sharer or the page's entry
 * could not be stored.
 */
bool sp_sharer_link(struct sp_knode *node, struct sp_slot *slot,
		    unsigned long addr, struct anon_vma *av, pgoff_t pgoff)
{
	unsigned long vpn = addr >> PAGE_SHIFT;
	struct sp_sharer sh = {
		.loc = sp_loc(slot->id, vpn),
		.av = (unsigned long)av | (pgoff == vpn ? SP_SHARER_LINEAR : 0),
	};

	lockdep_assert_held(&sp_mutex);
	if (!sh.loc)
		return false;
	if (sp_sharers_full(node) && !sp_sharers_resize(node, 2 * node->cap))
		return false;
	if (sp_hide_charge(slot, &sh.av))
		return false;
	if (!sp_entry_set(slot, vpn, node)) {
		sp_hide_uncharge(slot, sh.av);
		return false;
	}
	sp_sharer_place(node, &sh);
	if (node->nr_sharers++)
		sp_stats.sharing++;
	else
		sp_stats.shared++;
	slot->mm->ksm_merging_pages++;
	return true;
}

/**
 * ksm_hidden_access - a mapping of a hidden KSM page is about to be copied
 * @mm: the mm of the mapping
 * @addr: its address
 * @folio: the KSM folio, referenced
 *
 * do_numa_page() calls this before the copy that any access to a hidden
 * KSM page takes (ksm_hidden_pte()): the page charged for the mapping
 * (sp_hide_charge()) is uncharged now, since the copy is charged as any
 * anonymous page is, rather than when ksmd next finds the mapping gone.
 * A folio locked by someone else leaves that to ksmd; a copy that then
 * fails leaves the mapping uncharged.
 *
 * Context: may sleep; takes the folio lock (trylock) and sp_slots_lock.
 */
void ksm_hidden_access(struct mm_struct *mm, unsigned long addr,
		       struct folio *folio)
{
	struct sp_knode *node;
	struct sp_sharer *sh;
	struct sp_slot *slot;

	if (!folio_trylock(folio))
		return;
	node = sp_folio_node(folio);
	/* A linked slot cannot be freed while sp_slots_lock is held. */
	spin_lock(&sp_slots_lock);
	slot = node ? sp_slot_of(mm) : NULL;
	sh = slot ? sp_sharer_find(node, sp_loc(slot->id, addr >> PAGE_SHIFT)) :
		    NULL;
	if (sh && (sh->av & SP_SHARER_CHARGED)) {
		sh->av &= ~SP_SHARER_CHARGED;
		sp_hide_uncharge(slot, SP_SHARER_CHARGED);
	}
	spin_unlock(&sp_slots_lock);
	folio_unlock(folio);
}

/*
 * Account for sharer @sh of @slot going from @node, whose table the caller
 * mends, and forget its page unless @keep (the caller erases it); KSM
 * folio locked or gone.
 */
static void sp_sharer_unlink(struct sp_knode *node, struct sp_sharer *sh,
			     struct sp_slot *slot, bool keep)
{
	if (--node->nr_sharers)
		sp_stats.sharing--;
	else
		sp_stats.shared--;
	put_anon_vma(sp_sharer_av(sh));
	sp_hide_uncharge(slot, sh->av);
	slot->mm->ksm_merging_pages--;
	if (!keep)
		sp_entry_set(slot, sp_loc_addr(sh->loc) >> PAGE_SHIFT, NULL);
}

/*
 * The entries the caller of sp_drop_sharers() erases itself, pages @first
 * to @last of @slot (none while @first > @last): a stale node freed on
 * the way leaves them be. @exited: the slot's mm has exited, and the
 * entries may be left as they are until the slot is erased whole.
 */
struct sp_erasing {
	struct sp_slot *slot;
	unsigned long first;
	unsigned long last;
	bool exited;
};

/**
 * sp_node_folio - get the KSM folio of a node, or free a stale node
 * @node: the node
 * @lock: also lock the folio
 *
 * When the folio has gone (every mapping of it was unmapped or copied on
 * write) the node is stale: it and its sharers are freed here.
 *
 * Context: sp_mutex held.
 * Return: the folio, referenced (and locked if asked), or NULL.
 */
struct folio *sp_node_folio(struct sp_knode *node, bool lock)
{
	struct folio *folio = sp_node_folio_try(node, lock);

	lockdep_assert_held(&sp_mutex);
	if (!folio)
		sp_knode_free(node);
	return folio;
}

/**
 * sp_knode_reap - free the stale nodes a lookup took out of the table
 *
 * A walk of the stable table that meets a node whose folio has gone
 * takes it out of the table and leaves it on the table's list of stale
 * nodes (index.c cannot free sharers); this frees them.
 *
 * Context: sp_mutex held.
 */
void sp_knode_reap(void)
{
	struct sp_knode *node;

	lockdep_assert_held(&sp_mutex);
	while ((node = sp_stable_pop_stale(&sp_stable)))
		sp_knode_free(node);
}

/* Whether the entry of sharer @sh of @slot is one @but erases. */
static bool sp_erased_by(const struct sp_erasing *but, struct sp_slot *slot,
			 const struct sp_sharer *sh)
{
	unsigned long vpn = sp_loc_addr(sh->loc) >> PAGE_SHIFT;

	return but && slot == but->slot && vpn >= but->first &&
	       vpn <= but->last;
}

/*
 * Free @node, whose KSM folio has gone, and its sharers, erasing their
 * entries but those @but (if any) erases itself. Returns how many of
 * those there were.
 */
static unsigned int sp_knode_free_but(struct sp_knode *node,
				      const struct sp_erasing *but)
{
	unsigned int kept = 0;
	struct sp_sharer *sh;
	struct sp_slot *slot;
	bool keep;

	for (sh = sp_sharer_next(node, node->sharers); sh;
	     sh = sp_sharer_next(node, sh + 1)) {
		/* Forgetting a slot, most sharers are its own: no lookup. */
		if (but && sp_loc_id(sh->loc) == but->slot->id)
			slot = but->slot;
		else
			slot = sp_sharer_slot(sh);
		/*
		 * ksm_remove_rmap_item is traced for each mapping but the
		 * last one left, which pages_shared counts: the events the
		 * tracepoint has always carried.
		 */
		if (node->nr_sharers > 1)
			trace_ksm_remove_rmap_item(node->kpfn,
						   (void *)(long)sh->loc,
						   slot->mm);
		keep = sp_erased_by(but, slot, sh);
		kept += keep;
		sp_sharer_unlink(node, sh, slot, keep);
	}
	kvfree(node->sharers);
	trace_ksm_remove_ksm_page(node->kpfn);
	sp_stable_del(&sp_stable, node);
	kmem_cache_free(sp_node_cache, node);
	return kept;
}

/**
 * sp_knode_free - free a node whose KSM folio has gone, and its sharers
 * @node: the node; sp_mutex held
 */
void sp_knode_free(struct sp_knode *node)
{
	lockdep_assert_held(&sp_mutex);
	sp_knode_free_but(node, NULL);
}

/*
 * Free @node, which has no sharer, unless something still maps its folio
 * @folio (locked, so no mapping comes or goes meanwhile). The folio may
 * live on without mappings: in the swap cache, in a per-CPU batch, or
 * held for good after memory failure. It is left KSM without a node,
 * which nothing can join (a swap-in takes a copy of it) and which goes
 * when its last reference does. A folio still mapped, by a fork ksmd has
 * not seen yet, keeps its node. Returns true if @node was freed.
 */
static bool sp_orphan_go(struct sp_knode *node, struct folio *folio)
{
	if (node->nr_sharers || folio_mapped(folio))
		return false;
	sp_folio_set_node(folio, NULL);
	sp_knode_free(node);
	return true;
}

/*
 * Let go of @node's folio @kfolio after a run of drops (either may be
 * NULL: none held). A node left without sharers and mappings goes now,
 * so that pages_shared and the counts of chains and dups fall together,
 * as they do in mainline; otherwise its table shrinks to fit what is left.
 */
static void sp_drops_done(struct sp_knode *node, struct folio *kfolio)
{
	if (!kfolio)
		return;
	if (!sp_orphan_go(node, kfolio))
		sp_sharers_trim(node);
	folio_unlock(kfolio);
	folio_put(kfolio);
}

/*
 * Take @node, freed, out of the @n entries of @nodes. Each entry that
 * points to it had a sharer of it, which sp_knode_free_but() counted in
 * @left: so the search ends at the last of them, which is near when they
 * lie side by side (a fork's pages, equal pages next to each other).
 */
static void sp_nodes_strike(struct sp_knode **nodes, unsigned int n,
			    const struct sp_knode *node, unsigned int left)
{
	unsigned int i;

	for (i = 0; left && i < n; i++) {
		if (nodes[i] == node) {
			nodes[i] = NULL;
			left--;
		}
	}
	if (IS_ENABLED(CONFIG_DEBUG_VM)) {
		for (; i < n; i++) {
			if (nodes[i] == node) {
				VM_WARN_ON_ONCE(1);
				nodes[i] = NULL;
			}
		}
	}
}

/*
 * Drop the sharers of @n entries of @e->slot, node @nodes[i] at page
 * @vpns[i], all between @e->first and @e->last, keeping the entries,
 * which the caller erases. Entries of one node in a row (a fork's pages
 * of one KSM page) take its folio's lock once.
 *
 * A node found stale on the way is freed with its sharers, this batch's
 * included, and struck from @nodes, so that no later entry uses it.
 */
static void sp_drop_sharers(const struct sp_erasing *e,
			    struct sp_knode **nodes, const unsigned long *vpns,
			    unsigned int n)
{
	struct sp_knode *node = NULL, *gone;
	struct folio *kfolio = NULL;
	struct sp_sharer *sh;
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (!nodes[i])
			continue;	/* freed */
		if (nodes[i] != node) {
			sp_drops_done(node, kfolio);
			node = nodes[i];
			kfolio = sp_node_folio_try(node, true);
			if (!kfolio) {
				gone = node;
				node = NULL;
				sp_nodes_strike(nodes + i, n - i, gone,
						sp_knode_free_but(gone, e));
				continue;
			}
		}
		sh = sp_sharer_find(node, sp_loc(e->slot->id, vpns[i]));
		if (WARN_ON_ONCE(!sh))
			continue;
		sp_sharer_unlink(node, sh, e->slot, true);
		sp_sharer_remove(node, sh - node->sharers);
	}
	sp_drops_done(node, kfolio);
}

/**
 * sp_sharer_drop - forget a mapping of a KSM page
 * @node: the node that the page's entry points to; sp_mutex held
 * @slot: the page's slot
 * @vpn: its virtual page number
 */
void sp_sharer_drop(struct sp_knode *node, struct sp_slot *slot,
		    unsigned long vpn)
{
	struct sp_erasing e = { slot, vpn, vpn, false };

	lockdep_assert_held(&sp_mutex);
	sp_drop_sharers(&e, &node, &vpn, 1);
	sp_entry_set(slot, vpn, NULL);
}

/* Entries forgotten between two chances to reschedule. */
#define SP_FORGET_BATCH	256

/**
 * sp_forget - forget the pages of a range where nothing is mapped
 * @slot: the slot
 * @from: the range's first address
 * @to: the address past it
 * @budget: how many entries it may forget; it takes off those it did
 *
 * Return: where it stopped: @to, or the address of the first entry left
 * when the budget ran out.
 */
unsigned long sp_forget(struct sp_slot *slot, unsigned long from,
			unsigned long to, unsigned int *budget)
{
	unsigned long vpn;
	void *entry;

	lockdep_assert_held(&sp_mutex);
	if (from >= to)
		return to;
	xa_for_each_range(&slot->pages, vpn, entry, from >> PAGE_SHIFT,
			  (to - 1) >> PAGE_SHIFT) {
		if (!*budget)
			return vpn << PAGE_SHIFT;
		if (!(--*budget % SP_FORGET_BATCH))
			cond_resched();
		if (xa_is_value(entry))
			sp_entry_set(slot, vpn, NULL);
		else
			sp_sharer_drop(entry, slot, vpn);
	}
	return to;
}

/*
 * Erase every entry of @slot from page @first to @last, under one hold of
 * the xarray's lock, without accounting for them (sp_uncount() does, once
 * the slot is empty). With multi-index entries one store of NULL clears
 * an aligned range, freeing the nodes below it. Otherwise each entry
 * takes a store, and an erase that shrinks the tree under the iteration
 * can end it early: it goes again until none is left.
 */
static void sp_erase_range(struct sp_slot *slot, unsigned long first,
			   unsigned long last)
{
	slot->gen++;
#ifdef CONFIG_XARRAY_MULTI
	xa_store_range(&slot->pages, first, last, NULL, GFP_KERNEL);
#else
	XA_STATE(xas, &slot->pages, first);
	void *entry;

	xas_lock(&xas);
	do {
		xas_set(&xas, first);
		xas_for_each(&xas, entry, last)
			xas_store(&xas, NULL);
		xas_set(&xas, first);
	} while (xas_find(&xas, last));
	xas_unlock(&xas);
#endif
}

/*
 * Turn the entries of @e's range that still point to a node, whose sharers
 * sp_drop_sharers() dropped, into the state word of a page never hashed:
 * a store in place, which allocates and frees nothing, and leaves the
 * counts as they are. The nodes may be gone; no entry points to them
 * after this.
 */
static void sp_unmark_range(const struct sp_erasing *e)
{
	XA_STATE(xas, &e->slot->pages, e->first);
	void *entry;

	e->slot->gen++;
	xas_lock(&xas);
	xas_for_each_marked(&xas, entry, e->last, SP_XA_MERGED) {
		xas_store(&xas, xa_mk_value(0));
		xas_clear_mark(&xas, SP_XA_MERGED);
	}
	xas_unlock(&xas);
}

/*
 * Drop the sharers of up to SP_FORGET_BATCH merged pages of @e->slot from
 * page *@vpn on, found by their mark in one walk under RCU; *@vpn moves
 * past them. Their entries become state words, but for an exited mm's:
 * no one reads those but this, which goes on from *@vpn, and the erase of
 * the slot (sp_slot_get() finds no exited mm; __ksm_exit() only asks
 * whether the xarray is empty). Returns how many there
 * were, and in *@more whether the walk saw another after them. @e->slot
 * is the cursor's, which __ksm_exit() leaves to ksmd, so it stays while
 * the batch touches it.
 */
static unsigned int sp_forget_merged(struct sp_erasing *e, unsigned long *vpn,
				     bool *more)
{
	static struct sp_knode *nodes[SP_FORGET_BATCH];	/* under sp_mutex */
	static unsigned long vpns[SP_FORGET_BATCH];
	XA_STATE(xas, &e->slot->pages, *vpn);
	unsigned int n = 0;
	void *entry;

	rcu_read_lock();
	xas_for_each_marked(&xas, entry, ULONG_MAX, SP_XA_MERGED) {
		if (xas_retry(&xas, entry))
			continue;
		nodes[n] = entry;
		vpns[n++] = xas.xa_index;
		if (n == SP_FORGET_BATCH)
			break;
	}
	*more = n == SP_FORGET_BATCH &&
		xas_find_marked(&xas, ULONG_MAX, SP_XA_MERGED);
	rcu_read_unlock();
	if (!n)
		return 0;
	e->first = vpns[0];
	e->last = vpns[n - 1];
	sp_drop_sharers(e, nodes, vpns, n);
	if (!e->exited)
		sp_unmark_range(e);
	*vpn = e->last + 1;
	return n;
}

/*
 * Entries one erase may clear: those below a node two levels above the
 * leaves, which frees at most that node and the leaves under it. The
 * nodes go through call_rcu(), and while callbacks wait for a grace
 * period, every scheduler tick on their CPU has RCU work to do (on
 * PREEMPT_RT it wakes the CPU's rcuc kthread), which a real-time task
 * woken by that tick waits behind: so the erases of an mm go in steps of
 * bounded size, each a share of the budget.
 */
#define SP_ERASE_SHIFT	(2 * XA_CHUNK_SHIFT)
#define SP_ERASE_COST	SP_FORGET_BATCH

/*
 * Every entry of @slot is erased: take them all off the counts at once.
 * Until then the counts kept them, and an entry set meanwhile was
 * accounted for as ever, so the slot's counts are exactly those to take
 * off.
 */
static void sp_uncount(struct sp_slot *slot)
{
	sp_stats.tracked -= slot->mm->ksm_rmap_items;
	sp_stats.unshared -= slot->cands;
	slot->mm->ksm_rmap_items = 0;
	slot->cands = 0;
}

/*
 * Erase @slot's entries, none of them merged, an aligned range at a time
 * while the budget lasts; true once none is left. The cost is that of
 * the xarray's nodes, not of its entries one by one.
 */
static bool sp_erase_some(struct sp_slot *slot, unsigned int *budget)
{
	unsigned long first = 0;

	/*
	 * The counts go with the erase that empties the slot, under the same
	 * hold of sp_mutex: __ksm_exit() frees a slot it finds empty when it
	 * is not the cursor's.
	 */
	for (;;) {
		if (!xa_find(&slot->pages, &first, ULONG_MAX, XA_PRESENT)) {
			sp_uncount(slot);
			return true;
		}
		if (!*budget)
			return false;
		first = round_down(first, 1UL << SP_ERASE_SHIFT);
		sp_erase_range(slot, first, first + (1UL << SP_ERASE_SHIFT) - 1);
		*budget -= min_t(unsigned int, SP_ERASE_COST, *budget);
		cond_resched();
	}
}

/**
 * sp_forget_some - forget the pages of a slot, a budget's worth
 * @slot: the cursor's slot: its mm exited, or run=2 unshared it
 * @budget: how many entries it may forget; it takes off those it did
 *
 * First the merged pages, each of which has a sharer to drop, found by
 * their mark; then the xarray is erased a range at a time, its other
 * entries with it. So forgetting costs what ksmd merged, and the nodes of
 * the xarray, rather than a step for each page it tracked.
 *
 * Return: true once the slot holds no entry.
 */
bool sp_forget_some(struct sp_slot *slot, unsigned int *budget)
{
	struct sp_erasing e = {
		.slot = slot,
		.first = ULONG_MAX,
		.exited = !atomic_read(&slot->mm->mm_users),
	};
	unsigned long vpn = e.exited ? slot->forgotten : 0;
	bool more = true;
	unsigned int n;

	lockdep_assert_held(&sp_mutex);
	while (*budget && more) {
		n = sp_forget_merged(&e, &vpn, &more);
		*budget -= min(n, *budget);
		cond_resched();
	}
	if (e.exited)
		slot->forgotten = vpn;
	if (more)
		return false;
	return sp_erase_some(slot, budget);
}

/**
 * sp_forget_all - forget every page of a slot at once
 * @slot: the cursor's slot: its mm exited or has nothing mergeable left,
 *        or run=2 is unmerging everything. __ksm_exit() leaves it to
 *        ksmd.
 *
 * As sp_forget() over the whole address space, but at the cost of
 * sp_forget_some(): a batch at a time with a chance to reschedule
 * between, and never with interrupts off, however large the mm.
 */
void sp_forget_all(struct sp_slot *slot)
{
	unsigned int budget = UINT_MAX;

	while (!sp_forget_some(slot, &budget))
		budget = UINT_MAX;
}

/* Free @node if its folio has gone. */
static void sp_drop_if_stale(struct sp_knode *node)
{
	struct folio *folio = sp_node_folio(node, false);

	if (folio)
		folio_put(folio);
}

/**
 * sp_release_orphan - let go of a KSM page that no sharer maps any more
 * @node: a node of the stable index; the caller holds sp_mutex
 *
 * A node is left without sharers but in the index when its last sharer
 * went while its folio was still mapped, or when a merge was undone; this
 * frees it once nothing maps the folio (see sp_orphan_go()).
 */
void sp_release_orphan(struct sp_knode *node)
{
	struct folio *folio;

	lockdep_assert_held(&sp_mutex);
	if (node->nr_sharers)
		return;
	folio = sp_node_folio(node, true);	/* frees the node if stale */
	if (!folio)
		return;
	sp_orphan_go(node, folio);
	folio_unlock(folio);
	folio_put(folio);
}

/*
 * Stale nodes, whose folio went (every mapping copied or unmapped before
 * ksmd saw it), go when a lookup or the walk meets them, and otherwise by
 * this sweep: with each batch, as many nodes as pages_to_scan, so a round
 * of the stable table takes about as long as a pass over the pages, and
 * costs no batch more than its pages do. A new round starts no sooner
 * than stable_node_chains_prune_millisecs after the last one, so that
 * the counts of chains and dups follow live pages within that time on a
 * table that one batch covers.
 */
static unsigned long sp_next_sweep;

/**
 * sp_sweep - look for stale nodes, after a batch
 * @budget: how many nodes to look at
 */
void sp_sweep(unsigned int budget)
{
	lockdep_assert_held(&sp_mutex);
	if (time_before(jiffies, sp_next_sweep))
		return;
	if (sp_stable_sweep(&sp_stable, budget, sp_drop_if_stale))
		sp_next_sweep = jiffies +
				msecs_to_jiffies(READ_ONCE(sp_chains_prune_ms));
}

#ifdef CONFIG_KSM_KNODE_KUNIT_TEST
#include "tests/knode-kunit.h"
#endif
