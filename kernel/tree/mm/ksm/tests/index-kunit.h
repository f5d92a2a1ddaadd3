/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests of the KSM index: the page hash, the candidate table
 * and the stable table. Included from index.c.
 */
#include <kunit/test.h>

static void sp_test_hash(struct kunit *test)
{
	struct page *a = alloc_page(GFP_KERNEL | __GFP_ZERO);
	struct page *b = alloc_page(GFP_KERNEL | __GFP_ZERO);
	u64 *w;

	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);
	KUNIT_EXPECT_EQ(test, sp_hash_page(a), sp_zero_hash);
	KUNIT_EXPECT_EQ(test, sp_hash_page(a), sp_hash_page(b));

	/* Equal content, equal hash, whatever the content. */
	w = kmap_local_page(a);
	get_random_bytes(w, PAGE_SIZE);
	kunmap_local(w);
	copy_highpage(b, a);
	KUNIT_EXPECT_EQ(test, sp_hash_page(a), sp_hash_page(b));
	__free_page(a);
	__free_page(b);
}

static int sp_test_sign(int v)
{
	return (v > 0) - (v < 0);
}

/*
 * sp_page_cmp() orders as memcmp() does: a bit changed in the byte at
 * each offset of the page, the first and the last, and either side of
 * every step of eight words, gives memcmp()'s sign both ways round, and
 * equal pages give 0.
 */
static void sp_test_page_cmp(struct kunit *test)
{
	struct page *a = alloc_page(GFP_KERNEL);
	struct page *b = alloc_page(GFP_KERNEL);
	unsigned int off, wrong = 0;
	u8 *x, *y;

	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);
	x = kmap_local_page(a);
	get_random_bytes(x, PAGE_SIZE);
	kunmap_local(x);
	copy_highpage(b, a);
	KUNIT_EXPECT_EQ(test, sp_page_cmp(a, b), 0);
	for (off = 0; off < PAGE_SIZE; off++) {
		y = kmap_local_page(b);
		y[off] ^= 1 << (off % 8);
		kunmap_local(y);
		x = kmap_local_page(a);
		y = kmap_local_page(b);
		wrong += sp_test_sign(sp_page_cmp(a, b)) !=
			 sp_test_sign(memcmp(x, y, PAGE_SIZE)) ||
			 !sp_page_cmp(a, b) ||
			 sp_test_sign(sp_page_cmp(b, a)) !=
			 -sp_test_sign(sp_page_cmp(a, b));
		y[off] ^= 1 << (off % 8);
		kunmap_local(y);
		kunmap_local(x);
	}
	KUNIT_EXPECT_EQ(test, wrong, 0U);
	KUNIT_EXPECT_TRUE(test, sp_pages_same(a, b));
	__free_page(a);
	__free_page(b);
}

/*
 * A one-bit change anywhere in the page changes the hash: every bit of
 * every word, on a zero page and on a random one. Pages that differ in a
 * single bit must not collide, nor those whose differences cancel out of
 * running sums (+d, -2d, +d in three consecutive words).
 */
static void sp_test_hash_every_bit(struct kunit *test)
{
	struct page *page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	unsigned int i, same = 0, round;
	u64 h0, *w;

	KUNIT_ASSERT_NOT_NULL(test, page);
	w = kmap_local_page(page);
	for (round = 0; round < 2; round++) {
		if (round)
			get_random_bytes(w, PAGE_SIZE);
		h0 = sp_hash_page(page);
		for (i = 0; i < PAGE_SIZE * BITS_PER_BYTE; i++) {
			w[i / 64] ^= BIT_ULL(i % 64);
			same += sp_hash_page(page) == h0;
			w[i / 64] ^= BIT_ULL(i % 64);
		}
		for (i = 0; i + 2 < PAGE_SIZE / sizeof(u64); i++) {
			w[i] += i + 1;
			w[i + 1] -= 2 * (i + 1);
			w[i + 2] += i + 1;
			same += sp_hash_page(page) == h0;
			w[i] -= i + 1;
			w[i + 1] += 2 * (i + 1);
			w[i + 2] -= i + 1;
		}
		KUNIT_EXPECT_EQ(test, sp_hash_page(page), h0);
	}
	kunmap_local(w);
	KUNIT_EXPECT_EQ(test, same, 0U);
	__free_page(page);
}

