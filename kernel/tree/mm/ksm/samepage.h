/* SPDX-License-Identifier: GPL-2.0 */
/*
 * samepage: kernel samepage merging, internal interfaces.
 *
 * The pieces, one file each:
 *   core.c     registering mms (madvise, prctl, fork, exit) and boot
 *   ksmd.c     ksmd: its passes and batches, and unmerging everything
 *   walk.c     finding the next pages to visit, a page table at a time
 *   visit.c    the visit of each page: the per-page state machine
 *   knode.c    what ksmd records of pages: entries, sharers, KSM nodes
 *   index.c    the content index: KSM pages and this pass's candidates
 *   merge.c    write-protecting, merging and unsharing pages
 *   rmap.c     the rmap side: walks, migration, swap-in, memory failure
 *   advisor.c  the scan-time advisor, which retunes pages_to_scan
 *   sysfs.c    /sys/kernel/mm/ksm and the per-process profit
 *   hotplug.c  dropping nodes of memory that goes offline
 *   domain.c   merge domains: which mms' pages may share a frame
 *   fresh.c    fresh pages: new KSM pages in frames drawn from a pool
 *
 * Data model. Every mm that ever asked for merging has a struct sp_slot.
 * Its xarray "pages", indexed by virtual page number, holds what ksmd
 * knows of each page it has seen there: either an xarray value entry (a
 * "state word": the content hash seen at the last visit and a few flags),
 * or a pointer to the struct sp_knode of the KSM page the page is mapped
 * to. So a page that is merely tracked costs one xarray slot and nothing
 * else.
 *
 * A KSM page is a write-protected anonymous folio whose ->mapping points
 * to its struct sp_knode (with PAGE_MAPPING_KSM set). The node keeps an
 * array of sharers, sixteen bytes for each mapping that ksmd set up or
 * found: the slot id and page number of the mapping, and the anon_vma
 * where rmap walks find it. The node sits in the
 * stable table: buckets by its key (the keyed hash of its content, salted
 * by its merge domain), each a tree ordered by key, domain and content;
 * further KSM pages of one content hang on the first as its dups.
 *
 * Candidates are pages that did not change between two visits (same
 * keyed hash of the whole page); they go into the candidate table, an
 * open-addressed array of entries (slot id, virtual page number, hash
 * bits) that is emptied at the start of every full pass. A hit is
 * confirmed with the state word of the page and then by comparing the two
 * pages in full before anything is merged.
 *
 * Locking:
 *   sp_mutex        ksmd while it scans, and whoever stops or unmerges
 *                   everything (run=2) or changes a setting that needs the
 *                   index empty. It protects both tables, the counters,
 *                   every slot's "pages" xarray contents and the sharers'
 *                   existence. Taken before any mmap_lock or folio lock.
 *   sp_slots_lock   (spinlock) the slot list, the slot ids and the scan
 *                   cursor's slot, against __ksm_enter/__ksm_exit.
 *   KSM folio lock  a node's sharer array changes (and moves, when it
 *                   grows or shrinks) only with its KSM folio locked, or
 *                   once the folio is gone; rmap walks rely on it.
 */
#ifndef _MM_KSM_SAMEPAGE_H
#define _MM_KSM_SAMEPAGE_H

#include <linux/ksm.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/rbtree.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>

#define SP_RUN_STOP	0
#define SP_RUN_MERGE	1
#define SP_RUN_UNMERGE	2

/*
 * Slot ids, in candidate entries and sharers: a million registered mms.
 * An mm beyond them (or whose id could not be allocated) is scanned, and
 * its all-zero pages may become the zero page, but its pages merge with
 * no other.
 */
#define SP_SLOT_ID_BITS	20
#define SP_SLOT_ID_MAX	((1U << SP_SLOT_ID_BITS) - 1)

/* One registered mm. */
struct sp_slot {
	struct list_head list;		/* sp_slots, under sp_slots_lock */
	struct hlist_node hnode;	/* sp_mm_hash, under sp_slots_lock */
	struct mm_struct *mm;		/* mmgrab()bed while the slot lives */
	struct xarray pages;		/* vpn -> state word or sp_knode */
	unsigned int id;		/* for candidate table entries */
	/* Merge domain (domain.c): @dom and @salt are ksmd's. */
	kuid_t uid;			/* euid of the registering task */
	u32 salt;			/* keyed hash of @dom, XORed into keys */
	u64 seq;			/* registration number, never reused */
	u64 dom;			/* the mm's domain in this pass */
};

/* Where a node is in the stable table (index.c). */
enum sp_kn_place {
	SP_KN_NONE,			/* not in the table */
	SP_KN_HEAD,			/* in its bucket's tree */
	SP_KN_DUP,			/* on its head's list of dups */
};

