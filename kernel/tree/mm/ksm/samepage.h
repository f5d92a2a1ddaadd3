/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel samepage merging: the interfaces between the files of mm/ksm/.
 */

/**
 * DOC: Overview
 *
 * KSM merges anonymous pages of equal content, in the areas registered
 * with madvise(MADV_MERGEABLE) or prctl(PR_SET_MEMORY_MERGE), into one
 * write-protected page, the KSM page; a write to it takes a private copy
 * (copy on write). The kernel thread ksmd finds such pages: it walks the
 * registered mms pages_to_scan pages a batch, and a walk over every mm is
 * a pass.
 *
 * Every registered mm has a &struct sp_slot. Its xarray of pages, indexed
 * by virtual page number, holds what ksmd knows of each page it has seen
 * there: either an xarray value entry, a "state word" holding the content
 * hash seen at the last visit and a few flags, or a pointer to the
 * &struct sp_knode of the KSM page the page is mapped to. So a page that
 * is tracked but not merged costs one xarray slot and nothing else.
 *
 * A KSM page is a write-protected anonymous folio whose ->mapping points
 * to its &struct sp_knode, with PAGE_MAPPING_KSM set. The node keeps an
 * array of &struct sp_sharer, sixteen bytes for each mapping that ksmd set
 * up or found, hashed by where the mapping is, which is where rmap walks
 * look for the mappings. The node sits in the stable table (&struct
 * sp_stable_table): buckets by its key, the keyed hash of its content
 * salted by its merge domain, each bucket a tree ordered by key, domain
 * and content, so that a lookup costs O(log n) compares however the keys
 * collide. Further KSM pages of one content hang
 * on the first as its dups.
 *
 * Candidates are pages whose hash did not change between two visits; they
 * go into the candidate table (&struct sp_cand_table), an open-addressed
 * array of entries (slot id, virtual page number, hash bits) emptied by
 * epoch at the start of every pass. A hit is checked against the state
 * word of the page it names, and then the two pages are compared in full,
 * write-protected, before anything is merged. The hash only chooses what
 * to compare: a wrong guess costs time, never content.
 *
 * The files, from the bottom of the call graph up: each calls only into
 * files above it in this list, and its header says which.
 *
 * - core.c: the state every file shares: the tunables, the locks, the
 *   counters, the slab caches, the registry of slots and ksmd's cursor.
 * - rmap.c: the folio of a node, and what the rest of mm asks of a KSM
 *   folio: rmap walks, migration, swap-in, memory failure.
 * - index.c: the keyed page hash, the page compare, and both tables.
 * - advisor.c: the scan-time advisor, which retunes pages_to_scan.
 * - pressure.c: how short of memory an mm is, for pressure_only.
 * - thp.c: when a large folio is worth splitting to merge its pages,
 *   and splitting what a pass left of THPs merged in part.
 * - walk.c: finding the next pages to visit, a page table at a time.
 * - domain.c: merge domains, which decide which mms' pages may share.
 * - fresh.c: the pool of frames for new KSM pages (use_fresh_pages).
 * - knode.c: the entries of the slots' xarrays, the sharers of a node,
 *   and the life of a node.
 * - merge.c: write-protecting, merging and unsharing pages.
 * - estimate.c: counting what merging would save, merging nothing.
 * - hotplug.c: dropping the nodes of memory that goes offline.
 * - visit.c: the visit of each page, the per-page state machine.
 * - request.c: merging a range now, in the caller's context (MADV_MERGE).
 * - ksmd.c: the thread, its passes and batches, and unmerging everything.
 * - sysfs.c: /sys/kernel/mm/ksm and the profit in /proc/PID/ksm_stat.
 * - register.c: the entry points that register mms (madvise, prctl,
 *   fork, exit), and boot.
 *
 * notifier_test.c, a test driver for change_pte, stands apart.
 */

/**
 * DOC: Locking
 *
 * - sp_mutex: held by ksmd while it scans, by run=2's unmerge of
 *   everything (which unshares an mm without it and lets go of it
 *   between budgets of entries forgotten), and by a sysfs store
 *   that needs the index empty or ksmd still. It protects both tables,
 *   the counters in &struct sp_stats, the entries of every slot's xarray
 *   (the xarray's own lock only makes each store atomic for the readers
 *   of /proc) and the existence of sharers.
 *   It is taken before any mmap_lock, folio lock or PTE lock. Functions
 *   that rely on it say so with lockdep_assert_held().
 * - sp_slots_lock: a spinlock for the list of slots and the table of
 *   slots by mm, and for &sp_cursor.slot, which ksmd changes holding both
 *   locks and which __ksm_enter() and __ksm_exit() read holding this one.
 * - sp_slot_ids: the xarray of slot ids has its own lock. An id is erased
 *   when its slot is unregistered, after every sharer that names it was
 *   dropped; so a sharer's id names a live slot while the sharer exists,
 *   which sp_mutex or the KSM folio's lock guarantees.
 * - The KSM folio's lock: a node's sharer array changes (and moves, when
 *   it grows or shrinks) only with its KSM folio locked, or once the folio
 *   is gone; rmap walks hold the folio lock and rely on it.
 * - sp_pool_lock (fresh.c): a spinlock for the slots of the fresh-page
 *   pool, taken inside a pool frame's folio lock, which migration holds.
 */

