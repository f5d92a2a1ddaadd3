// SPDX-License-Identifier: GPL-2.0
/*
 * KSM index: the content hash of a page and the two tables that are
 * looked up by it, the stable table of KSM pages and the candidate table
 * of this pass.
 *
 * Layering (see samepage.h): calls into rmap.c.
 */

/**
 * DOC: Content index
 *
 * The hash is NH, the almost-universal hash of UMAC and Adiantum, over
 * every word of the page, and its 128-bit sum is folded to 64 bits by
 * SipHash under a second key. Both keys are drawn at boot and never leave
 * the kernel. Where the compiler has 128-bit integers (64-bit kernels) NH
 * takes the page as 64-bit words and multiplies keyed pairs of them into
 * a 128-bit sum, in one pass; elsewhere as 32-bit words into 64-bit sums,
 * in two passes whose keys are offset by one unit (NH-Toeplitz). Either
 * way, for any two different pages chosen without the key, the sums agree
 * with probability at most about 2^-64, and the fold adds about as much:
 * whatever a user writes, a page can only collide with another by luck,
 * so no user can fill a bucket on purpose, and natural collisions stay
 * negligible even at 2^30 KSM pages. A collision would cost time only: a
 * hit is always followed by a full comparison of the two pages, and a
 * bucket orders its equal keys by content (see the stable table below),
 * so even a flood of equal keys costs O(log n) compares per lookup.
 *
 * The same hash tells ksmd whether a page changed since its last visit:
 * one read of the page serves both.
 */
#include <linux/hash.h>
#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/rbtree.h>
#include <linux/siphash.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>

#include "../internal.h"
#include "samepage.h"

static siphash_key_t sp_fold_key __ro_after_init;
u64 sp_zero_hash __ro_after_init;

struct sp_cand_table sp_cands;
struct sp_stable_table sp_stable;

#ifdef CONFIG_ARCH_SUPPORTS_INT128
/* One pass over 64-bit words, keyed word by word: 2^-64-almost-universal. */
#define SP_NH_WORDS	(PAGE_SIZE / sizeof(u64))

static u64 sp_nh_key[SP_NH_WORDS] __ro_after_init;

static u64 sp_hash_words(const void *page)
{
	const u64 *m = page, *k = sp_nh_key;
	u128 a = 0, b = 0;
	unsigned int i;

	/* Two sums, so that two multiplies are in flight at a time. */
	for (i = 0; i < SP_NH_WORDS; i += 4) {
		a += (u128)(m[i] + k[i]) * (m[i + 1] + k[i + 1]);
		b += (u128)(m[i + 2] + k[i + 2]) * (m[i + 3] + k[i + 3]);
	}
	a += b;
	return siphash_2u64((u64)a, (u64)(a >> 64), &sp_fold_key);
}
#else
/* Units of four 32-bit words; the second pass's key is one unit on. */
#define SP_NH_UNIT	4
#define SP_NH_WORDS	(PAGE_SIZE / sizeof(u32))

static u32 sp_nh_key[SP_NH_WORDS + SP_NH_UNIT] __ro_after_init;

/* One NH pass over unit @m with key @k: two products of keyed pairs. */
static inline u64 sp_nh_unit(const u32 *m, const u32 *k)
{
	return (u64)(u32)(m[0] + k[0]) * (u32)(m[2] + k[2]) +
	       (u64)(u32)(m[1] + k[1]) * (u32)(m[3] + k[3]);
}

static u64 sp_hash_words(const void *page)
{
	const u32 *m = page, *k = sp_nh_key;
	u64 a = 0, b = 0;
	unsigned int i;

	for (i = 0; i < SP_NH_WORDS; i += SP_NH_UNIT) {
		a += sp_nh_unit(m + i, k + i);
		b += sp_nh_unit(m + i, k + i + SP_NH_UNIT);
	}
	return siphash_2u64(a, b, &sp_fold_key);
}
#endif

/**
 * sp_hash_page - the keyed hash of a page's content
 * @page: the page, referenced by the caller
 *
 * Reads every byte of the page once.
 *
 * Return: the hash, whose bits that a state word keeps are never
 * SP_HASH_NONE; equal pages always have equal hashes.
 */
u64 sp_hash_page(struct page *page)
{
	const void *m = kmap_local_page(page);
	u64 hash = sp_hash_words(m);

	kunmap_local(m);
	if ((hash & SP_ST_HASH_MASK) == SP_HASH_NONE)
		hash |= 1;
	return hash;
}