/* A KSM page. */
struct sp_knode {
	union {
		struct rb_node rb;	/* head: in its bucket */
		struct {		/* dup: on its head's list */
			struct hlist_node dup;
			struct sp_knode *head;
		};
	};
	struct hlist_head dups;		/* head: its dups */
	struct sp_sharer *sharers;	/* nr_sharers of them, room for cap */
	unsigned long kpfn;		/* the folio; migration moves it */
	u64 key;			/* index key: content hash ^ salt */
	u64 dom;			/* merge domain of every sharer it took */
	int nid;			/* node of the folio; migration moves it */
	unsigned int nr_sharers;
	unsigned int cap;
	u8 place;			/* enum sp_kn_place */
};

/*
 * One mapping of a KSM page, known to ksmd, in its node's array: where it
 * is, as the slot id in the low SP_SLOT_ID_BITS bits and the virtual page
 * number above (44 bits hold every user address of 5-level paging), and
 * the anon_vma of its VMA, referenced, where rmap walks start.
 */
struct sp_sharer {
	u64 where;
	struct anon_vma *anon_vma;
};

static inline u64 sp_where(unsigned int id, unsigned long vpn)
{
	return ((u64)vpn << SP_SLOT_ID_BITS) | id;
}

static inline unsigned int sp_where_id(u64 where)
{
	return where & SP_SLOT_ID_MAX;
}

static inline unsigned long sp_where_addr(u64 where)
{
	return (unsigned long)(where >> SP_SLOT_ID_BITS) << PAGE_SHIFT;
}

/*
 * The state word of a tracked page that is not merged, stored as an xarray
 * value: the content hash at the last visit, whether it was counted as
 * unshared (a candidate), whether ksmd had write-protected the page when it
 * took that hash (walk.c), and its smart-scan age and remaining skips.
 *
 * An xarray value holds BITS_PER_LONG - 1 bits: on 64-bit the word keeps
 * 53 bits of the hash, on 32-bit 21. The hash serves as a shortcut only:
 * it picks the candidates to compare and tells a changed page from an
 * unchanged one, and every merge is confirmed by comparing the pages in
 * full under write protection. So the fewer bits of 32-bit cost it extra
 * compares, never content.
 */
#define SP_ST_HASH_BITS		(BITS_PER_LONG - 11)
#define SP_ST_HASH_MASK		GENMASK_ULL(SP_ST_HASH_BITS - 1, 0)
#define SP_ST_CAND		BIT(SP_ST_HASH_BITS)
#define SP_ST_WP		BIT(SP_ST_HASH_BITS + 1)
#define SP_ST_AGE_SHIFT		(SP_ST_HASH_BITS + 2)
#define SP_ST_AGE_BITS		4
#define SP_ST_SKIP_SHIFT	(SP_ST_AGE_SHIFT + SP_ST_AGE_BITS)
#define SP_ST_SKIP_BITS		4
static_assert(SP_ST_SKIP_SHIFT + SP_ST_SKIP_BITS <= BITS_PER_LONG - 1);

/*
 * The hash ksmd indexes pages by: on 64-bit the 53 bits a state word
 * keeps, so that a page known not to have changed is looked up by its
 * state word without being read again (walk.c); among 2^30 pages that
 * leaves about a hundred pairs of unequal pages sharing a hash, each
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
void sp_slot_free(struct sp_slot *slot);

/* ksmd.c */
/* Where ksmd is: @slot is NULL between passes. Under sp_slots_lock. */
struct sp_cursor {
	struct sp_slot *slot;
	unsigned long addr;		/* next address to look at */
	bool saw_vma;			/* @slot had a mergeable VMA */
};

extern struct sp_cursor sp_cur;
int sp_scan_init(void);
int sp_unmerge_all(void);

/* walk.c: pages found by one walk of the cursor's mm, in address order. */
#define SP_GATHER	64

/* What the walk learnt of a page it found (sp_found.how). */
#define SP_FOUND_CLEAN	BIT(0)	/* not written since its hash: no read */
#define SP_FOUND_WP	BIT(1)	/* write-protected and clean: hash it now */
#define SP_FOUND_WANT	BIT(2)	/* the walk's own: to write-protect */

struct sp_found {
	struct sp_slot *slot;		/* whose mm the walk is in */
	unsigned int nr;
	unsigned int max;		/* stop the walk at this many */
	struct page *page[SP_GATHER];
	unsigned long addr[SP_GATHER];
	u8 how[SP_GATHER];		/* SP_FOUND_* */
};

void sp_find_in_mm(struct mm_struct *mm, struct sp_found *f);

/* visit.c */
bool sp_visit(struct sp_slot *slot, unsigned long addr, struct page *page,
	      unsigned int how);