/**
 * DOC: Naming
 *
 * Everything of mm/ksm/ that is not part of include/linux/ksm.h starts
 * with sp_ ("samepage"). Words used in one sense only: a *slot* is a
 * registered mm; a *node* is a &struct sp_knode, never a NUMA node, which
 * is a *nid*; a *sharer* is one mapping of a KSM page known to its node;
 * a *vpn* is a virtual page number; a *loc* is a slot id and a vpn packed
 * in one u64 (sp_loc()); an *entry* is what a slot's xarray holds for a
 * page, and a *state word* (*st*) is an entry that is an xarray value; a
 * *key* is a content hash XORed with a merge domain's salt.
 */
#ifndef _MM_KSM_SAMEPAGE_H
#define _MM_KSM_SAMEPAGE_H

#include <linux/ksm.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/rbtree.h>
#include <linux/rhashtable-types.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>

#define SP_RUN_STOP	0
#define SP_RUN_MERGE	1
#define SP_RUN_UNMERGE	2

/*
 * Slot ids, in candidate entries and sharers (see sp_loc()): 2^28, 64
 * times PID_MAX_LIMIT, so more than a host can have mms. An mm whose id
 * could not be allocated is scanned, and its all-zero pages may become
 * the zero page, but its pages merge with no other.
 */
#define SP_SLOT_ID_BITS	28
#define SP_SLOT_ID_MAX	((1U << SP_SLOT_ID_BITS) - 1)

/**
 * struct sp_slot - a registered mm
 * @list: on sp_slots, in scan order; under sp_slots_lock
 * @hnode: in the table of slots by mm (core.c); under sp_slots_lock
 * @mm: the mm, mmgrab()bed while the slot lives
 * @pages: vpn -> entry (a state word, or the &struct sp_knode of the KSM
 *	page mapped there, marked as such: knode.c); the entries are ksmd's,
 *	under sp_mutex
 * @cands: how many entries of @pages are candidates; under sp_mutex
 * @forgotten: once the mm has exited, the vpn below which the merged
 *	pages had their sharers dropped, their entries left for the erase
 *	of @pages (knode.c); under sp_mutex
 * @id: the slot's id in sp_slot_ids, which candidate entries and sharers
 *	name; 0 if none could be had (the mm's pages then merge with none)
 * @uid: the effective uid of the task that registered the mm
 * @salt: keyed hash of @dom, XORed into the keys of the mm's pages;
 *	ksmd's, under sp_mutex
 * @seq: registration number, never reused (the "process" domain)
 * @dom: the mm's merge domain in this pass; ksmd's, under sp_mutex
 * @gen: bumped by every change to @pages but a visit's to its own page's
 *	entry, so that what a walk read of its pages' entries holds while
 *	@gen stays (&struct sp_found); under sp_mutex
 * @visiting: the vpn sp_visit() is at, plus one; 0 between visits; under
 *	sp_mutex
 * @est: under estimate, the mm's pages that a merge would map to a KSM
 *	page or the zero page, counted by the passes numbered @est_pass,
 *	two passes in turn by parity (estimate.c); written by ksmd under
 *	sp_mutex, read without it
 * @est_pass: the pass each of @est counts
 * @objcg: under hide_merges, the memory cgroup that the mm's mappings of
 *	KSM pages are charged to, a page each (fresh.c), taken at the first
 *	charge and kept while the slot lives; under sp_mutex
 *
 * A slot lives from the mm's first request to merge until ksmd finds the
 * mm exited or without a mergeable VMA, or __ksm_exit() finds nothing of
 * it to clean up.
 */
struct sp_slot {
	struct list_head list;
	struct rhash_head hnode;
	struct mm_struct *mm;
	struct xarray pages;
	unsigned long cands;
	unsigned long forgotten;
	unsigned int id;
	kuid_t uid;
	u32 salt;
	u64 seq;
	u64 dom;
	unsigned long gen;
	unsigned long visiting;
	unsigned long est[2];
	unsigned long est_pass[2];
	struct obj_cgroup *objcg;
};

/**
 * enum sp_kn_place - where a node is in the stable table (index.c)
 * @SP_KN_NONE: not in the table
 * @SP_KN_HEAD: in its bucket's tree
 * @SP_KN_DUP: on the list of dups of the head of its content
 * @SP_KN_STALE: taken out of the table by a lookup that found its folio
 *	gone, on the table's list of stale nodes until sp_knode_reap()
 */
enum sp_kn_place {
	SP_KN_NONE,
	SP_KN_HEAD,
	SP_KN_DUP,
	SP_KN_STALE,
};

/**
 * struct sp_knode - a KSM page
 * @rb: a head's place in its bucket's tree
 * @dup: a dup's place on its head's @dups, a stale node's on the table's
 *	list of stale nodes
 * @head: a dup's head
 * @dups: a head's dups: further KSM pages of the same content
 * @sharers: the mappings known to ksmd, @nr_sharers of them, in a table
 *	of @cap entries hashed by loc (knode.c); sp_sharer_next()
 * @kpfn: the pfn of the KSM folio; folio_migrate_ksm() moves it
 * @key: the index key, the content hash XORed with the domain's salt
 * @dom: the merge domain of every sharer the page took
 * @nid: the NUMA node of the folio; folio_migrate_ksm() moves it
 * @nr_sharers: entries used in @sharers
 * @cap: entries allocated in @sharers, a power of two
 * @place: an enum sp_kn_place
 *
 * The folio's ->mapping points to the node. Everything but @kpfn and @nid
 * is ksmd's, under sp_mutex; @sharers changes only with the folio locked.
 */
