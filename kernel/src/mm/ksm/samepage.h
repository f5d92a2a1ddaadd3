/* SPDX-License-Identifier: GPL-2.0 */
/*
 * samepage: kernel samepage merging, internal interfaces.
 *
 * The pieces, one file each:
 *   core.c     registering mms (madvise, prctl, fork, exit) and boot
 *   scan.c     ksmd and the visit of each page: the per-page state machine
 *   index.c    the content index: KSM pages and this pass's candidates
 *   merge.c    write-protecting, merging and unsharing pages
 *   rmap.c     the rmap side: walks, migration, swap-in, memory failure
 *   advisor.c  the scan-time advisor, which retunes pages_to_scan
 *   sysfs.c    /sys/kernel/mm/ksm and the per-process profit
 *   hotplug.c  dropping nodes of memory that goes offline
 *
 * Data model. Every mm that ever asked for merging has a struct sp_slot.
 * Its xarray "pages", indexed by virtual page number, holds what ksmd
 * knows of each page it has seen there: either an xarray value entry (a
 * "state word": the content hash seen at the last visit and a few flags),
 * or a pointer to the struct sp_sharer that records that the page is
 * mapped to a KSM page. So a page that is merely tracked costs one xarray
 * slot and nothing else.
 *
 * A KSM page is a write-protected anonymous folio whose ->mapping points
 * to its struct sp_knode (with PAGE_MAPPING_KSM set). The node lists the
 * sharers, one per mapping that ksmd set up or found, and sits in the
 * stable table, a hash table keyed by the content hash.
 *
 * Candidates are pages that did not change between two visits (same hash,
 * same checksum of the whole page); they
 * go into the candidate table, an open-addressed array of 64-bit entries
 * (slot id, virtual page number, hash tag) that is emptied at the start of
 * every full pass. A hit is confirmed with the state word of the page and
 * then by comparing the two pages in full before anything is merged.
 *
 * Locking:
 *   sp_mutex        ksmd while it scans, and whoever stops or unmerges
 *                   everything (run=2) or changes a setting that needs the
 *                   index empty. It protects both tables, the counters,
 *                   every slot's "pages" xarray contents and the sharers'
 *                   existence. Taken before any mmap_lock or folio lock.
 *   sp_slots_lock   (spinlock) the slot list, the slot ids and the scan
 *                   cursor's slot, against __ksm_enter/__ksm_exit.
 *   KSM folio lock  a node's sharer list changes only with its KSM folio
 *                   locked, or once the folio is gone; rmap walks rely on
 *                   it.
 */
#ifndef _MM_KSM_SAMEPAGE_H
#define _MM_KSM_SAMEPAGE_H

#include <linux/ksm.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/xarray.h>

#define SP_RUN_STOP	0
#define SP_RUN_MERGE	1
#define SP_RUN_UNMERGE	2

/* One registered mm. */
struct sp_slot {
	struct list_head list;		/* sp_slots, under sp_slots_lock */
	struct hlist_node hnode;	/* sp_mm_hash, under sp_slots_lock */
	struct mm_struct *mm;		/* mmgrab()bed while the slot lives */
	struct xarray pages;		/* vpn -> state word or sp_sharer */
	unsigned int id;		/* for candidate table entries */
};

/* A KSM page. */
struct sp_knode {
	struct hlist_node link;		/* stable table bucket */
	struct hlist_head sharers;	/* struct sp_sharer */
	unsigned long kpfn;		/* the folio; migration moves it */
	u32 hash;			/* content hash */
	int nid;			/* node of the folio; migration moves it */
	unsigned int nr_sharers;
};

/* One mapping of a KSM page, known to ksmd. */
struct sp_sharer {
	struct hlist_node link;		/* sp_knode.sharers */
	struct sp_knode *node;
	struct sp_slot *slot;
	unsigned long addr;
	struct anon_vma *anon_vma;	/* referenced: rmap walks start here */
};

/*
 * The state word of a tracked page that is not merged, stored as an xarray
 * value: the content hash and a checksum of the whole page at the last
 * visit, whether it was counted as unshared (a candidate), and its
 * smart-scan age and remaining skips.
 *
 * An xarray value holds BITS_PER_LONG - 1 bits. On 64-bit the word keeps
 * the whole 32-bit hash and 20 bits of the checksum; on 32-bit only 12 bits
 * of each fit. Both serve as shortcuts only: they pick the candidates to
 * compare and tell a changed page from an unchanged one, and every merge
 * is confirmed by comparing the pages in full under write protection. So
 * the fewer bits of 32-bit cost it extra compares, never content.
 */
