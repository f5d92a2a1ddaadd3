// SPDX-License-Identifier: GPL-2.0
/*
 * samepage index: the content hash of a page and the two tables that are
 * looked up by it, the stable table of KSM pages and the candidate table
 * of this pass.
 *
 * The hash is a keyed hash of a sample of the page, one 64-bit word out of
 * every eight at offsets drawn once per boot, folded with a checksum of
 * every word. It need not be exact: a hit is always followed by a full
 * comparison of the two pages, so a collision costs time, never content.
 * But pages that differ in a few words are common (arrays of struct page,
 * page tables, mostly-zero pages carrying an id), and with the sample
 * alone they collided whenever no sampled word differed, flooded one hash
 * and kept real duplicates out of the candidate table (seen with two VMs
 * booted from one image: a third of their guest RAM never merged, at
 * random from boot to boot as the sample moved). The checksum of the whole
 * page keeps such pages apart. Crafted collisions of the checksum remain
 * possible without the key; a keyed hash of the whole page is the cure.
 * The same values tell ksmd whether a page changed since its last visit.
 */
#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>

#include "../internal.h"
#include "samepage.h"

#define SP_SAMPLE_WORDS	64
#define SP_STRIDE	(PAGE_SIZE / sizeof(u64) / SP_SAMPLE_WORDS)

static u16 sp_sample_at[SP_SAMPLE_WORDS] __ro_after_init;
static u64 sp_hash_key __ro_after_init;
struct sp_content sp_zero __ro_after_init;

struct sp_cand_table sp_cands;
struct sp_stable_table sp_stable;

static u32 sp_hash_words(const u64 *w)
{
	u64 acc = sp_hash_key;
	unsigned int i;

	for (i = 0; i < SP_SAMPLE_WORDS; i++) {
		acc ^= w[sp_sample_at[i]];
		acc = rol64(acc * 0x9e3779b97f4a7c15ULL, 29);
	}
	acc ^= acc >> 32;
	acc *= 0xd6e8feb86659fd93ULL;
	return (u32)(acc >> 32);
}

/*
 * A checksum of every word of the page (Fletcher's, folded by a multiply
 * whose top bits every input bit reaches), only to tell whether the page
 * changed since the last visit: the sampled hash alone would miss a write
 * that lands in no sampled word. It needs no key: a page made to keep its
 * checksum while changing is still compared in full before any merge.
 */
static u32 sp_sum_words(const u64 *w)
{
	u64 a = 0, b = 0;
	unsigned int i;

	for (i = 0; i < PAGE_SIZE / sizeof(u64); i += 4) {
		a += w[i];
		b += a;
		a += w[i + 1];
		b += a;
		a += w[i + 2];
		b += a;
		a += w[i + 3];
		b += a;
	}
	return ((a ^ rol64(b, 29)) * 0x9e3779b97f4a7c15ULL) >> 32;
}

/**
 * sp_read_page - what a visit learns of a page's content
 * @page: the page, referenced by the caller
 *
 * Return: the page's hash (its sampled hash folded with its checksum) and
 * its checksum.
 */
struct sp_content sp_read_page(struct page *page)
{
	const u64 *w = kmap_local_page(page);
	struct sp_content c;

	c.sum = sp_sum_words(w);
	c.hash = sp_hash_words(w) ^ c.sum;
	kunmap_local(w);
	return c;
}

/**
 * sp_hash_page - the index hash of a page's content
 * @page: the page, referenced by the caller
 *
 * Return: the hash; equal pages always have equal hashes.
 */
u32 sp_hash_page(struct page *page)
{
	return sp_read_page(page).hash;
}

static void __init sp_hash_init(void)
{
	unsigned int i;

	sp_hash_key = get_random_u64();
	for (i = 0; i < SP_SAMPLE_WORDS; i++)
		sp_sample_at[i] = i * SP_STRIDE + get_random_u32_below(SP_STRIDE);
	sp_zero = sp_read_page(ZERO_PAGE(0));
}

/*
 * Candidate table entries: virtual page number, slot id and twelve bits
 * of the hash, so that most probes that cannot match are refused without
 * looking further. Zero is an empty entry (slot ids start at 1), and
 * SP_CE_DEAD, with slot id 0 too, one whose candidate was found gone: it
 * keeps the probe sequences that pass it intact until the table is emptied.
 */
#define SP_CE_TAG_BITS	12
#define SP_CE_ID_BITS	16
#define SP_CE_VPN_SHIFT	(SP_CE_TAG_BITS + SP_CE_ID_BITS)
#define SP_CE_VPN_MAX	(U64_MAX >> SP_CE_VPN_SHIFT)
#define SP_CE_ID_MAX	((1U << SP_CE_ID_BITS) - 1)
#define SP_CE_DEAD	((u64)1)
/* Hits on one hash worth confirming: past this, collisions are an attack. */
#define SP_PROBE_HITS	8