/*
 * Distribution: the hashes of 4096 pages that differ in one word (a
 * counter at the end of a zero page) spread over 64 buckets, by the low
 * bits and by the high bits, each bucket within five times its share's
 * standard deviation (64 +- 40).
 */
static void sp_test_hash_spread(struct kunit *test)
{
	unsigned int *lo, *hi, i, n = 4096, b = 64;
	struct page *page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	u64 h, *w;

	lo = kunit_kcalloc(test, b, sizeof(*lo), GFP_KERNEL);
	hi = kunit_kcalloc(test, b, sizeof(*hi), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, page);
	KUNIT_ASSERT_NOT_NULL(test, lo);
	KUNIT_ASSERT_NOT_NULL(test, hi);
	w = kmap_local_page(page);
	for (i = 0; i < n; i++) {
		w[PAGE_SIZE / sizeof(u64) - 1] = i;
		h = sp_hash_page(page);
		lo[h % b]++;
		hi[h >> 58]++;
	}
	kunmap_local(w);
	for (i = 0; i < b; i++) {
		KUNIT_EXPECT_LT(test, lo[i], n / b + 40);
		KUNIT_EXPECT_GT(test, lo[i], n / b - 40);
		KUNIT_EXPECT_LT(test, hi[i], n / b + 40);
		KUNIT_EXPECT_GT(test, hi[i], n / b - 40);
	}
	__free_page(page);
}

/* A new pass, sized as if the last one had wanted @want entries. */
static void sp_test_cand_reset(struct sp_cand_table *t, unsigned long want)
{
	t->want = want;
	sp_cand_reset(t);
}

static void sp_test_cand_basic(struct kunit *test)
{
	struct sp_cand_table t = { };
	struct sp_probe p;
	unsigned long vpn;
	unsigned int id;

	sp_test_cand_reset(&t, 100);
	KUNIT_ASSERT_NOT_NULL(test, t.locs);
	KUNIT_EXPECT_GE(test, 1UL << t.bits, 150UL);
	/* Sized at a load of at most two thirds, and at least one third. */
	sp_test_cand_reset(&t, 2730);
	KUNIT_EXPECT_EQ(test, 1UL << t.bits, 1UL << 12);
	sp_test_cand_reset(&t, 2731);
	KUNIT_EXPECT_EQ(test, 1UL << t.bits, 1UL << 13);
	sp_test_cand_reset(&t, 1 << 16);
	KUNIT_EXPECT_EQ(test, 1UL << t.bits, 1UL << 17);
	sp_test_cand_reset(&t, 100);

	sp_probe_start(&p, &t, 0x1234);
	KUNIT_EXPECT_FALSE(test, sp_probe_next(&p, &id, &vpn));
	KUNIT_EXPECT_TRUE(test, sp_probe_insert(&p, 7, 0xabcde, false));

	sp_probe_start(&p, &t, 0x1234);
	KUNIT_ASSERT_TRUE(test, sp_probe_next(&p, &id, &vpn));
	KUNIT_EXPECT_EQ(test, id, 7U);
	KUNIT_EXPECT_EQ(test, vpn, 0xabcdeUL);
	KUNIT_EXPECT_FALSE(test, sp_probe_next(&p, &id, &vpn));

	/* A hash of another mark is never offered. */
	sp_probe_start(&p, &t, 0x1235);
	KUNIT_EXPECT_FALSE(test, sp_probe_next(&p, &id, &vpn));

	/* A new pass forgets every candidate. */
	sp_test_cand_reset(&t, 100);
	sp_probe_start(&p, &t, 0x1234);
	KUNIT_EXPECT_FALSE(test, sp_probe_next(&p, &id, &vpn));
	sp_cand_free(&t);
}

static void sp_test_cand_collisions(struct kunit *test)
{
	struct sp_cand_table t = { };
	unsigned int id, found = 0;
	struct sp_probe p;
	unsigned long vpn;
	int i;

	sp_test_cand_reset(&t, 1000);
	for (i = 1; i <= 3; i++) {
		sp_probe_start(&p, &t, 0xbeef);
		while (sp_probe_next(&p, &id, &vpn))
			;
		KUNIT_EXPECT_TRUE(test, sp_probe_insert(&p, i, 100 + i, false));
	}
	sp_probe_start(&p, &t, 0xbeef);
	while (sp_probe_next(&p, &id, &vpn)) {
		KUNIT_EXPECT_EQ(test, vpn, 100UL + id);
		found |= 1U << id;
	}
	KUNIT_EXPECT_EQ(test, found, 0xeU);
	sp_cand_free(&t);
}