/* knode.c: all under sp_mutex. */
bool sp_entry_set(struct sp_slot *slot, unsigned long vpn, void *new);
void sp_set_state(struct sp_slot *slot, unsigned long vpn, unsigned long st);
bool sp_sharers_init(struct sp_knode *node, unsigned int cap);
bool sp_sharer_link(struct sp_knode *node, struct sp_slot *slot,
		    unsigned long addr, struct anon_vma *av);
void sp_sharer_drop(struct sp_knode *node, struct sp_slot *slot,
		    unsigned long vpn);
struct sp_slot *sp_sharer_slot(const struct sp_sharer *sh);
void sp_forget(struct sp_slot *slot, unsigned long from, unsigned long to);
void sp_forget_all(struct sp_slot *slot);
void sp_release_orphan(struct sp_knode *node);
void sp_knode_free(struct sp_knode *node);
void sp_sweep(unsigned int budget);

/* index.c */
u64 sp_hash_page(struct page *page);
int sp_page_cmp(struct page *a, struct page *b);
/* The hash of an all-zero page. */
extern u64 sp_zero_hash;

/* The candidate table: see the top of this file and index.c. */
struct sp_cand_table {
	u64 *locs;			/* slot id and page number */
	u16 *marks;			/* epoch and hash bits */
	unsigned int bits;
	u16 epoch;			/* this pass's; 0 before the first */
	unsigned long used;
	unsigned long want;		/* this pass's lookups and new pages */
};

/* A lookup in progress: the probe sequence of one hash. */
struct sp_probe {
	struct sp_cand_table *t;
	unsigned long pos;
	unsigned int seen;
	u64 hash;
};

void sp_cand_reset(struct sp_cand_table *t);
void sp_cand_clear(struct sp_cand_table *t);
void sp_cand_free(struct sp_cand_table *t);
void sp_probe_start(struct sp_probe *p, struct sp_cand_table *t, u64 hash);
bool sp_probe_next(struct sp_probe *p, unsigned int *id, unsigned long *vpn);
void sp_probe_forget(struct sp_probe *p);
bool sp_probe_insert(struct sp_probe *p, unsigned int id, unsigned long vpn);

/*
 * The stable table: buckets of KSM pages by key, each a tree ordered by
 * key, domain and content (index.c).
 */
struct sp_stable_table {
	struct rb_root *buckets;
	unsigned int bits;
	unsigned long nr;		/* nodes, heads and dups */
	unsigned long chains;		/* heads with dups */
	unsigned long dups;		/* nodes of those chains */
	unsigned long sweep;		/* next bucket sp_stable_sweep() takes */
};

int sp_stable_init(struct sp_stable_table *t, unsigned int bits);
void sp_stable_destroy(struct sp_stable_table *t);
struct sp_knode *sp_stable_find(struct sp_stable_table *t, u64 key, u64 dom,
				struct page *page);
void sp_stable_add(struct sp_stable_table *t, struct sp_knode *node,
		   struct page *kpage);
void sp_stable_del(struct sp_stable_table *t, struct sp_knode *node);
void sp_stable_for_each(struct sp_stable_table *t,
			void (*fn)(struct sp_knode *node));
bool sp_stable_sweep(struct sp_stable_table *t, unsigned long budget,
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

/* fresh.c: use_fresh_pages. */
extern bool sp_use_fresh_pages;
struct folio *sp_fresh_folio(struct mm_struct *mm, struct page *page,
			     struct sp_knode *node);
void sp_fresh_abandon(struct folio *folio);
void sp_fresh_drain(void);

/* sysfs.c */
int sp_sysfs_init(void);

/* rmap.c */
struct sp_knode *sp_folio_node(struct folio *folio);
void sp_folio_set_node(struct folio *folio, struct sp_knode *node);
struct folio *sp_node_folio(struct sp_knode *node, bool lock);

/* merge.c */
bool sp_vma_compatible(struct vm_area_struct *vma);
struct vm_area_struct *sp_mergeable_vma(struct mm_struct *mm,
					unsigned long addr);
int sp_unshare(struct vm_area_struct *vma, unsigned long addr);
int sp_unshare_range(struct vm_area_struct *vma, unsigned long start,
		     unsigned long end);
int sp_make_ksm(struct vm_area_struct *vma, struct page *page,
		struct sp_knode *node, bool held);
int sp_merge_into(struct vm_area_struct *vma, struct page *page,
		  struct page *kpage, bool held);
int sp_merge_fresh(struct vm_area_struct *vma, struct page *page,
		   struct page *kpage, bool held);
bool sp_pages_same(struct page *a, struct page *b);

#endif /* _MM_KSM_SAMEPAGE_H */