static void __init sp_hash_init(void)
{
	get_random_bytes(sp_nh_key, sizeof(sp_nh_key));
	get_random_bytes(&sp_fold_key, sizeof(sp_fold_key));
	sp_zero_hash = sp_hash_page(ZERO_PAGE(0));
}

/*
 * Comparing pages. Every merge compares two pages in full, and they are
 * nearly always equal, so the loop is built for equal pages: it reads
 * eight words a step and ORs their differences, one branch for 64 bytes
 * where memcmp() takes one for each word. Only where they differ is the
 * word compared byte by byte, for the order.
 */
#define SP_CMP_WORDS	(PAGE_SIZE / sizeof(unsigned long))
#define SP_CMP_STEP	8
static_assert(SP_CMP_WORDS % SP_CMP_STEP == 0);

/* The first word where @x and @y differ, or SP_CMP_WORDS. */
static unsigned int sp_first_diff(const unsigned long *x,
				  const unsigned long *y)
{
	unsigned int i, j;

	for (i = 0; i < SP_CMP_WORDS; i += SP_CMP_STEP) {
		if ((x[i] ^ y[i]) | (x[i + 1] ^ y[i + 1]) |
		    (x[i + 2] ^ y[i + 2]) | (x[i + 3] ^ y[i + 3]) |
		    (x[i + 4] ^ y[i + 4]) | (x[i + 5] ^ y[i + 5]) |
		    (x[i + 6] ^ y[i + 6]) | (x[i + 7] ^ y[i + 7]))
			break;
	}
	if (i == SP_CMP_WORDS)
		return i;
	for (j = i; x[j] == y[j]; j++)
		;
	return j;
}

/**
 * sp_page_cmp - compare the bytes of two pages, as memcmp() orders them
 * @a: a page
 * @b: another page
 *
 * Return: 0 if they are equal, else less or more than 0 as memcmp().
 */
int sp_page_cmp(struct page *a, struct page *b)
{
	const unsigned long *x = kmap_local_page(a);
	const unsigned long *y = kmap_local_page(b);
	unsigned int i = sp_first_diff(x, y);
	int ret = 0;

	/* Every byte before word @i is equal: that word decides. */
	if (i < SP_CMP_WORDS)
		ret = memcmp(&x[i], &y[i], sizeof(*x));
	kunmap_local(y);
	kunmap_local(x);
	return ret;
}

/*
 * The candidate table: open addressing with linear probing, in two
 * arrays. An entry's location is a loc (sp_loc()): slot id and virtual
 * page number in a 64-bit word. Its mark is 16 bits: the last pass it
 * is good for (an epoch) and the low eight bits of the hash, so that most
 * probes that cannot match are refused without looking further. An entry
 * whose epoch is past is empty: a new pass empties the table by moving to
 * the next epoch, and the marks are renumbered only when the epochs wrap
 * around, once in about 240 passes (sp_cand_rebase()). An entry of a
 * live epoch with slot id 0 (SP_CE_DEAD) is one whose candidate was found
 * gone: it keeps the probe sequences that pass it intact.
 *
 * ksmd's candidates are good for the pass that found them. A merge on
 * request's are good for SP_CE_LASTS passes: the next request, from the
 * next instance of an image, may come after ksmd began a pass or two,
 * and should still find them. They may have changed since: the pairing
 * checks the candidate's state word and compares the pages in full, so
 * a stale one costs a look, never content.
 */
#define SP_CE_DEAD	BIT_ULL(SP_SLOT_ID_BITS)	/* narrow, id 0 */
#define SP_CE_EPOCHS	255
/* Hits on one hash worth confirming: past this, collisions are an attack. */
#define SP_PROBE_HITS	8

/*
 * The place of @key in a table of 2^@bits places (@bits from 1 to 63):
 * the top @bits bits of the key times the golden ratio, as hash_64()
 * gives, but with no cap at 32 bits, so that a table of 2^33 places or
 * more uses all of them.
 */
static unsigned long sp_index_of(u64 key, unsigned int bits)
{
	return (unsigned long)((key * GOLDEN_RATIO_64) >> (64 - bits));
}

static u16 sp_ce_mark(u16 until, u64 hash)
{
	/* The low bits: the position comes from the product of them all. */
	return (until << 8) | (u8)hash;
}