struct sp_knode {
	union {
		struct rb_node rb;
		struct {
			struct hlist_node dup;
			struct sp_knode *head;
		};
	};
	struct hlist_head dups;
	struct sp_sharer *sharers;
	unsigned long kpfn;
	u64 key;
	u64 dom;
	int nid;
	unsigned int nr_sharers;
	unsigned int cap;
	u8 place;
};

/**
 * struct sp_sharer - one mapping of a KSM page, in its node's array
 * @loc: where the mapping is: its slot id and virtual page number, in
 *	one u64; see sp_loc()
 * @av: the anon_vma of the mapping's VMA, referenced, where rmap walks
 *	start; SP_SHARER_LINEAR set in bit 0 when the page's linear index
 *	in its VMA (linear_page_index()) was its virtual page number, as
 *	it is in every anonymous VMA that mremap() never moved
 *
 * A linear sharer's rmap walks look up only the VMAs whose range of
 * linear indexes holds the page's, and find the page in each from that
 * index, wherever mremap() has moved the VMA since; another's visit every
 * VMA of its anon_vma for the ones that hold its address.
 */
struct sp_sharer {
	u64 loc;
	unsigned long av;
};

#define SP_SHARER_LINEAR	1UL
/* The mapping is charged to its slot's memory cgroup (hide_merges). */
#define SP_SHARER_CHARGED	2UL
#define SP_SHARER_FLAGS		(SP_SHARER_LINEAR | SP_SHARER_CHARGED)

static inline struct anon_vma *sp_sharer_av(const struct sp_sharer *sh)
{
	return (struct anon_vma *)(sh->av & ~SP_SHARER_FLAGS);
}

static inline bool sp_sharer_linear(const struct sp_sharer *sh)
{
	return sh->av & SP_SHARER_LINEAR;
}

/*
 * The first sharer of @node at or after entry @sh of its table, or NULL;
 * an empty entry has loc 0. A walk of every sharer goes
 * for (sh = sp_sharer_next(node, node->sharers); sh;
 *      sh = sp_sharer_next(node, sh + 1))
 * under the node's folio lock, or sp_mutex once the folio is gone.
 */
static inline struct sp_sharer *sp_sharer_next(struct sp_knode *node,
					       struct sp_sharer *sh)
{
	for (; sh < node->sharers + node->cap; sh++)
		if (sh->loc)
			return sh;
	return NULL;
}

/*
 * A loc is a slot id and a virtual page number in one u64, in one of two
 * layouts. The narrow one, bit 63 clear, holds the id in its low
 * SP_SLOT_ID_BITS bits and a page number below 2^35 above them: every
 * address of 4-level paging, and every one of 5-level paging that a
 * process did not ask to be above 2^47. The wide one, bit 63 set, holds
 * any user page number of 5-level paging (44 bits) above an id of
 * SP_LOC_WIDE_ID_BITS bits. Only an mm past 2^19 registered ones, with
 * mergeable memory above 2^47, has a page that neither holds: that page
 * is scanned but merges with none. A loc is never 0 (ids start at 1).
 */
#define SP_LOC_WIDE		BIT_ULL(63)
#define SP_LOC_VPN_BITS		(63 - SP_SLOT_ID_BITS)
#define SP_LOC_WIDE_ID_BITS	19
#define SP_LOC_WIDE_VPN_BITS	(63 - SP_LOC_WIDE_ID_BITS)

/*
 * The loc of page @vpn of the slot of id @id; 0 when neither layout holds
 * it, or the slot has no id.
 */
static inline u64 sp_loc(unsigned int id, unsigned long vpn)
{
	u64 v = vpn;

	if (!id)
		return 0;
	if (id <= SP_SLOT_ID_MAX && !(v >> SP_LOC_VPN_BITS))
		return v << SP_SLOT_ID_BITS | id;
	if (!(id >> SP_LOC_WIDE_ID_BITS) && !(v >> SP_LOC_WIDE_VPN_BITS))
		return SP_LOC_WIDE | v << SP_LOC_WIDE_ID_BITS | id;
	return 0;
}

static inline unsigned int sp_loc_id(u64 loc)
{
	if (loc & SP_LOC_WIDE)
		return loc & (BIT(SP_LOC_WIDE_ID_BITS) - 1);
	return loc & SP_SLOT_ID_MAX;
}

static inline unsigned long sp_loc_vpn(u64 loc)
{
	if (loc & SP_LOC_WIDE)
		return (loc & ~SP_LOC_WIDE) >> SP_LOC_WIDE_ID_BITS;
	return loc >> SP_SLOT_ID_BITS;
}

static inline unsigned long sp_loc_addr(u64 loc)
{
	return sp_loc_vpn(loc) << PAGE_SHIFT;
}

/*
 * The state word of a tracked page that is not merged, stored as an xarray
 * value: the content hash at the last visit, whether it was counted as
 * unshared (a candidate), whether ksmd had cleaned the page's PTE when it
 * took that hash (walk.c), its smart-scan age and remaining skips, and what
 * decides when the walk protects it: the visits in a row it held still,
 * and its protection back-off (walk.c, DOC: Protecting pages).
 *
 * An xarray value holds BITS_PER_LONG - 1 bits: on 64-bit the word keeps
 * 46 bits of the hash, on 32-bit 14. The hash serves as a shortcut only:
 * it picks the candidates to compare and tells a changed page from an
 * unchanged one, and every merge is confirmed by comparing the pages in
 * full under write protection. So the fewer bits of 32-bit cost it extra
 * compares, never content.
 */