/*
 * More stale candidates of one hash than a probe confirms: forgotten as
 * they are found gone, they keep no later candidate from being found.
 */
static void sp_test_cand_forget(struct kunit *test)
{
	struct sp_cand_table t = { };
	const unsigned int stale = 3 * SP_PROBE_HITS;
	unsigned int id, i, seen = 0;
	struct sp_probe p;
	unsigned long vpn;

	sp_test_cand_reset(&t, 1000);
	for (i = 1; i <= stale + 1; i++) {
		sp_probe_start(&p, &t, 0xfeed);
		while (sp_probe_next(&p, &id, &vpn))
			sp_probe_forget(&p);	/* every older one is gone */
		KUNIT_EXPECT_TRUE(test, sp_probe_insert(&p, i, i, false));
	}
	/* Only the last one is left to find, with nothing in the way. */
	sp_probe_start(&p, &t, 0xfeed);
	while (sp_probe_next(&p, &id, &vpn)) {
		KUNIT_EXPECT_EQ(test, id, stale + 1);
		seen++;
	}
	KUNIT_EXPECT_EQ(test, seen, 1U);
	/* Without forgetting, a probe gives up past SP_PROBE_HITS hits. */
	sp_test_cand_reset(&t, 1000);
	for (i = 1; i <= stale; i++) {
		sp_probe_start(&p, &t, 0xfeed);
		while (sp_probe_next(&p, &id, &vpn))
			;
		if (!sp_probe_insert(&p, i, i, false))
			break;
	}
	KUNIT_EXPECT_EQ(test, i, SP_PROBE_HITS + 2);	/* nine fit */
	sp_cand_free(&t);
}

/*
 * A new pass empties the table by its epoch, without clearing it; when
 * the epochs wrap around the marks are cleared, and no old entry comes
 * back.
 */
static void sp_test_cand_epochs(struct kunit *test)
{
	struct sp_cand_table t = { };
	unsigned int id, pass, seen;
	struct sp_probe p;
	unsigned long vpn;

	for (pass = 0; pass < 2 * SP_CE_EPOCHS + 10; pass++) {
		sp_test_cand_reset(&t, 100);
		sp_probe_start(&p, &t, 0xc0ffee);
		for (seen = 0; sp_probe_next(&p, &id, &vpn); seen++)
			;
		KUNIT_EXPECT_EQ(test, seen, 0U);
		KUNIT_EXPECT_TRUE(test, sp_probe_insert(&p, 1, pass, false));
		sp_probe_start(&p, &t, 0xc0ffee);
		KUNIT_ASSERT_TRUE(test, sp_probe_next(&p, &id, &vpn));
		KUNIT_EXPECT_EQ(test, vpn, (unsigned long)pass);
	}
	KUNIT_EXPECT_GE(test, t.epoch, 1U);
	KUNIT_EXPECT_LE(test, t.epoch, SP_CE_EPOCHS);
	sp_cand_free(&t);
}

/* How many candidates of @hash a probe finds in @t. */
static unsigned int sp_test_cand_count(struct sp_cand_table *t, u64 hash)
{
	struct sp_probe p;
	unsigned long vpn;
	unsigned int id, n = 0;

	sp_probe_start(&p, t, hash);
	while (sp_probe_next(&p, &id, &vpn))
		n++;
	return n;
}

/*
 * A merge on request's candidate is good for SP_CE_LASTS passes, ksmd's
 * for one; the table is not resized under a lasting one, and clearing it
 * forgets both kinds.
 */