/*
 * Epochs only grow between two clearings of the marks, and no entry is
 * written good for a pass past the next SP_CE_LASTS: an epoch not yet
 * past is a live one.
 */
static bool sp_ce_live(struct sp_cand_table *t, unsigned long pos)
{
	return (t->marks[pos] >> 8) >= t->epoch;
}

static unsigned long sp_ce_pos(struct sp_cand_table *t, u64 hash)
{
	return sp_index_of(hash, t->bits);
}

/* Replace the arrays by zeroed ones of 2^@bits entries; false if none. */
static bool sp_cand_alloc(struct sp_cand_table *t, unsigned int bits)
{
	u64 *locs = kvcalloc(1UL << bits, sizeof(*locs),
			     GFP_KERNEL | __GFP_NOWARN);
	u16 *marks = kvcalloc(1UL << bits, sizeof(*marks),
			      GFP_KERNEL | __GFP_NOWARN);

	if (!locs || !marks) {
		kvfree(locs);
		kvfree(marks);
		return false;
	}
	kvfree(t->locs);
	kvfree(t->marks);
	t->locs = locs;
	t->marks = marks;
	t->bits = bits;
	t->epoch = 1;
	t->used = 0;
	memset(t->lasting, 0, sizeof(t->lasting));
	return true;
}

/*
 * The last epoch from which an entry can be made good for SP_CE_LASTS
 * passes without passing SP_CE_EPOCHS, the most a mark holds.
 */
#define SP_CE_LAST_FULL	(SP_CE_EPOCHS - SP_CE_LASTS + 1)

/*
 * Number the epochs of @t from 1 again, keeping its live entries and
 * what each is good for; the dead ones are cleared. Once in about 240
 * passes: a pass over the marks.
 */
static void sp_cand_rebase(struct sp_cand_table *t)
{
	unsigned int shift = t->epoch - 1, until, i;
	unsigned long lasting[SP_CE_LASTS];
	unsigned long pos;

	/* A table may have 2^27 marks and more: a pause every 64 KiB. */
	for (pos = 0; pos < 1UL << t->bits; pos++) {
		until = t->marks[pos] >> 8;
		t->marks[pos] = until < t->epoch ? 0 :
				sp_ce_mark(until - shift, t->marks[pos]);
		if (!(pos % SZ_32K))
			cond_resched();
	}
	/* An entry good until u is counted at u modulo SP_CE_LASTS. */
	for (i = 0; i < SP_CE_LASTS; i++)
		lasting[(i + SP_CE_LASTS - shift % SP_CE_LASTS) %
			SP_CE_LASTS] = t->lasting[i];
	memcpy(t->lasting, lasting, sizeof(lasting));
	t->epoch = 1;
}

/*
 * Move @t to epoch @epoch: every entry good only for an earlier pass is
 * empty from now on. Return the entries that stay.
 */
static unsigned long sp_cand_to_epoch(struct sp_cand_table *t,
				      unsigned int epoch)
{
	unsigned int i;

	for (; t->epoch < epoch; t->epoch++)
		t->lasting[t->epoch % SP_CE_LASTS] = 0;
	t->used = 0;
	for (i = 0; i < SP_CE_LASTS; i++)
		t->used += t->lasting[i];
	/*
	 * Before an entry added now could not be made good for all its
	 * passes: a merge on request's candidates must outlive the wrap.
	 */
	if (t->epoch > SP_CE_LAST_FULL)
		sp_cand_rebase(t);
	return t->used;
}

/**
 * sp_cand_reset - empty the candidate table for a new pass
 * @t: the table
 *
 * The table is sized for what the last pass counted in t->want: the pages
 * it found unchanged and looked up, and those it saw for the first time or
 * changed, which may be unchanged at this pass's visit; not the merged
 * ones. That is at most a load of two thirds, where a probe that finds
 * nothing reads five marks on average, all of them in one or two cache
 * lines; a table twice that size would cost fifteen bytes more a page
 * (an entry is ten) for about a third of those reads. The table is
 * reallocated only when that size doubles or falls to a quarter, and not
 * while a merge on request's candidates are still good. When a larger
 * table cannot be had, the old one is kept and fewer pages become
 * candidates.
 */