#define SP_ST_HASH_BITS		(BITS_PER_LONG - 18)
#define SP_ST_HASH_MASK		GENMASK_ULL(SP_ST_HASH_BITS - 1, 0)
#define SP_ST_CAND		BIT(SP_ST_HASH_BITS)
#define SP_ST_WP		BIT(SP_ST_HASH_BITS + 1)
#define SP_ST_AGE_SHIFT		(SP_ST_HASH_BITS + 2)
#define SP_ST_AGE_BITS		4
#define SP_ST_SKIP_SHIFT	(SP_ST_AGE_SHIFT + SP_ST_AGE_BITS)
#define SP_ST_SKIP_BITS		4
#define SP_ST_STILL_SHIFT	(SP_ST_SKIP_SHIFT + SP_ST_SKIP_BITS)
#define SP_ST_STILL_BITS	4
#define SP_ST_STILL_MAX		GENMASK(SP_ST_STILL_BITS - 1, 0)
#define SP_ST_LEVEL_SHIFT	(SP_ST_STILL_SHIFT + SP_ST_STILL_BITS)
#define SP_ST_LEVEL_BITS	2
#define SP_ST_LEVEL_MAX		GENMASK(SP_ST_LEVEL_BITS - 1, 0)
/*
 * The hash of a state word whose page was not read at its last visit, the
 * walk having found it written since it was cleaned (visit.c). No page
 * hashes to it (sp_hash_page()).
 */
#define SP_HASH_NONE		0
/* Under estimate: a candidate that a later page of this pass matched. */
#define SP_ST_MATCHED		BIT(SP_ST_LEVEL_SHIFT + SP_ST_LEVEL_BITS)
static_assert(SP_ST_LEVEL_SHIFT + SP_ST_LEVEL_BITS + 1 <= BITS_PER_LONG - 1);
/* What a visit carries over from the word before it. */
#define SP_ST_CARRY		(SP_ST_WP | \
				 GENMASK(SP_ST_LEVEL_SHIFT + \
					 SP_ST_LEVEL_BITS - 1, \
					 SP_ST_STILL_SHIFT))

/*
 * The hash ksmd indexes pages by: on 64-bit the 46 bits a state word
 * keeps, so that a page known not to have changed is looked up by its
 * state word without being read again (walk.c); among 2^30 pages that
 * leaves about eight thousand pairs of unequal pages sharing a hash, each
 * costing a compare. On 32-bit the state word keeps too few bits for
 * that, so every visit reads the page and the index keeps all 64 bits.
 */
#ifdef CONFIG_64BIT
#define SP_CLEAN_SKIP		true
#define SP_HASH_MASK		SP_ST_HASH_MASK
#else
#define SP_CLEAN_SKIP		false
#define SP_HASH_MASK		U64_MAX
#endif

static inline unsigned long sp_st_make(u64 hash, bool cand, unsigned int age,
				       unsigned int skip)
{
	return (unsigned long)(hash & SP_ST_HASH_MASK) |
	       (cand ? SP_ST_CAND : 0) |
	       ((unsigned long)age << SP_ST_AGE_SHIFT) |
	       ((unsigned long)skip << SP_ST_SKIP_SHIFT);
}

/* The bits of the hash that state word @st keeps. */
static inline u64 sp_st_hash(unsigned long st)
{
	return st & SP_ST_HASH_MASK;
}

/* Could a page of hash @hash be the one state word @st saw? */
static inline bool sp_st_hash_is(unsigned long st, u64 hash)
{
	return sp_st_hash(st) == (hash & SP_ST_HASH_MASK);
}

static inline bool sp_st_cand(unsigned long st)
{
	return st & SP_ST_CAND;
}

/* Was the page write-protected by ksmd, and clean, when its hash was taken? */
static inline bool sp_st_wp(unsigned long st)
{
	return st & SP_ST_WP;
}

static inline unsigned long sp_st_set_wp(unsigned long st, bool wp)
{
	return wp ? st | SP_ST_WP : st & ~SP_ST_WP;
}

/* A field of @max << @shift in a state word, and setting it, capped. */
static inline unsigned int sp_st_field(unsigned long st, unsigned int shift,
				       unsigned int max)
{
	return (st >> shift) & max;
}

static inline unsigned long sp_st_set_field(unsigned long st,
					    unsigned int shift,
					    unsigned int max, unsigned int v)
{
	st &= ~((unsigned long)max << shift);
	return st | (unsigned long)min(v, max) << shift;
}

static inline unsigned int sp_st_age(unsigned long st)
{
	return sp_st_field(st, SP_ST_AGE_SHIFT, GENMASK(SP_ST_AGE_BITS - 1, 0));
}

static inline unsigned int sp_st_skip(unsigned long st)
{
	return sp_st_field(st, SP_ST_SKIP_SHIFT,
			   GENMASK(SP_ST_SKIP_BITS - 1, 0));
}

/* Visits in a row at which the page was found unchanged, up to 15. */
static inline unsigned int sp_st_still(unsigned long st)
{
	return sp_st_field(st, SP_ST_STILL_SHIFT, SP_ST_STILL_MAX);
}

static inline unsigned long sp_st_set_still(unsigned long st,
					    unsigned int still)
{
	return sp_st_set_field(st, SP_ST_STILL_SHIFT, SP_ST_STILL_MAX, still);
}