static void sp_test_cand_lasting(struct kunit *test)
{
	struct sp_cand_table t = { };
	struct sp_probe p;
	unsigned int i;

	sp_test_cand_reset(&t, 100);
	sp_probe_start(&p, &t, 0xaa);
	KUNIT_EXPECT_TRUE(test, sp_probe_insert(&p, 1, 1, true));
	sp_probe_start(&p, &t, 0xbb);
	KUNIT_EXPECT_TRUE(test, sp_probe_insert(&p, 1, 2, false));
	for (i = 1; i < SP_CE_LASTS; i++) {
		sp_test_cand_reset(&t, 1 << 16);	/* would grow it */
		KUNIT_EXPECT_EQ(test, sp_test_cand_count(&t, 0xaa), 1U);
		KUNIT_EXPECT_EQ(test, sp_test_cand_count(&t, 0xbb), 0U);
		KUNIT_EXPECT_EQ(test, t.used, 1UL);
	}
	KUNIT_EXPECT_EQ(test, t.bits, 10U);
	sp_test_cand_reset(&t, 1 << 16);
	KUNIT_EXPECT_EQ(test, sp_test_cand_count(&t, 0xaa), 0U);
	KUNIT_EXPECT_EQ(test, t.used, 0UL);
	KUNIT_EXPECT_EQ(test, t.bits, 17U);

	sp_probe_start(&p, &t, 0xaa);
	KUNIT_EXPECT_TRUE(test, sp_probe_insert(&p, 1, 1, true));
	sp_cand_clear(&t);
	KUNIT_EXPECT_EQ(test, sp_test_cand_count(&t, 0xaa), 0U);
	KUNIT_EXPECT_EQ(test, t.used, 0UL);

	/*
	 * One added just before the epochs wrap lasts its passes all the
	 * same, across the renumbering; one of ksmd's still ends with its
	 * pass.
	 */
	while (t.epoch < SP_CE_LAST_FULL - 2)
		sp_test_cand_reset(&t, 1 << 16);
	sp_probe_start(&p, &t, 0xcc);
	KUNIT_EXPECT_TRUE(test, sp_probe_insert(&p, 1, 3, true));
	sp_probe_start(&p, &t, 0xdd);
	KUNIT_EXPECT_TRUE(test, sp_probe_insert(&p, 1, 4, false));
	for (i = 1; i < SP_CE_LASTS; i++) {
		sp_test_cand_reset(&t, 1 << 16);
		KUNIT_EXPECT_EQ(test, sp_test_cand_count(&t, 0xcc), 1U);
		KUNIT_EXPECT_EQ(test, sp_test_cand_count(&t, 0xdd), 0U);
		KUNIT_EXPECT_EQ(test, t.used, 1UL);
	}
	KUNIT_EXPECT_LT(test, t.epoch, SP_CE_LASTS + 1U);	/* renumbered */
	sp_test_cand_reset(&t, 1 << 16);
	KUNIT_EXPECT_EQ(test, sp_test_cand_count(&t, 0xcc), 0U);
	KUNIT_EXPECT_EQ(test, t.used, 0UL);
	sp_cand_free(&t);
}

/* @id and @vpn make a loc that gives them back, or (@fits false) none. */
static void sp_test_loc_is(struct kunit *test, unsigned int id, u64 vpn,
			   bool fits)
{
	u64 loc = sp_loc(id, vpn);

	if (!fits) {
		KUNIT_EXPECT_EQ(test, loc, 0ULL);
		return;
	}
	KUNIT_EXPECT_NE(test, loc, 0ULL);
	KUNIT_EXPECT_EQ(test, sp_loc_id(loc), id);
	KUNIT_EXPECT_EQ(test, (u64)sp_loc_vpn(loc), vpn);
}

/* The key of the test's candidate at @vpn. */
static u64 sp_test_grow_key(unsigned long vpn)
{
	return vpn * 0x9e3779b97f4a7c15ULL;
}

/* Does a probe for the key of @vpn offer the candidate at @vpn? */
static bool sp_test_grow_has(struct sp_cand_table *t, unsigned long vpn)
{
	struct sp_probe p;
	unsigned long v;
	unsigned int id;

	sp_probe_start(&p, t, sp_test_grow_key(vpn));
	while (sp_probe_next(&p, &id, &v))
		if (v == vpn)
			return true;
	return false;
}

/*
 * A grown table holds what the caller places again from the old one,
 * each good for the epochs it was: a merge on request's candidates
 * outlive the growth, and ksmd's still end with their pass.
 */