void sp_cand_reset(struct sp_cand_table *t)
{
	unsigned int bits = max_t(unsigned int, 10,
				  order_base_2(t->want + t->want / 2 + 1));

	t->want = 0;
	if (t->locs && sp_cand_to_epoch(t, t->epoch + 1))
		return;
	if (!t->locs || bits > t->bits || bits + 1 < t->bits)
		sp_cand_alloc(t, bits);
}

/**
 * sp_cand_grow - room for @n more candidates, for a merge on request
 * @t: the table
 * @n: the pages a request may still add
 * @old: where the table that a larger one replaces goes
 *
 * A pass sizes the table for what the pass before it saw, and with ksmd
 * stopped there may be no table at all; a merge on request (request.c)
 * can bring more pages than that between two passes. The table then
 * grows to twice what they need at the load sp_cand_reset() allows, so
 * that requests that follow one another (instances of one image, each
 * loaded and merged in turn) seldom regrow it. The larger table keeps
 * the epoch of the one it replaces, which goes to @old: an entry keeps
 * only eight bits of its key, too few to place it again, so the caller
 * places each live one (sp_cand_next()) again under the key its page's
 * state word gives (sp_cand_place()), then frees @old. Growing costs
 * that once per doubling: O(1) a candidate added.
 *
 * Return: true if the table grew, and @old holds the replaced one; false
 * if it had room, or no larger table could be had (it stays as it was,
 * and fewer pages become candidates).
 */
bool sp_cand_grow(struct sp_cand_table *t, unsigned long n,
		  struct sp_cand_table *old)
{
	unsigned long need = t->used + n;
	struct sp_cand_table grown = { };

	if (t->locs && t->epoch && 3 * need <= 2UL << t->bits)
		return false;
	if (!sp_cand_alloc(&grown, max_t(unsigned int, 10,
					 order_base_2(3 * need))))
		return false;
	if (t->locs && t->epoch)
		grown.epoch = t->epoch;
	grown.want = t->want;
	*old = *t;
	*t = grown;
	return true;
}

/**
 * sp_cand_next - the next live entry of a table, from *@pos on
 * @t: the table, which sp_cand_grow() replaced
 * @pos: where to look from; moved past the entry returned
 * @loc: the entry's loc
 * @until: the last epoch it is good for
 *
 * Return: false past the last one.
 */
bool sp_cand_next(struct sp_cand_table *t, unsigned long *pos, u64 *loc,
		  unsigned int *until)
{
	for (; t->locs && *pos < 1UL << t->bits; (*pos)++) {
		if (!sp_ce_live(t, *pos) || t->locs[*pos] == SP_CE_DEAD)
			continue;
		*loc = t->locs[*pos];
		*until = t->marks[*pos] >> 8;
		(*pos)++;
		return true;
	}
	return false;
}

/**
 * sp_cand_place - put an entry of a replaced table into @t
 * @t: the table that sp_cand_grow() grew
 * @key: the key the entry was added under
 * @loc: its loc
 * @until: the last epoch it is good for, from sp_cand_next()
 *
 * The grown table was sized for the entries of the old one and more, so
 * a free entry is always found.
 */
void sp_cand_place(struct sp_cand_table *t, u64 key, u64 loc,
		   unsigned int until)
{
	unsigned long mask = (1UL << t->bits) - 1;
	unsigned long pos = sp_ce_pos(t, key);

	if (WARN_ON_ONCE(4 * (t->used + 1) > 3UL << t->bits))
		return;
	while (sp_ce_live(t, pos))
		pos = (pos + 1) & mask;
	t->locs[pos] = loc;
	t->marks[pos] = sp_ce_mark(until, key);
	t->used++;
	if (until > t->epoch)
		t->lasting[until % SP_CE_LASTS]++;
}

/**
 * sp_cand_clear - forget every candidate, keeping the table's size
 * @t: the table
 */
void sp_cand_clear(struct sp_cand_table *t)
{
	if (t->locs)
		sp_cand_to_epoch(t, t->epoch + SP_CE_LASTS);
}

/**
 * sp_cand_free - release the memory of a candidate table
 * @t: the table
 */
void sp_cand_free(struct sp_cand_table *t)
{
	kvfree(t->locs);
	kvfree(t->marks);
	memset(t, 0, sizeof(*t));
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

	if (READ_ONCE(sp_cands.locs))
		cands = (sizeof(u64) + sizeof(u16)) << READ_ONCE(sp_cands.bits);
	return cands + (sizeof(struct rb_root) << READ_ONCE(sp_stable.bits));
}