/* Protection back-off: each level doubles the wait; the last never. */
static inline unsigned int sp_st_level(unsigned long st)
{
	return sp_st_field(st, SP_ST_LEVEL_SHIFT, SP_ST_LEVEL_MAX);
}

static inline unsigned long sp_st_set_level(unsigned long st,
					    unsigned int level)
{
	return sp_st_set_field(st, SP_ST_LEVEL_SHIFT, SP_ST_LEVEL_MAX, level);
}

/* Tunables (sysfs.c writes them; READ_ONCE where ksmd reads them). */
extern unsigned long sp_run;
extern unsigned int sp_pages_to_scan;
extern unsigned int sp_sleep_ms;
extern unsigned int sp_max_page_sharing;
extern bool sp_merge_across_nodes;
extern bool sp_use_zero_pages;
extern bool sp_zero_pages_only;
extern bool sp_estimate;

/*
 * Whether a page may share a KSM page on another NUMA node: not under
 * hide_merges, since a process learns which node its page is on
 * (move_pages(2), get_mempolicy(2), numa_maps), and a page that joined
 * another's KSM page would show that one's node.
 */
static inline bool sp_across_nodes(void)
{
	return READ_ONCE(sp_merge_across_nodes) && !READ_ONCE(ksm_hide_merges);
}
extern bool sp_pressure_only;
extern bool sp_smart_scan;
extern unsigned int sp_protect_after;
extern unsigned int sp_thp_split_min;
extern unsigned int sp_chains_prune_ms;
extern unsigned long sp_max_kernel_pages;

/*
 * Protection (walk.c, DOC: Protecting pages): visits a protected page must
 * stay unwritten to repay the fault its next write takes, and the still
 * visits a page waits for at back-off @level before it is protected (0:
 * never). The wait stops short of what a state word can count beyond it.
 */
#define SP_PROTECT_PAYBACK	4
#define SP_PROTECT_AFTER_MAX	8

static inline unsigned int sp_protect_wait(unsigned int level)
{
	unsigned int after = READ_ONCE(sp_protect_after);

	if (level == SP_ST_LEVEL_MAX)
		return 0;
	return min_t(unsigned int, after << level,
		     SP_ST_STILL_MAX - SP_PROTECT_PAYBACK - 1);
}

/*
 * May writes to the pages of @mm be told by their PTEs' dirty bits alone,
 * the PTEs left writable (walk.c, DOC: Clean pages)? Not once a secondary
 * MMU is registered: KVM writes through page tables of its own, which
 * set no dirty bit in the mm's.
 */
static inline bool sp_dirty_tracks(struct mm_struct *mm)
{
	return !mm_has_notifiers(mm);
}

/*
 * Is a page of state word @st due to be protected? Not one protected
 * already, nor one at the last back-off level.
 */
static inline bool sp_protect_due(unsigned long st)
{
	unsigned int after = sp_protect_wait(sp_st_level(st));

	return after && !sp_st_wp(st) && sp_st_still(st) >= after;
}

/* pressure.c: pressure_only, scanning while memory is short. */
extern unsigned int sp_pressure_level;
unsigned int sp_pressure_budget(unsigned int pages, struct sp_slot *slot);
bool sp_pressure_skips(struct mm_struct *mm);
unsigned int sp_pressure_idle_ms(unsigned int ms);

/* thp.c: all under sp_mutex. Largest thp_split_min: every page of a THP. */
#define SP_THP_SPLIT_MAX	512
bool sp_thp_worth_split(struct folio *folio, bool match);
void sp_thp_mapped_in_part(struct folio *folio);
void sp_thp_offline(unsigned long start, unsigned long end);
void sp_thp_pass_end(void);
bool sp_thp_split_next(void);
void sp_thp_forget(void);

/* advisor.c: the scan-time advisor and its tunables. */
extern bool sp_advisor_on;
extern unsigned int sp_advisor_max_cpu;
extern unsigned long sp_advisor_min_pages_to_scan;
extern unsigned long sp_advisor_max_pages_to_scan;
extern unsigned long sp_advisor_target_scan_time;
void sp_advisor_defaults(void);
void sp_advisor_pass_begin(void);
void sp_advisor_pass_end(void);

/**
 * struct sp_stats - the counters sysfs shows
 * @shared: KSM pages with a sharer (pages_shared)
 * @sharing: further sharers of those (pages_sharing)
 * @unshared: candidates (pages_unshared)
 * @tracked: entries in all slots' xarrays
 * @scanned: pages visited, ever (pages_scanned)
 * @skipped: visits smart scan skipped (pages_skipped)
 * @full_scans: passes completed (full_scans)
 * @thp_split: large folios split to merge their pages (huge_pages_split)
 * @thp_kept: large folios with matches that the last pass kept whole
 *	(huge_pages_kept)
 *
 * Written under sp_mutex; sysfs reads them without it.
 */
struct sp_stats {
	unsigned long shared;
	unsigned long sharing;
	unsigned long unshared;
	unsigned long tracked;
	unsigned long scanned;
	unsigned long skipped;
	unsigned long full_scans;
	unsigned long thp_split;
	unsigned long thp_kept;
};

extern struct sp_stats sp_stats;
extern struct mutex sp_mutex;
extern wait_queue_head_t sp_thread_wait;