#if BITS_PER_LONG == 64
#define SP_ST_HASH_BITS		32
#define SP_ST_SUM_BITS		20
#else
#define SP_ST_HASH_BITS		12
#define SP_ST_SUM_BITS		10
#endif
#define SP_ST_HASH_MASK		GENMASK(SP_ST_HASH_BITS - 1, 0)
#define SP_ST_CAND		BIT(SP_ST_HASH_BITS)
#define SP_ST_AGE_SHIFT		(SP_ST_HASH_BITS + 1)
#define SP_ST_AGE_BITS		4
#define SP_ST_SKIP_SHIFT	(SP_ST_AGE_SHIFT + SP_ST_AGE_BITS)
#define SP_ST_SKIP_BITS		4
#define SP_ST_SUM_SHIFT		(SP_ST_SKIP_SHIFT + SP_ST_SKIP_BITS)
#define SP_ST_SUM_MASK		GENMASK(SP_ST_SUM_BITS - 1, 0)
static_assert(SP_ST_SUM_SHIFT + SP_ST_SUM_BITS <= BITS_PER_LONG - 1);

/* What a visit reads of a page: its hash and its checksum. */
struct sp_content {
	u32 hash;
	u32 sum;
};

static inline unsigned long sp_st_make(struct sp_content c, bool cand,
				       unsigned int age, unsigned int skip)
{
	return (c.hash & SP_ST_HASH_MASK) | (cand ? SP_ST_CAND : 0) |
	       ((unsigned long)age << SP_ST_AGE_SHIFT) |
	       ((unsigned long)skip << SP_ST_SKIP_SHIFT) |
	       ((c.sum & SP_ST_SUM_MASK) << SP_ST_SUM_SHIFT);
}

/* The bits of the hash that state word @st keeps. */
static inline u32 sp_st_hash(unsigned long st)
{
	return st & SP_ST_HASH_MASK;
}

/* Could a page of hash @hash be the one state word @st saw? */
static inline bool sp_st_hash_is(unsigned long st, u32 hash)
{
	return sp_st_hash(st) == (hash & SP_ST_HASH_MASK);
}

static inline u32 sp_st_sum(unsigned long st)
{
	return (st >> SP_ST_SUM_SHIFT) & SP_ST_SUM_MASK;
}

/* Did the page keep the content that state word @st saw? */
static inline bool sp_st_same(unsigned long st, struct sp_content c)
{
	return sp_st_hash_is(st, c.hash) &&
	       sp_st_sum(st) == (c.sum & SP_ST_SUM_MASK);
}

static inline bool sp_st_cand(unsigned long st)
{
	return st & SP_ST_CAND;
}

static inline unsigned int sp_st_age(unsigned long st)
{
	return (st >> SP_ST_AGE_SHIFT) & GENMASK(SP_ST_AGE_BITS - 1, 0);
}

static inline unsigned int sp_st_skip(unsigned long st)
{
	return (st >> SP_ST_SKIP_SHIFT) & GENMASK(SP_ST_SKIP_BITS - 1, 0);
}

/* Tunables (sysfs.c writes them; READ_ONCE where ksmd reads them). */
extern unsigned long sp_run;
extern unsigned int sp_pages_to_scan;
extern unsigned int sp_sleep_ms;
extern unsigned int sp_max_page_sharing;
extern bool sp_merge_across_nodes;
extern bool sp_use_zero_pages;
extern bool sp_smart_scan;
extern unsigned int sp_chains_prune_ms;
extern unsigned long sp_max_kernel_pages;

/* advisor.c: the scan-time advisor and its tunables. */
extern bool sp_advisor_on;
extern unsigned int sp_advisor_max_cpu;
extern unsigned long sp_advisor_min_pages_to_scan;
extern unsigned long sp_advisor_max_pages_to_scan;
extern unsigned long sp_advisor_target_scan_time;
void sp_advisor_defaults(void);
void sp_advisor_pass_begin(void);
void sp_advisor_pass_end(void);

/* Counters, under sp_mutex (read without it by sysfs). */
struct sp_stats {
	unsigned long shared;		/* KSM pages with a sharer */
	unsigned long sharing;		/* further sharers of those */
	unsigned long unshared;		/* candidates */
	unsigned long tracked;		/* entries in all slots' xarrays */
	unsigned long scanned;		/* pages visited, ever */
	unsigned long skipped;		/* pages smart scan skipped */
	unsigned long full_scans;
};