/**
 * sp_probe_start - begin a lookup of @hash in the candidate table
 * @p: the probe state
 * @t: the table
 * @hash: the content hash looked for
 */
void sp_probe_start(struct sp_probe *p, struct sp_cand_table *t, u64 hash)
{
	p->t = t;
	p->hash = hash;
	p->seen = 0;
	p->pos = t->locs && t->epoch ? sp_ce_pos(t, hash) : 0;
	t->want++;
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

	if (!t->locs || !t->epoch)
		return false;
	mask = (1UL << t->bits) - 1;
	for (; sp_ce_live(t, p->pos); p->pos = (p->pos + 1) & mask) {
		e = t->locs[p->pos];
		if (e == SP_CE_DEAD || (u8)t->marks[p->pos] != (u8)p->hash)
			continue;
		if (++p->seen > SP_PROBE_HITS)
			return false;
		*id = sp_loc_id(e);
		*vpn = sp_loc_vpn(e);
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

	if (WARN_ON_ONCE(!p->seen || !sp_ce_live(t, last)))
		return;
	t->locs[last] = SP_CE_DEAD;
	p->seen--;
}

/**
 * sp_probe_renew - keep the candidate sp_probe_next() returned last
 * @p: the probe state
 * @lasting: make it good for the next SP_CE_LASTS passes too, as
 *	sp_probe_insert() would a new one
 *
 * For the page that looks itself up, visited again in the epoch of its
 * entry (a merge on request, or ksmd's walk rewound after a split): its
 * entry stays the only one, so that a page requested again and again
 * costs the table one entry.
 */
void sp_probe_renew(struct sp_probe *p, bool lasting)
{
	struct sp_cand_table *t = p->t;
	unsigned long last = (p->pos - 1) & ((1UL << t->bits) - 1);
	unsigned int until = t->marks[last] >> 8;
	unsigned int want = t->epoch;

	if (lasting)
		want = min(want + SP_CE_LASTS - 1, SP_CE_EPOCHS);
	if (WARN_ON_ONCE(!p->seen || !sp_ce_live(t, last)) || want <= until)
		return;
	if (until > t->epoch)
		t->lasting[until % SP_CE_LASTS]--;
	t->lasting[want % SP_CE_LASTS]++;
	t->marks[last] = sp_ce_mark(want, t->marks[last]);
}

/**
 * sp_probe_insert - add a candidate where a finished probe stopped
 * @p: the probe state, after sp_probe_next() returned false
 * @id: slot id of the candidate
 * @vpn: its virtual page number
 * @lasting: a merge on request's: good for the next SP_CE_LASTS passes,
 *	not only this one
 *
 * Return: true if the candidate was added; false if it cannot be encoded,
 * the probe gave up, or the table is full enough.
 */
bool sp_probe_insert(struct sp_probe *p, unsigned int id, unsigned long vpn,
		     bool lasting)
{
	struct sp_cand_table *t = p->t;
	u64 loc = sp_loc(id, vpn);
	unsigned int until = t->epoch;

	if (!t->locs || !t->epoch || !loc)
		return false;
	if (p->seen > SP_PROBE_HITS || sp_ce_live(t, p->pos))
		return false;
	if (4 * (t->used + 1) > 3UL << t->bits)
		return false;
	if (lasting) {
		until = min(until + SP_CE_LASTS - 1, SP_CE_EPOCHS);
		t->lasting[until % SP_CE_LASTS]++;
	}
	t->locs[p->pos] = loc;
	t->marks[p->pos] = sp_ce_mark(until, p->hash);
	t->used++;
	return true;
}

/*
 * The stable table: an array of buckets by the key's hash, each a
 * red-black tree of KSM pages ordered by key, then domain, then content.
 * Keys are keyed hashes (46 bits on 64-bit, 64 on 32-bit), so equal keys
 * of different content are a matter of luck; but should a bucket ever
 * fill with one key, its content order still keeps every lookup at
 * O(log n) page compares. A node's place does not change while it is
 * indexed: the content of a KSM page cannot change.
 *
 * KSM pages of equal content and domain beyond the first (more than
 * max_page_sharing mappings, or on another NUMA node) are "dups" in a
 * list on the one in the tree, their "head": together a "chain", as
 * stable_node_chains and stable_node_dups count them. The table counts
 * chains and their pages as they form and break, so that reading those
 * two files costs nothing.
 *
 * A node met stale (its folio gone) during a walk is taken out of the
 * table onto its list of stale nodes, which knode.c frees with their
 * sharers (sp_knode_reap()); the walk then starts again from the root.
 * Each restart takes a node out, so walks end.
 */
#define SP_STABLE_MIN_BITS	10

/* Page compares made by walks of the stable table (for the KUnit test). */
static unsigned long sp_stable_compares;

static struct rb_root *sp_stable_root(struct sp_stable_table *t, u64 key)
{
	return &t->buckets[sp_index_of(key, t->bits)];
}

/* Order of (@key, @dom) against node @n, before content. */
static int sp_order(u64 key, u64 dom, const struct sp_knode *n)
{
	if (key != n->key)
		return key < n->key ? -1 : 1;
	if (dom != n->dom)
		return dom < n->dom ? -1 : 1;
	return 0;
}

static int sp_stable_cmp(struct page *a, struct page *b)
{
	sp_stable_compares++;
	return sp_page_cmp(a, b);
}

/* Is @n the only head of its key and domain? They sit side by side. */
static bool sp_stable_alone(struct sp_knode *n)
{
	struct rb_node *prev = rb_prev(&n->rb), *next = rb_next(&n->rb);

	return (!prev || sp_order(n->key, n->dom,
				  rb_entry(prev, struct sp_knode, rb))) &&
	       (!next || sp_order(n->key, n->dom,
				  rb_entry(next, struct sp_knode, rb)));
}

static void sp_chain_del(struct sp_stable_table *t, struct sp_knode *node)
{
	struct sp_knode *head = node->head;

	hlist_del(&node->dup);
	if (hlist_empty(&head->dups)) {
		t->chains--;
		t->dups -= 2;
	} else {
		t->dups--;
	}
}

/*
 * Take @node out of @t; a head with dups gives its place to one of them,
 * which has its content.
 */
static void sp_stable_unlink(struct sp_stable_table *t, struct sp_knode *node)
{
	struct sp_knode *d, *x;

	if (node->place == SP_KN_DUP) {
		sp_chain_del(t, node);
	} else if (hlist_empty(&node->dups)) {
		rb_erase(&node->rb, sp_stable_root(t, node->key));
	} else {
		d = hlist_entry(node->dups.first, struct sp_knode, dup);
		sp_chain_del(t, d);
		hlist_move_list(&node->dups, &d->dups);
		hlist_for_each_entry(x, &d->dups, dup)
			x->head = d;
		/* d's list links are done with: its tree links take them. */
		rb_replace_node(&node->rb, &d->rb,
				sp_stable_root(t, node->key));
		d->place = SP_KN_HEAD;
	}
	node->place = SP_KN_NONE;
	t->nr--;
}

/* Take @node, whose folio has gone, out of @t onto its stale list. */
static void sp_stable_set_stale(struct sp_stable_table *t,
				struct sp_knode *node)
{
	sp_stable_unlink(t, node);
	hlist_add_head(&node->dup, &t->stale);
	node->place = SP_KN_STALE;
}

/*
 * Walk the bucket of @key for the head whose content is @page's: return
 * it, or NULL with the link where a new head goes in *@linkp and its
 * parent in *@parentp, or ERR_PTR(-EAGAIN) after a stale node was taken
 * out.
 * With @trust, the only head of @key and @dom is returned without a
 * compare: the caller compares anyway.
 */
static struct sp_knode *sp_stable_walk(struct sp_stable_table *t, u64 key,
				       u64 dom, struct page *page, bool trust,
				       struct rb_node ***linkp,
				       struct rb_node **parentp)
{
	struct rb_node **link = &sp_stable_root(t, key)->rb_node;
	struct rb_node *parent = NULL;
	struct folio *folio;
	struct sp_knode *n;
	int cmp;

	while (*link) {
		parent = *link;
		n = rb_entry(parent, struct sp_knode, rb);
		cmp = sp_order(key, dom, n);
		if (!cmp && trust && sp_stable_alone(n))
			return n;
		if (!cmp) {
			folio = sp_node_folio_try(n, false);
			if (!folio) {
				sp_stable_set_stale(t, n);
				return ERR_PTR(-EAGAIN);
			}
			cmp = sp_stable_cmp(page, folio_page(folio, 0));
			folio_put(folio);
			if (!cmp)
				return n;
		}
		link = cmp < 0 ? &parent->rb_left : &parent->rb_right;
	}
	*linkp = link;
	*parentp = parent;
	return NULL;
}

/**
 * sp_stable_find - the KSM pages of a page's content
 * @t: the table
 * @key: the page's index key
 * @dom: the merge domain looked in
 * @page: the page, referenced
 *
 * The pages are compared only where two heads share the key and domain.
 * The only head of a key is returned uncompared: a keyed hash of 46 bits
 * or more makes another content under that key a matter of 2^-46 luck,
 * and the merge compares the pages in full, write-protected, before it
 * maps the KSM page; so a wrong head would cost a failed merge, never
 * content.
 * Stale nodes met on the way are taken out, for sp_knode_reap().
 * Called with sp_mutex held.
 *
 * Return: the head of the KSM pages whose content is @page's, or NULL.
 */
struct sp_knode *sp_stable_find(struct sp_stable_table *t, u64 key, u64 dom,
				struct page *page)
{
	struct rb_node **link, *parent;
	struct sp_knode *head;

	do {
		head = sp_stable_walk(t, key, dom, page, true, &link, &parent);
	} while (IS_ERR(head));
	return head;
}

/* Hang @node on @head as one more KSM page of its content. */
static void sp_chain_add(struct sp_stable_table *t, struct sp_knode *head,
			 struct sp_knode *node)
{
	if (hlist_empty(&head->dups)) {
		t->chains++;
		t->dups += 2;
	} else {
		t->dups++;
	}
	node->head = head;
	hlist_add_head(&node->dup, &head->dups);
	node->place = SP_KN_DUP;
}

/* Put @node in @root after every node of its key and domain. */
static void sp_stable_append(struct rb_root *root, struct sp_knode *node)
{
	struct rb_node **link = &root->rb_node, *parent = NULL;

	while (*link) {
		parent = *link;
		if (sp_order(node->key, node->dom,
			     rb_entry(parent, struct sp_knode, rb)) < 0)
			link = &parent->rb_left;
		else
			link = &parent->rb_right;
	}
	rb_link_node(&node->rb, parent, link);
	rb_insert_color(&node->rb, root);
}

/*
 * Move every head to a table of 2^@bits buckets. Heads leave each old
 * bucket in order and are appended in the new one: heads of one key
 * share their bucket at any size, so their content order is kept
 * without a page compare.
 */
static void sp_stable_resize(struct sp_stable_table *t, unsigned int bits)
{
	struct rb_root *new;
	struct rb_node *rb;
	unsigned long i;

	new = kvcalloc(1UL << bits, sizeof(*new), GFP_KERNEL | __GFP_NOWARN);
	if (!new)
		return;
	for (i = 0; i < (1UL << t->bits); i++) {
		while ((rb = rb_first(&t->buckets[i]))) {
			struct sp_knode *n = rb_entry(rb, struct sp_knode, rb);

			rb_erase(rb, &t->buckets[i]);
			sp_stable_append(&new[sp_index_of(n->key, bits)], n);
		}
		cond_resched();
	}
	kvfree(t->buckets);
	t->buckets = new;
	t->bits = bits;
	t->sweep = 0;
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
	memset(t, 0, sizeof(*t));
	t->buckets = kvcalloc(1UL << bits, sizeof(*t->buckets), GFP_KERNEL);
	if (!t->buckets)
		return -ENOMEM;
	t->bits = bits;
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
 * sp_stable_add - index a new KSM page
 * @t: the table
 * @node: its node: key and domain set, not in the table
 * @kpage: the KSM page, whose content the node stands for
 *
 * The node becomes a head, or a dup of the head of its content. The table
 * doubles its buckets when it holds twice as many nodes.
 */
void sp_stable_add(struct sp_stable_table *t, struct sp_knode *node,
		   struct page *kpage)
{
	struct rb_node **link, *parent;
	struct sp_knode *head;

	if (t->nr >= (2UL << t->bits))
		sp_stable_resize(t, t->bits + 1);
	INIT_HLIST_HEAD(&node->dups);
	do {
		head = sp_stable_walk(t, node->key, node->dom, kpage, false,
				      &link, &parent);
	} while (IS_ERR(head));
	if (head) {
		sp_chain_add(t, head, node);
	} else {
		rb_link_node(&node->rb, parent, link);
		rb_insert_color(&node->rb, sp_stable_root(t, node->key));
		node->place = SP_KN_HEAD;
	}
	t->nr++;
}

/**
 * sp_stable_del - take a KSM page out of the index
 * @t: the table
 * @node: the node: in @t, on its list of stale nodes, or in neither
 *
 * A head with dups gives its place to one of them, which has its content.
 */
void sp_stable_del(struct sp_stable_table *t, struct sp_knode *node)
{
	switch (node->place) {
	case SP_KN_NONE:
		break;
	case SP_KN_STALE:
		hlist_del(&node->dup);
		node->place = SP_KN_NONE;
		break;
	default:
		sp_stable_unlink(t, node);
	}
}

/**
 * sp_stable_pop_stale - the next node a walk found stale
 * @t: the table
 *
 * Return: a node taken off @t's list of stale nodes, or NULL.
 */
struct sp_knode *sp_stable_pop_stale(struct sp_stable_table *t)
{
	struct sp_knode *node;

	if (hlist_empty(&t->stale))
		return NULL;
	node = hlist_entry(t->stale.first, struct sp_knode, dup);
	hlist_del(&node->dup);
	node->place = SP_KN_NONE;
	return node;
}

/*
 * Call @fn on the nodes of bucket @i: each head's dups, then the head.
 * @fn may take the node it is given out of the table, and no other.
 * Returns the number of nodes.
 */
static unsigned long sp_stable_bucket_each(struct sp_stable_table *t,
					   unsigned long i,
					   void (*fn)(struct sp_knode *node))
{
	struct rb_node *rb = rb_first(&t->buckets[i]), *next;
	struct hlist_node *tmp;
	struct sp_knode *head, *d;
	unsigned long n = 0;

	for (; rb; rb = next) {
		/* Erasing or replacing @head leaves its successor in place. */
		next = rb_next(rb);
		head = rb_entry(rb, struct sp_knode, rb);
		hlist_for_each_entry_safe(d, tmp, &head->dups, dup) {
			fn(d);
			n++;
		}
		fn(head);
		n++;
	}
	return n;
}

/**
 * sp_stable_for_each - call @fn on every KSM page; @fn may remove it
 * @t: the table
 * @fn: the function; it may take the node it is given out of the table
 */
void sp_stable_for_each(struct sp_stable_table *t,
			void (*fn)(struct sp_knode *node))
{
	unsigned long i;

	for (i = 0; t->buckets && i < (1UL << t->bits); i++) {
		sp_stable_bucket_each(t, i, fn);
		cond_resched();
	}
}

/**
 * sp_stable_sweep - call @fn on the next nodes of the table, a few a time
 * @t: the table
 * @budget: nodes to look at, at least (whole buckets are taken)
 * @fn: the function; it may take the node it is given out of the table
 *
 * Successive calls go round the table, bucket by bucket, so that each
 * node is looked at once a round whatever the table's size, without a
 * walk of everything at once. At the end of a round a table that holds
 * fewer nodes than an eighth of its buckets halves them.
 *
 * Return: true when this call ended a round.
 */
bool sp_stable_sweep(struct sp_stable_table *t, unsigned long budget,
		     void (*fn)(struct sp_knode *node))
{
	unsigned long done = 0;

	while (done < budget && t->sweep < (1UL << t->bits))
		done += sp_stable_bucket_each(t, t->sweep++, fn) + 1;
	if (t->sweep < (1UL << t->bits))
		return false;
	if (t->bits > SP_STABLE_MIN_BITS && 8 * t->nr < (1UL << t->bits))
		sp_stable_resize(t, t->bits - 1);
	t->sweep = 0;
	return true;
}

/**
 * sp_index_init - draw the hash key and set up the tables at boot
 *
 * Return: 0 or -ENOMEM.
 */
int __init sp_index_init(void)
{
	sp_hash_init();
	return sp_stable_init(&sp_stable, SP_STABLE_MIN_BITS);
}

/**
 * sp_index_exit - undo sp_index_init(), when boot fails further on
 */
void __init sp_index_exit(void)
{
	sp_stable_destroy(&sp_stable);
}

#ifdef CONFIG_KSM_INDEX_KUNIT_TEST
#include "tests/index-kunit.h"
#endif