/* core.c */
extern spinlock_t sp_slots_lock;
extern struct list_head sp_slots;
extern struct xarray sp_slot_ids;
extern struct kmem_cache *sp_node_cache;
int sp_core_init(void);
void sp_core_exit(void);
struct sp_slot *sp_slot_alloc(struct mm_struct *mm);
struct sp_slot *sp_slot_of(struct mm_struct *mm);
int sp_slot_link(struct sp_slot *slot, struct list_head *before);
void sp_slot_unlink(struct sp_slot *slot);
void sp_slot_discard(struct sp_slot *slot);
void sp_slot_free(struct sp_slot *slot);
struct mm_struct *sp_slot_get(unsigned int id, const struct sp_slot *of,
			      struct sp_slot **t, bool *other);

/*
 * The slot of a sharer's mm. A linked sharer's slot lives until the
 * sharer is unlinked (see DOC: Locking).
 */
static inline struct sp_slot *sp_sharer_slot(const struct sp_sharer *sh)
{
	return xa_load(&sp_slot_ids, sp_loc_id(sh->loc));
}

/**
 * struct sp_cursor - where ksmd is (core.c)
 * @slot: the slot it scans, NULL between passes; written with sp_mutex
 *	and sp_slots_lock held, read with either
 * @addr: the next address to look at in @slot's mm; under sp_mutex
 * @saw_vma: whether this pass found a mergeable VMA in @slot's mm; under
 *	sp_mutex
 * @thp_cleaned: 1 + the address of the THP in @slot's mm whose dirty PMD
 *	this pass cleaned, or 0; under sp_mutex (walk.c)
 */
struct sp_cursor {
	struct sp_slot *slot;
	unsigned long addr;
	bool saw_vma;
	unsigned long thp_cleaned;
};

extern struct sp_cursor sp_cur;

/* ksmd.c */
int sp_scan_init(void);
void sp_scan_exit(void);
int sp_unmerge_all(void);

/* walk.c: pages found by one walk of the cursor's mm, in address order. */
#define SP_GATHER	64

/* What the walk learnt of a page it found (sp_found.how). */
#define SP_FOUND_CLEAN	BIT(0)	/* not written since its hash: no read */
#define SP_FOUND_WP	BIT(1)	/* write-protected and clean: hash it now */
#define SP_FOUND_WANT	BIT(2)	/* the walk's own: to write-protect */
#define SP_FOUND_UNSURE	BIT(3)	/* written since hashed protected */
#define SP_FOUND_MERGED	BIT(4)	/* maps its KSM page, as recorded: no page */
#define SP_FOUND_AWAY	BIT(5)	/* under migration: keep its entry; no page */
#define SP_FOUND_SOFT	BIT(7)	/* watched by the dirty bit, not protected */
#define SP_FOUND_COARSE	BIT(8)	/* its THP was written: no longer clean */
/* Not the walk's: how a merge on request visits every page (request.c). */
#define SP_FOUND_NOW	BIT(6)	/* merge now: no smart skip, no hash compare */

/**
 * struct sp_found - the pages one walk found, in address order
 * @slot: the slot whose mm the walk is in
 * @nr: pages found
 * @max: stop the walk at this many
 * @large: if set, every page found is of this large folio, and this one
 *	reference to it, taken by the walk, stands for all of them (see
 *	sp_found_split())
 * @thp_cleaned: NULL, or where the walk is ksmd's: the address of the
 *	THP whose dirty PMD this pass cleaned (walk.c, DOC: Clean huge pages)
 * @page: the pages, each referenced unless @large; NULL for
 *	SP_FOUND_MERGED and SP_FOUND_AWAY
 * @addr: their addresses
 * @how: SP_FOUND_* flags: what the walk learnt of each
 * @entry: the entry of each in @slot's xarray, as the walk read it
 * @gen: @slot->gen when the entries were read: while it stays, they are
 *	the entries now
 */
struct sp_found {
	struct sp_slot *slot;
	unsigned int nr;
	unsigned int max;
	struct folio *large;
	unsigned long *thp_cleaned;
	struct page *page[SP_GATHER];
	unsigned long addr[SP_GATHER];
	u16 how[SP_GATHER];
	void *entry[SP_GATHER];
	unsigned long gen;
};

bool sp_find_in_mm(struct mm_struct *mm, unsigned long from,
		   unsigned long to, struct sp_found *f);
void sp_found_trim(struct sp_found *f, unsigned int i);

/**
 * sp_found_put - let go of the @i-th page found, once visited
 * @f: the pages found
 * @i: which
 *
 * The pages of @f->large keep their shared reference until the last of
 * them is let go (sp_found_trim()) or one is split (sp_found_split()).
 */
static inline void sp_found_put(struct sp_found *f, unsigned int i)
{
	if (f->page[i] && !f->large)
		put_page(f->page[i]);
	f->page[i] = NULL;
}

/*
 * The entry of the @i-th page found, if nothing but the visits of the
 * pages before it changed it since the walk read it: NULL if it may have
 * changed, for the visit to look it up again.
 */
static inline void **sp_found_entry(struct sp_found *f, unsigned int i)
{
	return f->gen == f->slot->gen ? &f->entry[i] : NULL;
}

/* Every page found was let go with sp_found_put(): empty @f. */
static inline void sp_found_done(struct sp_found *f)
{
	f->nr = 0;
	if (f->large) {
		folio_put(f->large);
		f->large = NULL;
	}
}