static void sp_test_cand_grow(struct kunit *test)
{
	struct sp_cand_table t = { }, old;
	unsigned long vpn, v, pos = 0, placed = 0, n = 600;
	unsigned int until, epoch;
	struct sp_probe p;
	unsigned int id;
	u64 loc;

	sp_test_cand_reset(&t, 100);
	for (vpn = 1; vpn <= n; vpn++) {
		sp_probe_start(&p, &t, sp_test_grow_key(vpn));
		while (sp_probe_next(&p, &id, &v))
			;
		KUNIT_ASSERT_TRUE(test, sp_probe_insert(&p, 1, vpn, vpn % 2));
	}
	KUNIT_EXPECT_FALSE(test, sp_cand_grow(&t, 10, &old));
	epoch = t.epoch;
	KUNIT_ASSERT_TRUE(test, sp_cand_grow(&t, 1000, &old));
	KUNIT_EXPECT_GT(test, t.bits, old.bits);
	KUNIT_EXPECT_EQ(test, t.epoch, epoch);
	KUNIT_EXPECT_EQ(test, t.used, 0UL);
	while (sp_cand_next(&old, &pos, &loc, &until)) {
		vpn = sp_loc_vpn(loc);
		KUNIT_EXPECT_EQ(test, until, vpn % 2 ? epoch + SP_CE_LASTS - 1 :
				epoch);
		sp_cand_place(&t, sp_test_grow_key(vpn), loc, until);
		placed++;
	}
	sp_cand_free(&old);
	KUNIT_EXPECT_EQ(test, placed, n);
	KUNIT_EXPECT_EQ(test, t.used, n);
	for (vpn = 1; vpn <= n; vpn++)
		KUNIT_EXPECT_TRUE(test, sp_test_grow_has(&t, vpn));
	/* The next pass keeps the lasting ones, in the grown table. */
	sp_test_cand_reset(&t, 100);
	KUNIT_EXPECT_EQ(test, t.used, n / 2);
	for (vpn = 1; vpn <= n; vpn++)
		KUNIT_EXPECT_EQ(test, sp_test_grow_has(&t, vpn), vpn % 2 == 1);
	sp_cand_free(&t);
}

/*
 * The boundaries of the two layouts of a loc: every id of the narrow one
 * below 2^35 pages, ids of 19 bits up to the top of 5-level user space.
 */
static void sp_test_loc_layouts(struct kunit *test)
{
	sp_test_loc_is(test, 0, 1, false);	/* no id, no loc */
	sp_test_loc_is(test, 1, 0, true);
	sp_test_loc_is(test, SP_SLOT_ID_MAX, 0, true);
	sp_test_loc_is(test, SP_SLOT_ID_MAX + 1, 0, false);
	sp_test_loc_is(test, SP_SLOT_ID_MAX,
		       min_t(u64, ULONG_MAX, BIT_ULL(SP_LOC_VPN_BITS) - 1),
		       true);
	if (BITS_PER_LONG == 32)
		return;	/* every page number is narrow */
	sp_test_loc_is(test, SP_SLOT_ID_MAX, BIT_ULL(SP_LOC_VPN_BITS), false);
	sp_test_loc_is(test, BIT(SP_LOC_WIDE_ID_BITS) - 1,
		       BIT_ULL(SP_LOC_VPN_BITS), true);
	sp_test_loc_is(test, BIT(SP_LOC_WIDE_ID_BITS) - 1, BIT_ULL(44) - 1,
		       true);
	sp_test_loc_is(test, BIT(SP_LOC_WIDE_ID_BITS), BIT_ULL(44) - 1, false);
	sp_test_loc_is(test, 1, BIT_ULL(SP_LOC_WIDE_VPN_BITS), false);
}