static u64 sp_ce_make(u32 hash, unsigned int id, unsigned long vpn)
{
	return ((u64)vpn << SP_CE_VPN_SHIFT) | ((u64)id << SP_CE_TAG_BITS) |
	       (hash & GENMASK(SP_CE_TAG_BITS - 1, 0));
}

static unsigned long sp_ce_pos(struct sp_cand_table *t, u32 hash)
{
	return (u32)(hash * 0x61c88647U) >> (32 - t->bits);
}

/**
 * sp_cand_reset - empty the candidate table for a new pass
 * @t: the table
 * @expect: the number of pages the pass is expected to see
 *
 * The table is sized for a load of at most one half; when a larger one
 * cannot be had the old one is kept, and fewer pages become candidates.
 */
void sp_cand_reset(struct sp_cand_table *t, unsigned long expect)
{
	unsigned int bits = max_t(unsigned int, 10,
				  order_base_2(2 * expect + 1));
	u64 *slots;

	t->used = 0;
	if (bits != t->bits || !t->slots) {
		slots = kvcalloc(1UL << bits, sizeof(u64),
				 GFP_KERNEL | __GFP_NOWARN);
		if (slots) {
			kvfree(t->slots);
			t->slots = slots;
			t->bits = bits;
			return;
		}
	}
	if (t->slots)
		memset(t->slots, 0, sizeof(u64) << t->bits);
}

/**
 * sp_cand_free - release the memory of a candidate table
 * @t: the table
 */
void sp_cand_free(struct sp_cand_table *t)
{
	kvfree(t->slots);
	t->slots = NULL;
	t->bits = 0;
	t->used = 0;
}

/**
 * sp_index_bytes - the memory the candidate and stable tables take now
 *
 * Read without sp_mutex, for general_profit: a table being resized may be
 * counted at either size.
 *
 * Return: bytes.
 */
unsigned long sp_index_bytes(void)
{
	unsigned long cands = 0;

	if (READ_ONCE(sp_cands.slots))
		cands = sizeof(u64) << READ_ONCE(sp_cands.bits);
	return cands + (sizeof(struct hlist_head) << READ_ONCE(sp_stable.bits));
}

/**
 * sp_probe_start - begin a lookup of @hash in the candidate table
 * @p: the probe state
 * @t: the table
 * @hash: the content hash looked for
 */
void sp_probe_start(struct sp_probe *p, struct sp_cand_table *t, u32 hash)
{
	p->t = t;
	p->hash = hash;
	p->seen = 0;
	p->pos = t->slots ? sp_ce_pos(t, hash) : 0;
}

/**
 * sp_probe_next - the next candidate that may have the probe's hash
 * @p: the probe state
 * @id: the candidate's slot id
 * @vpn: the candidate's virtual page number
 *
 * Return: false at the end of the probe sequence, which then rests on the
 * empty entry where sp_probe_insert() puts a new candidate.
 */
bool sp_probe_next(struct sp_probe *p, unsigned int *id, unsigned long *vpn)
{
	struct sp_cand_table *t = p->t;
	unsigned long mask;
	u64 e;

	if (!t->slots)
		return false;
	mask = (1UL << t->bits) - 1;
	for (; (e = t->slots[p->pos]); p->pos = (p->pos + 1) & mask) {
		if (e == SP_CE_DEAD ||
		    ((e ^ p->hash) & GENMASK_ULL(SP_CE_TAG_BITS - 1, 0)))
			continue;
		if (++p->seen > SP_PROBE_HITS)
			return false;
		*id = (e >> SP_CE_TAG_BITS) & SP_CE_ID_MAX;
		*vpn = e >> SP_CE_VPN_SHIFT;
		p->pos = (p->pos + 1) & mask;
		return true;
	}
	return false;
}

/**
 * sp_probe_forget - drop the candidate sp_probe_next() returned last
 * @p: the probe state
 *
 * For a candidate found gone: unmapped, changed or merged since it was
 * added (the pieces of a huge page that a split mapped to the zero page,
 * say). It then costs no later probe anything, and this probe does not
 * count it against SP_PROBE_HITS, so that stale entries cannot keep live
 * ones from pairing. Every entry is forgotten at most once a pass, so what
 * this forgives is bounded by the insertions of the pass.
 */
void sp_probe_forget(struct sp_probe *p)
{
	struct sp_cand_table *t = p->t;
	unsigned long last = (p->pos - 1) & ((1UL << t->bits) - 1);

	if (WARN_ON_ONCE(!p->seen || !t->slots[last]))
		return;
	t->slots[last] = SP_CE_DEAD;
	p->seen--;
}