/**
 * sp_found_split - whether visiting the @i-th page split its huge page
 * @f: the pages found
 * @i: the page just visited
 * @splits: huge_pages_split before the visit
 *
 * A visit that merged a page of @f->large split it first: its folio
 * (split_huge_page(), which leaves ksmd's reference with the @i-th page),
 * or the PMD that mapped it (merge.c). After a folio split the reference
 * is let go here, with the @i-th page, and the pages after it are no
 * longer held; either way @f ends at the @i-th.
 *
 * The pages before the @i-th were visited while the page was huge, and
 * those that had an equal page were refused a merge then (thp.c): the
 * walk takes up again at the first of them, to visit them as the pages
 * of a split mapping they are now. That is once a split.
 *
 * Return: where a later walk takes up again, or 0 for after @f.
 */
static inline unsigned long sp_found_split(struct sp_found *f,
					   unsigned int i,
					   unsigned long splits)
{
	struct page *page = f->page[i];
	unsigned long next;
	bool split;

	if (likely(!f->large))
		return 0;
	/*
	 * Told by the page visited, which the reference keeps: a folio
	 * split may have freed the head of @f->large already.
	 */
	split = page && !folio_test_large(page_folio(page));
	/* Nothing was refused before a PMD split at the first page. */
	if (!split && (splits == sp_stats.thp_split || !i))
		return 0;
	if (i)
		next = f->addr[0];
	else
		next = f->nr > 1 ? f->addr[1] : 0;
	if (split) {
		put_page(page);
		f->large = NULL;
	}
	f->page[i] = NULL;
	f->nr = i + 1;
	return next;
}

/* visit.c */
bool sp_visit(struct sp_slot *slot, unsigned long addr, struct page *page,
	      unsigned int how, void **known);
void sp_unvisited(struct sp_slot *slot, unsigned long addr, unsigned int how);
bool sp_cand_key_of(u64 loc, u64 *key);

/* knode.c: all under sp_mutex, but the first. */
void sp_knode_init(void);
bool sp_entry_set(struct sp_slot *slot, unsigned long vpn, void *new);
void sp_set_state(struct sp_slot *slot, unsigned long vpn, unsigned long st);
bool sp_sharers_init(struct sp_knode *node, unsigned int cap);
bool sp_sharer_link(struct sp_knode *node, struct sp_slot *slot,
		    unsigned long addr, struct anon_vma *av, pgoff_t pgoff);
void sp_sharer_drop(struct sp_knode *node, struct sp_slot *slot,
		    unsigned long vpn);
unsigned long sp_forget(struct sp_slot *slot, unsigned long from,
			unsigned long to, unsigned int *budget);
bool sp_forget_some(struct sp_slot *slot, unsigned int *budget);
void sp_forget_all(struct sp_slot *slot);
void sp_release_orphan(struct sp_knode *node);
void sp_knode_free(struct sp_knode *node);
struct folio *sp_node_folio(struct sp_knode *node, bool lock);
void sp_knode_reap(void);
void sp_sweep(unsigned int budget);

/* index.c */
u64 sp_hash_page(struct page *page);
int sp_page_cmp(struct page *a, struct page *b);
/* The hash of an all-zero page. */
extern u64 sp_zero_hash;

/* The passes a merge on request's candidate is good for (index.c). */
#define SP_CE_LASTS	16

/**
 * struct sp_cand_table - this pass's candidates, by hash (index.c)
 * @locs: the loc of each entry (sp_loc())
 * @marks: the last epoch each entry is good for, and some hash bits; an
 *	entry of a past epoch is empty
 * @bits: log2 of the number of entries
 * @epoch: this pass's epoch; 0 before the first pass
 * @used: entries of live epochs
 * @want: this pass's lookups and new entries, which size the next table
 * @lasting: entries that a merge on request added, by the last epoch
 *	they are good for, modulo SP_CE_LASTS; none is good past that
 *
 * ksmd's, under sp_mutex.
 */
struct sp_cand_table {
	u64 *locs;
	u16 *marks;
	unsigned int bits;
	u16 epoch;
	unsigned long used;
	unsigned long want;
	unsigned long lasting[SP_CE_LASTS];
};

/**
 * struct sp_probe - a lookup in the candidate table in progress
 * @t: the table
 * @pos: the entry the probe sequence is at
 * @seen: entries probed so far, which the probe limit bounds
 * @hash: the hash looked up
 */
struct sp_probe {
	struct sp_cand_table *t;
	unsigned long pos;
	unsigned int seen;
	u64 hash;
};

void sp_cand_reset(struct sp_cand_table *t);
bool sp_cand_grow(struct sp_cand_table *t, unsigned long n,
		  struct sp_cand_table *old);
bool sp_cand_next(struct sp_cand_table *t, unsigned long *pos, u64 *loc,
		  unsigned int *until);
void sp_cand_place(struct sp_cand_table *t, u64 key, u64 loc,
		   unsigned int until);
void sp_cand_clear(struct sp_cand_table *t);
void sp_cand_free(struct sp_cand_table *t);
void sp_probe_start(struct sp_probe *p, struct sp_cand_table *t, u64 hash);
bool sp_probe_next(struct sp_probe *p, unsigned int *id, unsigned long *vpn);
void sp_probe_forget(struct sp_probe *p);
void sp_probe_renew(struct sp_probe *p, bool lasting);
bool sp_probe_insert(struct sp_probe *p, unsigned int id, unsigned long vpn,
		     bool lasting);

/**
 * struct sp_stable_table - the KSM pages, by key (index.c)
 * @buckets: the buckets, each a tree ordered by key, domain and content
 * @bits: log2 of the number of buckets
 * @nr: nodes in the table, heads and dups
 * @chains: heads with dups (stable_node_chains)
 * @dups: nodes of those chains (stable_node_dups)
 * @sweep: the next bucket sp_stable_sweep() looks at
 * @stale: nodes a walk found stale and took out, for sp_knode_reap()
 *
 * ksmd's, under sp_mutex.
 */