static void sp_test_cand_limits(struct kunit *test)
{
	struct sp_cand_table t = { };
	unsigned long n, vpn, added = 0;
	struct sp_probe p;
	unsigned int id;

	sp_test_cand_reset(&t, 0);
	/* Slot id 0 and locs neither layout holds are refused. */
	sp_probe_start(&p, &t, 1);
	KUNIT_EXPECT_FALSE(test, sp_probe_insert(&p, 0, 1, false));
	KUNIT_EXPECT_FALSE(test,
			   sp_probe_insert(&p, SP_SLOT_ID_MAX + 1, 1, false));
	/* The last id, at the top of narrow page numbers. */
	vpn = (unsigned long)min_t(u64, ULONG_MAX,
				   BIT_ULL(SP_LOC_VPN_BITS) - 1);
	KUNIT_EXPECT_TRUE(test, sp_probe_insert(&p, SP_SLOT_ID_MAX, vpn, false));
	sp_probe_start(&p, &t, 1);
	KUNIT_ASSERT_TRUE(test, sp_probe_next(&p, &id, &n));
	KUNIT_EXPECT_EQ(test, id, SP_SLOT_ID_MAX);
	KUNIT_EXPECT_EQ(test, n, vpn);
	sp_test_cand_reset(&t, 0);
	/* The table stops taking candidates at three quarters full. */
	for (n = 0; n < (1UL << t.bits); n++) {
		sp_probe_start(&p, &t, hash_32(n, 32));
		while (sp_probe_next(&p, &id, &vpn))
			;
		added += sp_probe_insert(&p, 1, n, false);
	}
	KUNIT_EXPECT_EQ(test, added, 3UL << t.bits >> 2);
	KUNIT_EXPECT_EQ(test, t.used, added);
	sp_cand_free(&t);
}

/* A KSM-like page for node @n: random content, ->mapping at @n. */
static struct page *sp_test_kpage(struct sp_knode *n, struct page *like)
{
	struct page *page = alloc_page(GFP_KERNEL);
	void *w;

	if (!page)
		return NULL;
	if (like) {
		copy_highpage(page, like);
	} else {
		w = kmap_local_page(page);
		get_random_bytes(w, PAGE_SIZE);
		kunmap_local(w);
	}
	n->kpfn = page_to_pfn(page);
	sp_folio_set_node(page_folio(page), n);
	return page;
}

static void sp_test_kpage_free(struct page *page)
{
	page_folio(page)->mapping = NULL;
	__free_page(page);
}

/*
 * Forced collisions: every node of one key and domain, as if the hash
 * were broken. The table still finds each page's node, and misses a new
 * content, in O(log n) page compares: at most twice the tree's height.
 * It keeps its order as it grows, and a head's dup takes its place.
 */
static void sp_test_stable_collisions(struct kunit *test)
{
	const unsigned int n = 256, most = 2 * (ilog2(n) + 1) + 1;
	struct sp_knode *nodes, extra = { .key = 42 };
	struct page **pages, *stray, *copy;
	struct sp_stable_table t;
	unsigned long before;
	unsigned int i, worst = 0;

	KUNIT_ASSERT_EQ(test, sp_stable_init(&t, 2), 0);
	nodes = kunit_kcalloc(test, n, sizeof(*nodes), GFP_KERNEL);
	pages = kunit_kcalloc(test, n, sizeof(*pages), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, nodes);
	KUNIT_ASSERT_NOT_NULL(test, pages);
	mutex_lock(&sp_mutex);
	for (i = 0; i < n; i++) {
		nodes[i].key = 42;
		pages[i] = sp_test_kpage(&nodes[i], NULL);
		if (!pages[i])
			break;
		before = sp_stable_compares;
		sp_stable_add(&t, &nodes[i], pages[i]);
		worst = max(worst, (unsigned int)(sp_stable_compares - before));
	}
	KUNIT_ASSERT_EQ(test, i, n);
	KUNIT_EXPECT_GT(test, t.bits, 2U);	/* it grew */
	KUNIT_EXPECT_EQ(test, t.nr, (unsigned long)n);
	KUNIT_EXPECT_EQ(test, t.chains, 0UL);
	for (i = 0; i < n; i++) {
		before = sp_stable_compares;
		KUNIT_EXPECT_PTR_EQ(test, sp_stable_find(&t, 42, 0, pages[i]),
				    &nodes[i]);
		worst = max(worst, (unsigned int)(sp_stable_compares - before));
		/* Another domain, or another key, is another place. */
		KUNIT_EXPECT_NULL(test, sp_stable_find(&t, 42, 1, pages[i]));
		KUNIT_EXPECT_NULL(test, sp_stable_find(&t, 43, 0, pages[i]));
	}
	stray = sp_test_kpage(&extra, NULL);
	KUNIT_ASSERT_NOT_NULL(test, stray);
	before = sp_stable_compares;
	KUNIT_EXPECT_NULL(test, sp_stable_find(&t, 42, 0, stray));
	worst = max(worst, (unsigned int)(sp_stable_compares - before));
	KUNIT_EXPECT_LE(test, worst, most);

	/* A second KSM page of node 0's content: a chain of two. */
	sp_test_kpage_free(stray);
	copy = sp_test_kpage(&extra, pages[0]);
	KUNIT_ASSERT_NOT_NULL(test, copy);
	sp_stable_add(&t, &extra, copy);
	KUNIT_EXPECT_EQ(test, t.chains, 1UL);
	KUNIT_EXPECT_EQ(test, t.dups, 2UL);
	KUNIT_EXPECT_PTR_EQ(test, sp_stable_find(&t, 42, 0, copy), &nodes[0]);
	/* The head goes: its dup heads the chain, found where it was. */
	sp_stable_del(&t, &nodes[0]);
	KUNIT_EXPECT_EQ(test, t.chains, 0UL);
	KUNIT_EXPECT_EQ(test, t.dups, 0UL);
	KUNIT_EXPECT_PTR_EQ(test, sp_stable_find(&t, 42, 0, pages[0]), &extra);
	for (i = 1; i < n; i++)
		KUNIT_EXPECT_PTR_EQ(test, sp_stable_find(&t, 42, 0, pages[i]),
				    &nodes[i]);
	sp_stable_del(&t, &extra);
	for (i = 1; i < n; i++)
		sp_stable_del(&t, &nodes[i]);
	mutex_unlock(&sp_mutex);
	KUNIT_EXPECT_EQ(test, t.nr, 0UL);
	sp_test_kpage_free(copy);
	for (i = 0; i < n; i++)
		sp_test_kpage_free(pages[i]);
	sp_stable_destroy(&t);
}