/**
 * sp_probe_insert - add a candidate where a finished probe stopped
 * @p: the probe state, after sp_probe_next() returned false
 * @id: slot id of the candidate
 * @vpn: its virtual page number
 *
 * Return: true if the candidate was added; false if it cannot be encoded,
 * the probe gave up, or the table is full enough.
 */
bool sp_probe_insert(struct sp_probe *p, unsigned int id, unsigned long vpn)
{
	struct sp_cand_table *t = p->t;

	if (!t->slots || !id || id > SP_CE_ID_MAX || vpn > SP_CE_VPN_MAX)
		return false;
	if (p->seen > SP_PROBE_HITS || t->slots[p->pos])
		return false;
	if (4 * (t->used + 1) > 3UL << t->bits)
		return false;
	t->slots[p->pos] = sp_ce_make(p->hash, id, vpn);
	t->used++;
	return true;
}

/**
 * sp_stable_init - set up an empty stable table
 * @t: the table
 * @bits: log2 of the initial number of buckets
 *
 * Return: 0 or -ENOMEM.
 */
int sp_stable_init(struct sp_stable_table *t, unsigned int bits)
{
	t->buckets = kvcalloc(1UL << bits, sizeof(*t->buckets), GFP_KERNEL);
	if (!t->buckets)
		return -ENOMEM;
	t->bits = bits;
	t->nr = 0;
	return 0;
}

/**
 * sp_stable_destroy - free the buckets of an empty stable table
 * @t: the table
 */
void sp_stable_destroy(struct sp_stable_table *t)
{
	WARN_ON_ONCE(t->nr);
	kvfree(t->buckets);
	t->buckets = NULL;
}

/**
 * sp_stable_bucket - the bucket that holds KSM pages of @hash
 * @t: the table
 * @hash: content hash
 *
 * Return: the bucket's list head.
 */
struct hlist_head *sp_stable_bucket(struct sp_stable_table *t, u32 hash)
{
	return &t->buckets[hash_32(hash, t->bits)];
}

/* Double the buckets when the table is twice as full as it has buckets. */
static void sp_stable_grow(struct sp_stable_table *t)
{
	unsigned int bits = t->bits + 1;
	struct hlist_head *new;
	struct hlist_node *tmp;
	struct sp_knode *node;
	unsigned long i;

	new = kvcalloc(1UL << bits, sizeof(*new), GFP_KERNEL | __GFP_NOWARN);
	if (!new)
		return;
	for (i = 0; i < (1UL << t->bits); i++)
		hlist_for_each_entry_safe(node, tmp, &t->buckets[i], link)
			hlist_add_head(&node->link,
				       &new[hash_32(node->hash, bits)]);
	kvfree(t->buckets);
	t->buckets = new;
	t->bits = bits;
}

/**
 * sp_stable_add - index a KSM page by its hash
 * @t: the table
 * @node: the KSM page's node, hash set
 */
void sp_stable_add(struct sp_stable_table *t, struct sp_knode *node)
{
	if (t->nr >= (2UL << t->bits))
		sp_stable_grow(t);
	hlist_add_head(&node->link, sp_stable_bucket(t, node->hash));
	t->nr++;
}

/**
 * sp_stable_del - take a KSM page out of the index
 * @t: the table
 * @node: the node, which must be in @t
 */
void sp_stable_del(struct sp_stable_table *t, struct sp_knode *node)
{
	hlist_del_init(&node->link);
	t->nr--;
}

/**
 * sp_stable_has_twin - is another KSM page of the same hash indexed?
 * @t: the table
 * @node: a node in @t
 *
 * Return: true if @node is one of a chain (as mainline would call it).
 */
bool sp_stable_has_twin(struct sp_stable_table *t, struct sp_knode *node)
{
	struct sp_knode *n;

	hlist_for_each_entry(n, sp_stable_bucket(t, node->hash), link)
		if (n != node && n->hash == node->hash)
			return true;
	return false;
}

/**
 * sp_stable_for_each - call @fn on every KSM page; @fn may remove it
 * @t: the table
 * @fn: the function
 */
void sp_stable_for_each(struct sp_stable_table *t,
			void (*fn)(struct sp_knode *node))
{
	struct hlist_node *tmp;
	struct sp_knode *node;
	unsigned long i;

	for (i = 0; t->buckets && i < (1UL << t->bits); i++) {
		hlist_for_each_entry_safe(node, tmp, &t->buckets[i], link)
			fn(node);
		cond_resched();
	}
}

/**
 * sp_index_init - draw the hash key and set up the tables at boot
 *
 * Return: 0 or -ENOMEM.
 */
int __init sp_index_init(void)
{
	sp_hash_init();
	return sp_stable_init(&sp_stable, 10);
}

#ifdef CONFIG_KSM_KUNIT_TEST
#include "tests/index-kunit.h"
#endif
