/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests of the samepage index: the page hash, the candidate table
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
	KUNIT_EXPECT_EQ(test, sp_hash_page(a), sp_zero.hash);
	KUNIT_EXPECT_EQ(test, sp_hash_page(a), sp_hash_page(b));

	/* Every sampled word counts. */
	w = kmap_local_page(b);
	w[sp_sample_at[SP_SAMPLE_WORDS - 1]] = 0x5a5a;
	kunmap_local(w);
	KUNIT_EXPECT_NE(test, sp_hash_page(a), sp_hash_page(b));
	__free_page(a);
	__free_page(b);
}

/*
 * Pages that differ in one word, wherever it is (an id or a counter in a
 * mostly-zero page), have different hashes: none of them may crowd the
 * others out of the index.
 */
static void sp_test_hash_whole_page(struct kunit *test)
{
	struct page *page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	unsigned int i, same = 0;
	u32 zero;
	u64 *w;

	KUNIT_ASSERT_NOT_NULL(test, page);
	zero = sp_hash_page(page);
	for (i = 0; i < PAGE_SIZE / sizeof(u64); i++) {
		w = kmap_local_page(page);
		w[i] = i + 1;
		kunmap_local(w);
		same += sp_hash_page(page) == zero;
		w = kmap_local_page(page);
		w[i] = 0;
		kunmap_local(w);
	}
	KUNIT_EXPECT_EQ(test, same, 0U);
	__free_page(page);
}

static void sp_test_samples(struct kunit *test)
{
	unsigned int i;

	/* One word in each stride, all inside the page, in order. */
	for (i = 0; i < SP_SAMPLE_WORDS; i++) {
		KUNIT_EXPECT_GE(test, sp_sample_at[i], i * SP_STRIDE);
		KUNIT_EXPECT_LT(test, sp_sample_at[i], (i + 1) * SP_STRIDE);
	}
}