/* The sweep goes round every node, a budget a call, and ends rounds. */
static unsigned int sp_test_swept;

static void sp_test_count(struct sp_knode *node)
{
	sp_test_swept++;
}

static void sp_test_stable_sweep(struct kunit *test)
{
	const unsigned int n = 64;
	struct sp_stable_table t;
	struct sp_knode *nodes;
	struct page **pages;
	unsigned int i, calls = 0;
	unsigned long before;

	KUNIT_ASSERT_EQ(test, sp_stable_init(&t, SP_STABLE_MIN_BITS), 0);
	nodes = kunit_kcalloc(test, n, sizeof(*nodes), GFP_KERNEL);
	pages = kunit_kcalloc(test, n, sizeof(*pages), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, nodes);
	KUNIT_ASSERT_NOT_NULL(test, pages);
	mutex_lock(&sp_mutex);
	for (i = 0; i < n; i++) {
		nodes[i].key = get_random_u64();
		pages[i] = sp_test_kpage(&nodes[i], NULL);
		KUNIT_ASSERT_NOT_NULL(test, pages[i]);
		sp_stable_add(&t, &nodes[i], pages[i]);
	}
	/* The only head of a key is trusted: no compare, whatever the page. */
	before = sp_stable_compares;
	KUNIT_EXPECT_PTR_EQ(test, sp_stable_find(&t, nodes[0].key, 0, pages[1]),
			    &nodes[0]);
	KUNIT_EXPECT_EQ(test, sp_stable_compares, before);
	sp_test_swept = 0;
	while (!sp_stable_sweep(&t, 100, sp_test_count))
		calls++;
	KUNIT_EXPECT_EQ(test, sp_test_swept, n);
	/* 1024 buckets at about 100 a call (with the nodes in them). */
	KUNIT_EXPECT_GE(test, calls, 8U);
	KUNIT_EXPECT_LE(test, calls, 11U);
	for (i = 0; i < n; i++)
		sp_stable_del(&t, &nodes[i]);
	mutex_unlock(&sp_mutex);
	for (i = 0; i < n; i++)
		sp_test_kpage_free(pages[i]);
	sp_stable_destroy(&t);
}