struct sp_stable_table {
	struct rb_root *buckets;
	unsigned int bits;
	unsigned long nr;
	unsigned long chains;
	unsigned long dups;
	unsigned long sweep;
	struct hlist_head stale;
};

int sp_stable_init(struct sp_stable_table *t, unsigned int bits);
void sp_stable_destroy(struct sp_stable_table *t);
struct sp_knode *sp_stable_find(struct sp_stable_table *t, u64 key, u64 dom,
				struct page *page);
void sp_stable_add(struct sp_stable_table *t, struct sp_knode *node,
		   struct page *kpage);
void sp_stable_del(struct sp_stable_table *t, struct sp_knode *node);
struct sp_knode *sp_stable_pop_stale(struct sp_stable_table *t);
void sp_stable_for_each(struct sp_stable_table *t,
			void (*fn)(struct sp_knode *node));
bool sp_stable_sweep(struct sp_stable_table *t, unsigned long budget,
		     void (*fn)(struct sp_knode *node));

extern struct sp_cand_table sp_cands;
extern struct sp_stable_table sp_stable;
int sp_index_init(void);
void sp_index_exit(void);
unsigned long sp_index_bytes(void);

/* hotplug.c: ranges of memory going offline, during which ksmd waits. */
#ifdef CONFIG_MEMORY_HOTREMOVE
extern atomic_t sp_offlining;
int sp_hotplug_init(void);
void sp_hotplug_exit(void);
#else
static inline int sp_hotplug_init(void)
{
	return 0;
}

static inline void sp_hotplug_exit(void)
{
}
#endif

static inline bool sp_offline_pending(void)
{
#ifdef CONFIG_MEMORY_HOTREMOVE
	return atomic_read(&sp_offlining);
#else
	return false;
#endif
}

/* domain.c: what a merge domain is (sysfs merge_domain). */
enum sp_dom_kind {
	SP_DOM_SYSTEM,
	SP_DOM_PROCESS,
	SP_DOM_CGROUP,
	SP_DOM_USER,
	SP_DOM_NR
};

extern unsigned int sp_dom_kind;
extern const char * const sp_dom_names[SP_DOM_NR];
void sp_domain_init(void);
void sp_domain_register(struct sp_slot *slot);
void sp_domain_enter(struct sp_slot *slot);
bool sp_domain_supported(unsigned int kind);
void sp_domain_set(unsigned int kind);

/* The index key of content hash @hash in @slot's domain. */
static inline u64 sp_key(struct sp_slot *slot, u64 hash)
{
	return hash ^ slot->salt;
}

/* estimate.c: estimate, counting what merging would save. */

/**
 * struct sp_est_figures - what a pass of estimate found would merge
 * @shared: KSM pages a merge would make (estimated_pages_shared)
 * @sharing: further pages that would map them (estimated_pages_sharing)
 * @zero: all-zero pages that would map the zero page
 *	(estimated_zero_pages)
 */
struct sp_est_figures {
	unsigned long shared;
	unsigned long sharing;
	unsigned long zero;
};

extern struct sp_est_figures sp_est_shown;
void sp_est_visit(struct sp_slot *slot, unsigned long addr,
		  struct page *page, void *entry);
void sp_est_pass_end(void);

/* fresh.c: use_fresh_pages. */
extern bool sp_use_fresh_pages;
struct folio *sp_fresh_folio(struct mm_struct *mm, struct page *page,
			     struct sp_knode *node);
void sp_fresh_abandon(struct folio *folio);
void sp_fresh_drain(void);
#ifdef CONFIG_MEMCG
int sp_hide_charge(struct sp_slot *slot, unsigned long *av);
void sp_hide_uncharge(struct sp_slot *slot, unsigned long av);
#else
static inline int sp_hide_charge(struct sp_slot *slot, unsigned long *av)
{
	return 0;
}

static inline void sp_hide_uncharge(struct sp_slot *slot, unsigned long av)
{
}
#endif

/* sysfs.c */
int sp_sysfs_init(void);
void sp_sysfs_exit(void);

/* rmap.c */
struct sp_knode *sp_folio_node(struct folio *folio);
void sp_folio_set_node(struct folio *folio, struct sp_knode *node);
struct folio *sp_node_folio_try(struct sp_knode *node, bool lock);

/* merge.c */
bool sp_vma_compatible(struct vm_area_struct *vma);
struct vm_area_struct *sp_mergeable_vma(struct mm_struct *mm,
					unsigned long addr);
struct page *sp_get_page_at(struct mm_struct *mm, unsigned long addr);
int sp_unshare(struct vm_area_struct *vma, unsigned long addr);
int sp_unshare_range(struct vm_area_struct *vma, unsigned long start,
		     unsigned long end);
int sp_split_locked(struct page *page);
int sp_make_ksm(struct vm_area_struct *vma, struct page *page,
		struct sp_knode *node, bool held);
int sp_merge_into(struct vm_area_struct *vma, struct page *page,
		  struct page *kpage, bool held);
int sp_merge_fresh(struct vm_area_struct *vma, struct page *page,
		   struct page *kpage, bool held);
bool sp_pages_same(struct page *a, struct page *b);

#endif /* _MM_KSM_SAMEPAGE_H */