static void sp_test_cand_basic(struct kunit *test)
{
	struct sp_cand_table t = { };
	struct sp_probe p;
	unsigned long vpn;
	unsigned int id;

	sp_cand_reset(&t, 100);
	KUNIT_ASSERT_NOT_NULL(test, t.slots);
	KUNIT_EXPECT_GE(test, 1UL << t.bits, 200UL);

	sp_probe_start(&p, &t, 0x1234);
	KUNIT_EXPECT_FALSE(test, sp_probe_next(&p, &id, &vpn));
	KUNIT_EXPECT_TRUE(test, sp_probe_insert(&p, 7, 0xabcde));

	sp_probe_start(&p, &t, 0x1234);
	KUNIT_ASSERT_TRUE(test, sp_probe_next(&p, &id, &vpn));
	KUNIT_EXPECT_EQ(test, id, 7U);
	KUNIT_EXPECT_EQ(test, vpn, 0xabcdeUL);
	KUNIT_EXPECT_FALSE(test, sp_probe_next(&p, &id, &vpn));

	/* A different tag is never offered. */
	sp_probe_start(&p, &t, 0x1235);
	KUNIT_EXPECT_FALSE(test, sp_probe_next(&p, &id, &vpn));

	/* A new pass forgets every candidate. */
	sp_cand_reset(&t, 100);
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

	sp_cand_reset(&t, 1000);
	for (i = 1; i <= 3; i++) {
		sp_probe_start(&p, &t, 0xbeef);
		while (sp_probe_next(&p, &id, &vpn))
			;
		KUNIT_EXPECT_TRUE(test, sp_probe_insert(&p, i, 100 + i));
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

	sp_cand_reset(&t, 1000);
	for (i = 1; i <= stale + 1; i++) {
		sp_probe_start(&p, &t, 0xfeed);
		while (sp_probe_next(&p, &id, &vpn))
			sp_probe_forget(&p);	/* every older one is gone */
		KUNIT_EXPECT_TRUE(test, sp_probe_insert(&p, i, i));
	}
	/* Only the last one is left to find, with nothing in the way. */
	sp_probe_start(&p, &t, 0xfeed);
	while (sp_probe_next(&p, &id, &vpn)) {
		KUNIT_EXPECT_EQ(test, id, stale + 1);
		seen++;
	}
	KUNIT_EXPECT_EQ(test, seen, 1U);
	/* Without forgetting, a probe gives up past SP_PROBE_HITS hits. */
	sp_cand_reset(&t, 1000);
	for (i = 1; i <= stale; i++) {
		sp_probe_start(&p, &t, 0xfeed);
		while (sp_probe_next(&p, &id, &vpn))
			;
		if (!sp_probe_insert(&p, i, i))
			break;
	}
	KUNIT_EXPECT_EQ(test, i, SP_PROBE_HITS + 2);	/* nine fit */
	sp_cand_free(&t);
}

static void sp_test_cand_limits(struct kunit *test)
{
	u64 past_vpn = SP_CE_VPN_MAX + 1;
	struct sp_cand_table t = { };
	unsigned long n, vpn, added = 0;
	struct sp_probe p;
	unsigned int id;

	sp_cand_reset(&t, 0);
	/* Slot id 0 and page numbers past the encoding are refused. */
	sp_probe_start(&p, &t, 1);
	KUNIT_EXPECT_FALSE(test, sp_probe_insert(&p, 0, 1));
	KUNIT_EXPECT_FALSE(test, sp_probe_insert(&p, SP_CE_ID_MAX + 1, 1));
	/* On 32-bit every page number fits. */
	if (past_vpn <= ULONG_MAX)
		KUNIT_EXPECT_FALSE(test, sp_probe_insert(&p, 1, past_vpn));
	/* The table stops taking candidates at three quarters full. */
	for (n = 0; n < (1UL << t.bits); n++) {
		sp_probe_start(&p, &t, hash_32(n, 32));
		while (sp_probe_next(&p, &id, &vpn))
			;
		added += sp_probe_insert(&p, 1, n);
	}
	KUNIT_EXPECT_EQ(test, added, 3UL << t.bits >> 2);
	KUNIT_EXPECT_EQ(test, t.used, added);
	sp_cand_free(&t);
}

static void sp_test_stable(struct kunit *test)
{
	struct sp_stable_table t;
	struct sp_knode *nodes, *node;
	unsigned int i, n = 64, seen = 0;

	KUNIT_ASSERT_EQ(test, sp_stable_init(&t, 2), 0);
	nodes = kunit_kcalloc(test, n, sizeof(*nodes), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, nodes);
	for (i = 0; i < n; i++) {
		nodes[i].hash = i % 16;
		sp_stable_add(&t, &nodes[i]);
	}
	/* It grew, and every node is still in its bucket. */
	KUNIT_EXPECT_GT(test, t.bits, 2U);
	KUNIT_EXPECT_EQ(test, t.nr, (unsigned long)n);
	hlist_for_each_entry(node, sp_stable_bucket(&t, 5), link)
		if (node->hash == 5)
			seen++;
	KUNIT_EXPECT_EQ(test, seen, n / 16);
	for (i = 0; i < n; i++)
		sp_stable_del(&t, &nodes[i]);
	KUNIT_EXPECT_EQ(test, t.nr, 0UL);
	sp_stable_destroy(&t);
}

static void sp_test_state_word(struct kunit *test)
{
	struct sp_content c = { .hash = 0xdeadbeef, .sum = 0xfabcde };
	unsigned long st = sp_st_make(c, true, 9, 5);

	KUNIT_EXPECT_EQ(test, sp_st_hash(st), 0xdeadbeefU & SP_ST_HASH_MASK);
	KUNIT_EXPECT_TRUE(test, sp_st_hash_is(st, 0xdeadbeef));
	KUNIT_EXPECT_EQ(test, sp_st_sum(st), 0xfabcdeU & SP_ST_SUM_MASK);
	KUNIT_EXPECT_TRUE(test, sp_st_same(st, c));
	c.sum ^= 1;
	KUNIT_EXPECT_FALSE(test, sp_st_same(st, c));
	KUNIT_EXPECT_TRUE(test, sp_st_cand(st));
	KUNIT_EXPECT_EQ(test, sp_st_age(st), 9U);
	KUNIT_EXPECT_EQ(test, sp_st_skip(st), 5U);
	/* It fits an xarray value entry. */
	KUNIT_EXPECT_EQ(test, xa_to_value(xa_mk_value(st)), st);
	c.sum = ~0U;
	st = sp_st_make(c, false, 15, 15);
	KUNIT_EXPECT_FALSE(test, sp_st_cand(st));
	KUNIT_EXPECT_EQ(test, sp_st_age(st), 15U);
	KUNIT_EXPECT_EQ(test, sp_st_skip(st), 15U);
	KUNIT_EXPECT_EQ(test, xa_to_value(xa_mk_value(st)), st);
}

/* A write to any one word, even one no sample reads, is seen. */
static void sp_test_change_seen(struct kunit *test)
{
	struct page *page = alloc_page(GFP_KERNEL);
	unsigned long st;
	unsigned int i, missed = 0;
	u64 *w;

	KUNIT_ASSERT_NOT_NULL(test, page);
	w = kmap_local_page(page);
	for (i = 0; i < PAGE_SIZE / sizeof(u64); i++)
		w[i] = i * 0x0101010101010101ULL;
	st = sp_st_make(sp_read_page(page), false, 0, 0);
	for (i = 0; i < PAGE_SIZE / sizeof(u64); i++) {
		w[i] ^= BIT_ULL(i % 64);
		missed += sp_st_same(st, sp_read_page(page));
		w[i] ^= BIT_ULL(i % 64);
	}
	KUNIT_EXPECT_EQ(test, missed, 0U);
	KUNIT_EXPECT_TRUE(test, sp_st_same(st, sp_read_page(page)));
	kunmap_local(w);
	__free_page(page);
}

static struct kunit_case sp_index_cases[] = {
	KUNIT_CASE(sp_test_hash),
	KUNIT_CASE(sp_test_hash_whole_page),
	KUNIT_CASE(sp_test_samples),
	KUNIT_CASE(sp_test_cand_basic),
	KUNIT_CASE(sp_test_cand_collisions),
	KUNIT_CASE(sp_test_cand_forget),
	KUNIT_CASE(sp_test_cand_limits),
	KUNIT_CASE(sp_test_stable),
	KUNIT_CASE(sp_test_state_word),
	KUNIT_CASE(sp_test_change_seen),
	{}
};

static struct kunit_suite sp_index_suite = {
	.name = "ksm_index",
	.test_cases = sp_index_cases,
};

kunit_test_suite(sp_index_suite);