extern struct sp_stats sp_stats;
extern struct mutex sp_mutex;
extern wait_queue_head_t sp_thread_wait;

/* core.c */
extern spinlock_t sp_slots_lock;
extern struct list_head sp_slots;
extern struct xarray sp_slot_ids;
extern struct kmem_cache *sp_node_cache;
extern struct kmem_cache *sp_sharer_cache;
void sp_slot_free(struct sp_slot *slot);

/* scan.c */
/* Where ksmd is: @slot is NULL between passes. Under sp_slots_lock. */
struct sp_cursor {
	struct sp_slot *slot;
	unsigned long addr;		/* next address to look at */
	bool saw_vma;			/* @slot had a mergeable VMA */
};

extern struct sp_cursor sp_cur;
int sp_scan_init(void);
void sp_release_orphan(struct sp_knode *node);
int sp_unmerge_all(void);
void sp_sharer_drop(struct sp_sharer *sh);

/* index.c */
u32 sp_hash_page(struct page *page);
struct sp_content sp_read_page(struct page *page);
/* What a visit reads of an all-zero page. */
extern struct sp_content sp_zero;

/* The candidate table: see the top of this file. */
struct sp_cand_table {
	u64 *slots;
	unsigned int bits;
	unsigned long used;
};

/* A lookup in progress: the probe sequence of one hash. */
struct sp_probe {
	struct sp_cand_table *t;
	unsigned long pos;
	unsigned int seen;
	u32 hash;
};

void sp_cand_reset(struct sp_cand_table *t, unsigned long expect);
void sp_cand_free(struct sp_cand_table *t);
void sp_probe_start(struct sp_probe *p, struct sp_cand_table *t, u32 hash);
bool sp_probe_next(struct sp_probe *p, unsigned int *id, unsigned long *vpn);
void sp_probe_forget(struct sp_probe *p);
bool sp_probe_insert(struct sp_probe *p, unsigned int id, unsigned long vpn);

/* The stable table: KSM pages by content hash. */
struct sp_stable_table {
	struct hlist_head *buckets;
	unsigned int bits;
	unsigned long nr;
};

int sp_stable_init(struct sp_stable_table *t, unsigned int bits);
void sp_stable_destroy(struct sp_stable_table *t);
void sp_stable_add(struct sp_stable_table *t, struct sp_knode *node);
void sp_stable_del(struct sp_stable_table *t, struct sp_knode *node);
struct hlist_head *sp_stable_bucket(struct sp_stable_table *t, u32 hash);
bool sp_stable_has_twin(struct sp_stable_table *t, struct sp_knode *node);
void sp_stable_for_each(struct sp_stable_table *t,
			void (*fn)(struct sp_knode *node));

extern struct sp_cand_table sp_cands;
extern struct sp_stable_table sp_stable;
int sp_index_init(void);
unsigned long sp_index_bytes(void);

/* hotplug.c: ranges of memory going offline, during which ksmd waits. */
#ifdef CONFIG_MEMORY_HOTREMOVE
extern atomic_t sp_offlining;
int sp_hotplug_init(void);
#else
static inline int sp_hotplug_init(void)
{
	return 0;
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

/* sysfs.c */
int sp_sysfs_init(void);

/* rmap.c */
struct sp_knode *sp_folio_node(struct folio *folio);
void sp_folio_set_node(struct folio *folio, struct sp_knode *node);
struct folio *sp_node_folio(struct sp_knode *node, bool lock);
void sp_knode_free(struct sp_knode *node);

/* merge.c */
bool sp_vma_compatible(struct vm_area_struct *vma);
struct vm_area_struct *sp_mergeable_vma(struct mm_struct *mm,
					unsigned long addr);
int sp_unshare(struct vm_area_struct *vma, unsigned long addr);
int sp_unshare_range(struct vm_area_struct *vma, unsigned long start,
		     unsigned long end);
int sp_make_ksm(struct vm_area_struct *vma, struct page *page,
		struct sp_knode *node);
int sp_merge_into(struct vm_area_struct *vma, struct page *page,
		  struct page *kpage);
bool sp_pages_same(struct page *a, struct page *b);

#endif /* _MM_KSM_SAMEPAGE_H */