static void sp_test_state_word(struct kunit *test)
{
	u64 hash = 0xfedcba9876543210ULL;
	unsigned long st = sp_st_make(hash, true, 9, 5);

	KUNIT_EXPECT_EQ(test, sp_st_hash(st), hash & SP_ST_HASH_MASK);
	KUNIT_EXPECT_TRUE(test, sp_st_hash_is(st, hash));
	KUNIT_EXPECT_FALSE(test, sp_st_hash_is(st, hash ^ 1));
	KUNIT_EXPECT_FALSE(test, sp_st_hash_is(st, hash ^ BIT_ULL(SP_ST_HASH_BITS - 1)));
	KUNIT_EXPECT_TRUE(test, sp_st_cand(st));
	KUNIT_EXPECT_EQ(test, sp_st_age(st), 9U);
	KUNIT_EXPECT_EQ(test, sp_st_skip(st), 5U);
	/* It fits an xarray value entry. */
	KUNIT_EXPECT_EQ(test, xa_to_value(xa_mk_value(st)), st);
	st = sp_st_make(~0ULL, false, 15, 15);
	KUNIT_EXPECT_FALSE(test, sp_st_cand(st));
	KUNIT_EXPECT_EQ(test, sp_st_age(st), 15U);
	KUNIT_EXPECT_EQ(test, sp_st_skip(st), 15U);
	KUNIT_EXPECT_EQ(test, xa_to_value(xa_mk_value(st)), st);
	/* Still visits saturate; they and the back-off level are carried. */
	st = sp_st_set_level(sp_st_set_still(sp_st_set_wp(st, true), 99), 3);
	KUNIT_EXPECT_EQ(test, sp_st_still(st), 15U);
	KUNIT_EXPECT_EQ(test, sp_st_level(st), 3U);
	KUNIT_EXPECT_EQ(test, sp_st_hash(st), SP_ST_HASH_MASK);
	KUNIT_EXPECT_EQ(test, sp_st_age(st), 15U);
	KUNIT_EXPECT_EQ(test, sp_st_skip(st), 15U);
	KUNIT_EXPECT_EQ(test, xa_to_value(xa_mk_value(st)), st);
	st = sp_st_make(hash, true, 0, 0) | (st & SP_ST_CARRY);
	KUNIT_EXPECT_TRUE(test, sp_st_wp(st));
	KUNIT_EXPECT_EQ(test, sp_st_still(st), 15U);
	KUNIT_EXPECT_EQ(test, sp_st_level(st), 3U);
	KUNIT_EXPECT_EQ(test, sp_st_age(st), 0U);
	st = sp_st_set_level(sp_st_set_still(st, 2), 1);
	KUNIT_EXPECT_EQ(test, sp_st_still(st), 2U);
	KUNIT_EXPECT_EQ(test, sp_st_level(st), 1U);
	KUNIT_EXPECT_TRUE(test, sp_st_hash_is(st, hash));
}

/* Table places use every bit asked for, past 32 too. */
static void sp_test_index_width(struct kunit *test)
{
	u64 key, max = 0;

	KUNIT_EXPECT_LT(test, sp_index_of(U64_MAX, 1), 2UL);
	if (BITS_PER_LONG < 64)
		kunit_skip(test, "a table of 2^32 places needs 64 bits");
	for (key = 1; key < 1000; key++)
		max = max_t(u64, max, sp_index_of(key, 40));
	KUNIT_EXPECT_LT(test, max, BIT_ULL(40));
	KUNIT_EXPECT_GE(test, max, BIT_ULL(39));
}

static struct kunit_case sp_index_cases[] = {
	KUNIT_CASE(sp_test_hash),
	KUNIT_CASE(sp_test_hash_every_bit),
	KUNIT_CASE(sp_test_hash_spread),
	KUNIT_CASE(sp_test_page_cmp),
	KUNIT_CASE(sp_test_cand_basic),
	KUNIT_CASE(sp_test_cand_collisions),
	KUNIT_CASE(sp_test_cand_forget),
	KUNIT_CASE(sp_test_cand_epochs),
	KUNIT_CASE(sp_test_cand_lasting),
	KUNIT_CASE(sp_test_cand_grow),
	KUNIT_CASE(sp_test_loc_layouts),
	KUNIT_CASE(sp_test_cand_limits),
	KUNIT_CASE(sp_test_stable_collisions),
	KUNIT_CASE(sp_test_stable_sweep),
	KUNIT_CASE(sp_test_state_word),
	KUNIT_CASE(sp_test_index_width),
	{}
};

static struct kunit_suite sp_index_suite = {
	.name = "ksm_index",
	.test_cases = sp_index_cases,
};

kunit_test_suite(sp_index_suite);
